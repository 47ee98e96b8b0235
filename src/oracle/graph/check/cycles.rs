//! The dependency graph (ww, wr, rw, so) as a CSR adjacency, Tarjan SCCs and
//! a shortest cycle per SCC and anomaly spec (BFS restricted to its edge kinds).

use super::*;

/// One edge of a found cycle.
pub(super) struct CycleEdge {
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) kind: u8,
}

/// BFS scratch reused across searches.
pub(super) struct Bfs {
    stamp: Vec<u32>,
    parent: Vec<u32>,
    pmask: Vec<u8>,
    gen: u32,
    queue: std::collections::VecDeque<u32>,
}

impl Checker<'_> {
    /// Edges ww, wr, rw, so as a CSR adjacency: (offsets, (to, kinds)).
    pub(super) fn build_graph(&mut self) -> (Vec<u32>, Vec<(u32, u8)>) {
        let n = self.txn_of_node.len();
        let mut edges = Edges::with_capacity(self.reads.len() * 2 + self.writes.len());
        self.ww_edges(&mut edges);
        // wr, rw, G1b.
        for node in 0..n as u32 {
            self.read_edges(node, &mut edges);
        }
        // so: consecutive committed transactions of a session.
        let mut last: FxMap<u64, u32> = FxMap::default();
        for node in 0..n as u32 {
            let s = self.h.txns[self.txn_of_node[node as usize] as usize].session;
            if let Some(p) = last.insert(s, node) {
                edges.push(p, node, SO);
            }
        }
        csr(n, edges)
    }

    /// ww edges: consecutive distinct writers on each chain.
    fn ww_edges(&self, edges: &mut Edges) {
        for row in 0..self.rows.len() as u32 {
            let clen = self.rows[row as usize].chain.len() as u32;
            let Some(mut prev) = self.writer_at(row, 0) else {
                continue;
            };
            let mut j = 1;
            while let Some(x) = self.writer_at(row, j) {
                if x != prev {
                    if prev != NONE && x != NONE {
                        edges.push(prev, x, WW);
                    }
                    prev = x;
                }
                j += 1;
                if j > clen + 1 {
                    break;
                }
            }
        }
    }

    /// wr and rw edges of the reads of `node`; a read of an intermediate
    /// version is recorded as G1b.
    fn read_edges(&mut self, node: u32, edges: &mut Edges) {
        let (lo, hi) = (
            self.read_off[node as usize] as usize,
            self.read_off[node as usize + 1] as usize,
        );
        for i in lo..hi {
            let ReadRec { row, len } = self.reads[i];
            let w = self.rows[row as usize].chain[len as usize - 1].writer;
            if w != NONE && w != node {
                edges.push(w, node, WR);
                if self.writer_at(row, len) == Some(w) {
                    let vop = self.rows[row as usize].chain[len as usize - 1].op;
                    if let Some(nx) = self.entry(row, len) {
                        let s = format!(
                            "{} read {} version {} written by {}'s {} (op {vop}), but {} wrote the row again (op {nx}): an intermediate version",
                            self.node_label(node),
                            self.row_name(row),
                            self.version(row, len),
                            self.node_label(w),
                            self.op_kind(vop, row),
                            self.node_label(w)
                        );
                        let txns = vec![self.node_label(node), self.node_label(w)];
                        self.simple(Anomaly::G1b, txns, s);
                    }
                }
            }
            if let Some(x) = self.next_writer_node(row, len, w) {
                if x != NONE && x != node {
                    edges.push(node, x, RW);
                }
            }
        }
    }

    /// Tarjan's SCCs (iterative), then per cyclic SCC a shortest cycle per
    /// anomaly spec. Returns the number of cyclic SCCs.
    pub(super) fn cycles(&mut self, off: &[u32], adj: &[(u32, u8)]) -> usize {
        let n = off.len() - 1;
        let (comp, sccs) = tarjan(off, adj);
        let mut bfs = Bfs {
            stamp: vec![0; n],
            parent: vec![NONE; n],
            pmask: vec![0; n],
            gen: 0,
            queue: Default::default(),
        };
        for members in &sccs {
            let max_seeds = if members.len() > 10_000 { 4 } else { MAX_SEEDS };
            for spec in &CYCLE_SPECS {
                let best = shortest_cycle(&mut bfs, off, adj, &comp, members, spec, max_seeds);
                if let Some(cyc) = best {
                    self.report_cycle(spec, &cyc);
                }
            }
        }
        sccs.len()
    }
}

/// The graph's edges as they are found: (from, to) and beside it the kind,
/// so that an edge takes 9 bytes, not a tuple's 12 (a history of 10M
/// transactions has 86M edges).
struct Edges {
    ends: Vec<(u32, u32)>,
    kinds: Vec<u8>,
}

impl Edges {
    fn with_capacity(n: usize) -> Edges {
        Edges {
            ends: huge_vec(n),
            kinds: huge_vec(n),
        }
    }

    fn push(&mut self, from: u32, to: u32, kind: u8) {
        self.ends.push((from, to));
        self.kinds.push(kind);
    }
}

/// The CSR adjacency of `n` nodes' `edges`, with the kinds of parallel edges
/// merged: (offsets, (to, kinds)), each node's targets sorted.
fn csr(n: usize, edges: Edges) -> (Vec<u32>, Vec<(u32, u8)>) {
    let mut off = vec![0u32; n + 1];
    for &(a, _) in &edges.ends {
        off[a as usize + 1] += 1;
    }
    for i in 0..n {
        off[i + 1] += off[i];
    }
    let mut pos = off.clone();
    let mut adj = huge_vec(edges.ends.len());
    adj.resize(edges.ends.len(), (0u32, 0u8));
    for (&(a, b), &k) in edges.ends.iter().zip(&edges.kinds) {
        adj[pos[a as usize] as usize] = (b, k);
        pos[a as usize] += 1;
    }
    drop(edges);
    let mut out_off = Vec::with_capacity(n + 1);
    out_off.push(0u32);
    let mut w = 0usize;
    for v in 0..n {
        let (lo, hi) = (off[v] as usize, off[v + 1] as usize);
        adj[lo..hi].sort_unstable_by_key(|e| e.0);
        let mut i = lo;
        while i < hi {
            let (to, mut mask) = adj[i];
            i += 1;
            while i < hi && adj[i].0 == to {
                mask |= adj[i].1;
                i += 1;
            }
            adj[w] = (to, mask);
            w += 1;
        }
        out_off.push(w as u32);
    }
    adj.truncate(w);
    adj.shrink_to_fit();
    (out_off, adj)
}

/// Tarjan's strongly connected components (iterative) of the CSR graph: the
/// component of each node, and the members of each component with a cycle
/// (more than one node).
fn tarjan(off: &[u32], adj: &[(u32, u8)]) -> (Vec<u32>, Vec<Vec<u32>>) {
    let n = off.len() - 1;
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on = vec![false; n];
    let mut comp = vec![NONE; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, u32)> = Vec::new();
    let mut counter = 0u32;
    let mut ncomp = 0u32;
    let mut sccs: Vec<Vec<u32>> = Vec::new();
    for s in 0..n as u32 {
        if index[s as usize] != NONE {
            continue;
        }
        index[s as usize] = counter;
        low[s as usize] = counter;
        counter += 1;
        stack.push(s);
        on[s as usize] = true;
        call.push((s, off[s as usize]));
        while let Some(top) = call.last_mut() {
            let v = top.0;
            if top.1 < off[v as usize + 1] {
                let w = adj[top.1 as usize].0;
                top.1 += 1;
                if index[w as usize] == NONE {
                    index[w as usize] = counter;
                    low[w as usize] = counter;
                    counter += 1;
                    stack.push(w);
                    on[w as usize] = true;
                    call.push((w, off[w as usize]));
                } else if on[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
            } else {
                call.pop();
                if let Some(&(p, _)) = call.last() {
                    low[p as usize] = low[p as usize].min(low[v as usize]);
                }
                if low[v as usize] == index[v as usize] {
                    let mut members = Vec::new();
                    while let Some(x) = stack.pop() {
                        on[x as usize] = false;
                        comp[x as usize] = ncomp;
                        members.push(x);
                        if x == v {
                            break;
                        }
                    }
                    if members.len() > 1 {
                        sccs.push(members);
                    }
                    ncomp += 1;
                }
            }
        }
    }
    (comp, sccs)
}

/// A shortest cycle of anomaly `spec` inside the component `members`: one
/// edge of its seed kind, then a shortest path back over its other kinds
/// (at most `max_seeds` seed edges tried; a two-edge cycle ends the search).
fn shortest_cycle(
    bfs: &mut Bfs,
    off: &[u32],
    adj: &[(u32, u8)],
    comp: &[u32],
    members: &[u32],
    spec: &CycleSpec,
    max_seeds: usize,
) -> Option<Vec<CycleEdge>> {
    let c = comp[members[0] as usize];
    let mut best: Option<Vec<CycleEdge>> = None;
    let mut tried = 0;
    for &a in members {
        for &(b, mask) in &adj[off[a as usize] as usize..off[a as usize + 1] as usize] {
            if mask & spec.seed == 0 || comp[b as usize] != c {
                continue;
            }
            tried += 1;
            if tried > max_seeds {
                return best;
            }
            let limit = best.as_ref().map(|b| b.len()).unwrap_or(usize::MAX);
            if let Some(path) = bfs_path(bfs, off, adj, comp, b, a, spec.rest, limit) {
                let mut cyc = vec![CycleEdge {
                    from: a,
                    to: b,
                    kind: spec.seed,
                }];
                cyc.extend(path);
                let rw = cyc.iter().filter(|e| e.kind == RW).count();
                if rw >= spec.min_rw
                    && (spec.name != Anomaly::GSingle || rw == 1)
                    && best.as_ref().is_none_or(|b| cyc.len() < b.len())
                {
                    let two = cyc.len() == 2;
                    best = Some(cyc);
                    if two {
                        return best;
                    }
                }
            }
        }
    }
    best
}

/// Shortest path from `from` to `to` over edges with a kind in `mask` inside
/// component `comp[from]`, no longer than `limit - 1` edges.
#[allow(clippy::too_many_arguments)]
fn bfs_path(
    bfs: &mut Bfs,
    off: &[u32],
    adj: &[(u32, u8)],
    comp: &[u32],
    from: u32,
    to: u32,
    mask: u8,
    limit: usize,
) -> Option<Vec<CycleEdge>> {
    bfs.gen += 1;
    let g = bfs.gen;
    let c = comp[from as usize];
    bfs.queue.clear();
    bfs.queue.push_back(from);
    bfs.stamp[from as usize] = g;
    bfs.parent[from as usize] = NONE;
    let mut depth_of_found = None;
    // Depth tracking via level counting.
    let mut level_end = 1usize;
    let mut seen_in_level = 0usize;
    let mut depth = 0usize;
    let mut next_level = 0usize;
    while let Some(v) = bfs.queue.pop_front() {
        if v == to {
            depth_of_found = Some(depth);
            break;
        }
        if depth + 2 >= limit {
            // A cycle through this path would not be shorter than the best.
            break;
        }
        for &(w, m) in &adj[off[v as usize] as usize..off[v as usize + 1] as usize] {
            let m = m & mask;
            if m == 0 || comp[w as usize] != c || bfs.stamp[w as usize] == g {
                continue;
            }
            bfs.stamp[w as usize] = g;
            bfs.parent[w as usize] = v;
            bfs.pmask[w as usize] = m;
            bfs.queue.push_back(w);
            next_level += 1;
        }
        seen_in_level += 1;
        if seen_in_level == level_end {
            depth += 1;
            level_end = next_level;
            next_level = 0;
            seen_in_level = 0;
        }
    }
    depth_of_found?;
    let mut path = Vec::new();
    let mut v = to;
    while v != from {
        let p = bfs.parent[v as usize];
        let m = bfs.pmask[v as usize];
        let kind = [WW, WR, SO, RW]
            .into_iter()
            .find(|k| m & k != 0)
            .unwrap_or(RW);
        path.push(CycleEdge {
            from: p,
            to: v,
            kind,
        });
        v = p;
    }
    path.reverse();
    Some(path)
}
