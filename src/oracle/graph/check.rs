//! The checker: version chains from write lists, non-cycle anomalies, the
//! dependency graph (ww, wr, rw, so), Tarjan SCCs and a shortest cycle per SCC
//! and anomaly spec (BFS restricted to the spec's edge kinds).
//!
//! Scale: tables and rows are interned to integers, each write list is parsed
//! once into a reused buffer and compared against the row's known chain as
//! integers; only entries beyond the known chain are validated. Edges live in a
//! CSR adjacency; explanations are derived lazily for the few edges of a cycle.

use super::anomaly::*;
use super::history::{CheckHistory, Op, TxnStatus};
use serde_json::json;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Findings of one kind beyond this many are counted, not described.
const MAX_PER_KIND: usize = 20;
/// Seed edges tried per SCC and spec.
const MAX_SEEDS: usize = 256;
/// Largest cycle drawn in DOT.
const MAX_DOT_EDGES: usize = 24;

#[derive(Default, Clone, Copy)]
pub struct Fx(u64);
impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(b as u64);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i)
    }
    fn write_i64(&mut self, i: i64) {
        self.add(i as u64)
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64)
    }
}
impl Fx {
    #[inline]
    fn add(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}
type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

const NONE: u32 = u32::MAX;
const K_INSERT: u8 = 1;
const K_UPDATE: u8 = 2;
const K_DELETE: u8 = 4;
/// Set while every write of (op, row) was undone or aborted.
const K_ABORTED: u8 = 0x80;

/// One anomaly found, with its explanation.
#[derive(Clone, Debug)]
pub struct Anomaly {
    /// Specific name (`lost-update`) — see [`base_of`] for its class.
    pub name: &'static str,
    /// Transactions involved (labels).
    pub txns: Vec<String>,
    /// One sentence per fact (per cycle edge for cycles).
    pub explanation: Vec<String>,
    pub dot: Option<String>,
    pub edges: serde_json::Value,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Stats {
    pub txns: usize,
    pub committed: usize,
    pub rows: usize,
    pub reads: usize,
    pub writes: usize,
    pub edges: usize,
    pub cyclic_sccs: usize,
    /// Statements that read rows the history does not show.
    pub unobserved_reads: usize,
    /// Anomalies found beyond the per-kind cap.
    pub suppressed: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub anomalies: Vec<Anomaly>,
    pub stats: Stats,
}

#[derive(Clone, Copy)]
struct OpInfo {
    txn: u32,
    aborted: bool,
}

/// op id -> info; dense when ids are dense.
struct OpMap {
    dense: Vec<OpInfo>,
    sparse: FxMap<u32, OpInfo>,
}

impl OpMap {
    fn get(&self, op: u32) -> Option<OpInfo> {
        if !self.dense.is_empty() {
            self.dense
                .get(op as usize)
                .copied()
                .filter(|o| o.txn != NONE)
        } else {
            self.sparse.get(&op).copied()
        }
    }
}

#[derive(Clone, Copy)]
struct ReadRec {
    row: u32,
    /// Version = chain prefix of this length.
    len: u32,
}

struct Checker<'a> {
    h: &'a CheckHistory,
    /// txn index -> node (NONE when not committed).
    node_of: Vec<u32>,
    /// node -> txn index.
    txn_of_node: Vec<u32>,
    tables: Vec<&'a str>,
    table_ix: FxMap<&'a str, u32>,
    row_ix: FxMap<(u32, i64), u32>,
    row_key: Vec<(u32, i64)>,
    ops: OpMap,
    /// (op << 32 | row) -> write kind.
    wrote: FxMap<u64, u8>,
    chains: Vec<Vec<u32>>,
    /// Deleting op per row (0: not deleted).
    deleted: Vec<u32>,
    reads: Vec<ReadRec>,
    read_off: Vec<u32>,
    /// (row, op) of each node's committed writes.
    writes: Vec<(u32, u32)>,
    write_off: Vec<u32>,
    scratch: Vec<u32>,
    out: Vec<Anomaly>,
    counts: FxMap<&'static str, usize>,
    suppressed: usize,
    incompatible_rows: Vec<bool>,
    /// (row, version length, op) of committed DELETEs.
    pending_deletes: Vec<(u32, u32, u32)>,
}

/// Where an observed version came from, for explanations.
#[derive(Clone, Copy)]
enum Src {
    Read(u32),
    Before(u32),
    After(u32),
    Final,
}

pub fn analyse(h: &CheckHistory) -> Analysis {
    let mut c = Checker::new(h);
    c.register_ops();
    c.observe_all();
    c.check_deletes();
    let (off, adj) = c.build_graph();
    let mut stats = Stats {
        txns: h.txns.len(),
        committed: c.txn_of_node.len(),
        rows: c.row_key.len(),
        reads: c.reads.len(),
        writes: c.writes.len(),
        edges: adj.len(),
        unobserved_reads: h
            .txns
            .iter()
            .flat_map(|t| &t.ops)
            .filter(|o| matches!(o, Op::UnobservedRead { .. }))
            .count(),
        ..Stats::default()
    };
    stats.cyclic_sccs = c.cycles(&off, &adj);
    stats.suppressed = c.suppressed;
    Analysis {
        anomalies: c.out,
        stats,
    }
}

fn parse_wl(wl: &str, out: &mut Vec<u32>) -> bool {
    out.clear();
    for part in wl.split(',') {
        match part.trim().parse::<u32>() {
            Ok(v) => out.push(v),
            Err(_) => return false,
        }
    }
    !out.is_empty()
}

impl<'a> Checker<'a> {
    fn new(h: &'a CheckHistory) -> Self {
        let mut node_of = Vec::with_capacity(h.txns.len());
        let mut txn_of_node = Vec::new();
        for (i, t) in h.txns.iter().enumerate() {
            if t.status == TxnStatus::Committed {
                node_of.push(txn_of_node.len() as u32);
                txn_of_node.push(i as u32);
            } else {
                node_of.push(NONE);
            }
        }
        Checker {
            h,
            node_of,
            txn_of_node,
            tables: Vec::new(),
            table_ix: FxMap::default(),
            row_ix: FxMap::default(),
            row_key: Vec::new(),
            ops: OpMap {
                dense: Vec::new(),
                sparse: FxMap::default(),
            },
            wrote: FxMap::default(),
            chains: Vec::new(),
            deleted: Vec::new(),
            reads: Vec::new(),
            read_off: vec![0],
            writes: Vec::new(),
            write_off: vec![0],
            scratch: Vec::new(),
            out: Vec::new(),
            counts: FxMap::default(),
            suppressed: 0,
            incompatible_rows: Vec::new(),
            pending_deletes: Vec::new(),
        }
    }

    fn label(&self, txn: u32) -> String {
        self.h.txns[txn as usize].label()
    }
    fn node_label(&self, node: u32) -> String {
        self.label(self.txn_of_node[node as usize])
    }

    fn row(&mut self, table: &'a str, rid: i64) -> u32 {
        let t = match self.table_ix.get(table) {
            Some(&t) => t,
            None => {
                let t = self.tables.len() as u32;
                self.tables.push(table);
                self.table_ix.insert(table, t);
                t
            }
        };
        let next = self.row_key.len() as u32;
        let r = *self.row_ix.entry((t, rid)).or_insert(next);
        if r == next {
            self.row_key.push((t, rid));
            self.chains.push(Vec::new());
            self.deleted.push(0);
            self.incompatible_rows.push(false);
        }
        r
    }

    fn row_name(&self, row: u32) -> String {
        let (t, rid) = self.row_key[row as usize];
        format!("{} row {rid}", self.tables[t as usize])
    }

    fn version(&self, row: u32, len: u32) -> String {
        let c = &self.chains[row as usize][..len as usize];
        let parts: Vec<String> = if c.len() > 10 {
            let mut v = vec!["0".to_string(), "…".to_string()];
            v.extend(c[c.len() - 6..].iter().map(|x| x.to_string()));
            v
        } else {
            c.iter().map(|x| x.to_string()).collect()
        };
        parts.join(",")
    }

    fn push(&mut self, a: Anomaly) {
        let n = self.counts.entry(a.name).or_insert(0);
        *n += 1;
        if *n > MAX_PER_KIND {
            self.suppressed += 1;
        } else {
            self.out.push(a);
        }
    }

    fn simple(&mut self, name: &'static str, txns: Vec<String>, sentence: String) {
        self.push(Anomaly {
            name,
            txns,
            explanation: vec![sentence],
            dot: None,
            edges: json!([]),
        });
    }

    /// Pass 1: every write op (committed or not) with its transaction.
    fn register_ops(&mut self) {
        let h = self.h;
        let mut max_op = 0u32;
        let mut n = 0usize;
        for t in &h.txns {
            for op in &t.ops {
                if let Op::Write { op, .. } = op {
                    max_op = max_op.max(*op);
                    n += 1;
                }
            }
        }
        let dense = (max_op as usize) <= 4 * n + 1024;
        if dense {
            self.ops.dense = vec![
                OpInfo {
                    txn: NONE,
                    aborted: false
                };
                max_op as usize + 1
            ];
        }
        self.wrote.reserve(n);
        for (ti, t) in h.txns.iter().enumerate() {
            for op in &t.ops {
                let Op::Write {
                    op,
                    table,
                    rid,
                    before,
                    after,
                    undone,
                } = op
                else {
                    continue;
                };
                let aborted = *undone || t.status == TxnStatus::Aborted;
                let info = OpInfo {
                    txn: ti as u32,
                    aborted,
                };
                if dense {
                    let slot = &mut self.ops.dense[*op as usize];
                    // An op with some undone rows stays aborted only if all are.
                    if slot.txn == NONE || slot.aborted {
                        *slot = info;
                    }
                } else {
                    self.ops
                        .sparse
                        .entry(*op)
                        .and_modify(|s| s.aborted &= aborted)
                        .or_insert(info);
                }
                let row = self.row(table, *rid);
                let kind = match (before, after) {
                    (None, _) => K_INSERT,
                    (_, None) => K_DELETE,
                    _ => K_UPDATE,
                };
                // One statement may write a row several times (a multi-row
                // upsert updating a row it inserted): kinds accumulate, and a
                // live write of the row wins over an undone one.
                let key = ((*op as u64) << 32) | row as u64;
                let e = self
                    .wrote
                    .entry(key)
                    .or_insert(if aborted { K_ABORTED } else { 0 });
                *e |= kind;
                if !aborted {
                    *e &= !K_ABORTED;
                }
            }
        }
    }

    fn writer_node(&self, op: u32) -> u32 {
        if op == 0 {
            return NONE;
        }
        match self.ops.get(op) {
            Some(i) => self.node_of[i.txn as usize],
            None => NONE,
        }
    }

    fn op_kind(&self, op: u32, row: u32) -> &'static str {
        match self
            .wrote
            .get(&(((op as u64) << 32) | row as u64))
            .map(|k| k & !K_ABORTED)
        {
            Some(K_INSERT) => "INSERT",
            Some(K_DELETE) => "DELETE",
            Some(K_UPDATE) => "UPDATE",
            Some(k) if k & K_INSERT != 0 => "upsert",
            _ => "write",
        }
    }

    /// Places `wl` of `row` on the row's chain: Some(version length), or None
    /// (anomaly recorded) when it names an unknown/aborted write or diverges.
    fn observe(&mut self, txn: u32, row: u32, wl: &str, src: Src) -> Option<u32> {
        let mut buf = std::mem::take(&mut self.scratch);
        let r = self.observe_parsed(txn, row, wl, src, &mut buf);
        self.scratch = buf;
        r
    }

    fn observe_parsed(
        &mut self,
        txn: u32,
        row: u32,
        wl: &str,
        src: Src,
        buf: &mut Vec<u32>,
    ) -> Option<u32> {
        let who = match src {
            Src::Final => "the final state".to_string(),
            Src::Read(_) | Src::Before(_) | Src::After(_) => self.label(txn),
        };
        let how = match src {
            Src::Read(0) => "read".to_string(),
            Src::Read(op) => format!("read (op {op})"),
            Src::Before(op) => format!("overwrote (op {op})"),
            Src::After(op) => format!("wrote (op {op})"),
            Src::Final => "holds".to_string(),
        };
        if !parse_wl(wl, buf) {
            let s = format!(
                "{who} {how} {} with write list '{wl}', which is not a list of operation ids",
                self.row_name(row)
            );
            self.simple(NEVER_EXISTED, vec![who], s);
            return None;
        }
        let chain = &self.chains[row as usize];
        let common = chain
            .iter()
            .zip(buf.iter())
            .take_while(|(a, b)| a == b)
            .count();
        if common == buf.len() {
            return Some(buf.len() as u32);
        }
        // Validate the entries not yet on the chain.
        for (pos, &op) in buf.iter().enumerate().skip(common) {
            let valid_kind = if op == 0 {
                if pos == 0 {
                    continue;
                }
                None
            } else {
                self.wrote.get(&(((op as u64) << 32) | row as u64)).copied()
            };
            let Some(k) = valid_kind else {
                let why = if op == 0 {
                    "the initial version 0 in the middle".to_string()
                } else {
                    match self.ops.get(op) {
                        None => format!("op {op}, which is not a write of this history"),
                        Some(i) => format!(
                            "op {op} of {}, which did not write this row",
                            self.label(i.txn)
                        ),
                    }
                };
                let s = format!(
                    "{who} {how} {} version {wl}, which never existed: it names {why}",
                    self.row_name(row)
                );
                self.simple(NEVER_EXISTED, vec![who], s);
                return None;
            };
            if k & K_ABORTED != 0 {
                let w = self.ops.get(op).map(|i| i.txn).unwrap_or(0);
                if w == txn && !matches!(src, Src::Final) {
                    // Its own write, later undone by ROLLBACK TO SAVEPOINT: a
                    // legitimate read, but not a version of the chain.
                    return None;
                }
                let wlabel = self.label(w);
                let aborted_why = if self.h.txns[w as usize].status == TxnStatus::Aborted {
                    format!("aborted transaction {wlabel}")
                } else {
                    format!("{wlabel}, whose write was undone")
                };
                if let Src::Final = src {
                    let s = format!(
                        "the final state holds {} version {wl}, which contains op {op} of {aborted_why}",
                        self.row_name(row)
                    );
                    self.simple(ABORTED_SURVIVES, vec![wlabel], s);
                } else {
                    let s = format!(
                        "{who} {how} {} version {wl}, which contains op {op} of {aborted_why}",
                        self.row_name(row)
                    );
                    self.simple(G1A, vec![who, wlabel], s);
                }
                return None;
            }
            if pos == 0 && k & K_INSERT == 0 {
                let s = format!(
                    "{who} {how} {} version {wl}, which never existed: op {op} did not insert the row",
                    self.row_name(row)
                );
                self.simple(NEVER_EXISTED, vec![who], s);
                return None;
            }
        }
        let chain = &self.chains[row as usize];
        if common < chain.len() || (self.deleted[row as usize] != 0) {
            if !self.incompatible_rows[row as usize] {
                self.incompatible_rows[row as usize] = true;
                let known = chain
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                let s = format!(
                    "{who} {how} {} version {wl}, incompatible with version {known} seen elsewhere: neither extends the other, so a write was lost or overwritten",
                    self.row_name(row)
                );
                let mut txns = vec![who];
                for &op in buf[common..].iter().chain(chain[common..].iter()) {
                    if let Some(i) = self.ops.get(op) {
                        txns.push(self.label(i.txn));
                    }
                }
                txns.dedup();
                self.simple(INCOMPATIBLE_ORDER, txns, s);
            }
            return None;
        }
        self.chains[row as usize].extend_from_slice(&buf[common..]);
        Some(buf.len() as u32)
    }

    /// Pass 2: observe every version seen by committed transactions and the
    /// final state; record reads and writes per node; own-write checks.
    fn observe_all(&mut self) {
        let h = self.h;
        let mut own: Vec<(u32, u32)> = Vec::new(); // (row, op; 0 = deleted marker via op|DEL)
        let mut deletes: Vec<(u32, u32, u32)> = Vec::new();
        for (ti, t) in h.txns.iter().enumerate() {
            if t.status != TxnStatus::Committed {
                continue;
            }
            let ti = ti as u32;
            own.clear();
            let check_own = !t.savepoint_rollback;
            for op in &t.ops {
                match op {
                    Op::Read { table, rid, wl, op } => {
                        let row = self.row(table, *rid);
                        let len = self.observe(ti, row, wl, Src::Read(op.unwrap_or(0)));
                        if check_own {
                            self.own_check(ti, &own, row, wl, *op);
                        }
                        if let Some(len) = len {
                            self.reads.push(ReadRec { row, len });
                        }
                    }
                    Op::Write {
                        op,
                        table,
                        rid,
                        before,
                        after,
                        undone,
                    } => {
                        if *undone {
                            continue;
                        }
                        let row = self.row(table, *rid);
                        if let Some(b) = before {
                            if check_own {
                                self.own_check(ti, &own, row, b, Some(*op));
                            }
                            let len = self.observe(ti, row, b, Src::Before(*op));
                            if after.is_none() {
                                if let Some(len) = len {
                                    deletes.push((row, len, *op));
                                }
                            }
                        }
                        if let Some(a) = after {
                            self.observe(ti, row, a, Src::After(*op));
                        }
                        self.writes.push((row, *op));
                        match own.iter_mut().find(|(r, _)| *r == row) {
                            Some(e) => e.1 = *op | if after.is_none() { 1 << 31 } else { 0 },
                            None => {
                                own.push((row, *op | if after.is_none() { 1 << 31 } else { 0 }))
                            }
                        }
                    }
                    Op::UnobservedRead { .. } => {}
                }
            }
            self.read_off.push(self.reads.len() as u32);
            self.write_off.push(self.writes.len() as u32);
        }
        let mut final_versions = Vec::new();
        if let Some(fs) = &h.final_state {
            for r in fs {
                let row = self.row(&r.table, r.rid);
                if let Some(len) = self.observe(0, row, &r.wl, Src::Final) {
                    final_versions.push((row, len));
                }
            }
        }
        // The final state must hold the last committed version of each row.
        for (row, len) in final_versions {
            let clen = self.chains[row as usize].len() as u32;
            if len < clen && !self.incompatible_rows[row as usize] {
                self.incompatible_rows[row as usize] = true;
                let lost: Vec<String> = self.chains[row as usize][len as usize..]
                    .iter()
                    .map(|op| {
                        let t = self
                            .ops
                            .get(*op)
                            .map(|i| self.label(i.txn))
                            .unwrap_or_default();
                        format!("op {op} of {t}")
                    })
                    .collect();
                let s = format!(
                    "the final state holds {} version {}, older than committed version {}: {} lost",
                    self.row_name(row),
                    self.version(row, len),
                    self.version(row, clen),
                    lost.join(", ")
                );
                let txns = self.chains[row as usize][len as usize..]
                    .iter()
                    .filter_map(|op| self.ops.get(*op).map(|i| self.label(i.txn)))
                    .collect();
                self.simple(INCOMPATIBLE_ORDER, txns, s);
            }
        }
        self.pending_deletes = deletes;
    }

    fn own_check(&mut self, ti: u32, own: &[(u32, u32)], row: u32, wl: &str, op: Option<u32>) {
        let Some(&(_, w)) = own.iter().find(|(r, _)| *r == row) else {
            return;
        };
        let deleted = w & (1 << 31) != 0;
        let wop = w & !(1 << 31);
        let tip = wl
            .rsplit(',')
            .next()
            .and_then(|x| x.trim().parse::<u32>().ok());
        let at = op.map(|o| format!(" (op {o})")).unwrap_or_default();
        let s = if deleted {
            format!(
                "{} deleted {} (op {wop}) but later{at} saw it again at version {wl}",
                self.label(ti),
                self.row_name(row)
            )
        } else if tip != Some(wop) && (op.is_none() || tip != op) {
            format!(
                "{} wrote {} (op {wop}) but later{at} saw version {wl}, which does not end with its own write",
                self.label(ti),
                self.row_name(row)
            )
        } else {
            return;
        };
        let l = self.label(ti);
        self.simple(OWN_WRITE, vec![l], s);
    }
}

/// One edge of a found cycle.
struct CycleEdge {
    from: u32,
    to: u32,
    kind: u8,
}

/// BFS scratch reused across searches.
struct Bfs {
    stamp: Vec<u32>,
    parent: Vec<u32>,
    pmask: Vec<u8>,
    gen: u32,
    queue: std::collections::VecDeque<u32>,
}

impl Checker<'_> {
    fn entry(&self, row: u32, j: u32) -> Option<u32> {
        let c = &self.chains[row as usize];
        if (j as usize) < c.len() {
            Some(c[j as usize])
        } else if j as usize == c.len() && self.deleted[row as usize] != 0 {
            Some(self.deleted[row as usize])
        } else {
            None
        }
    }

    /// The node that wrote the first version after version `len` (skipping
    /// further writes by the version's own writer `w`).
    fn next_writer(&self, row: u32, len: u32, w: u32) -> Option<(u32, u32)> {
        let mut j = len;
        while let Some(op) = self.entry(row, j) {
            let x = self.writer_node(op);
            if x == w && w != NONE {
                j += 1;
                continue;
            }
            return Some((x, op));
        }
        None
    }

    fn check_deletes(&mut self) {
        let deletes = std::mem::take(&mut self.pending_deletes);
        for (row, len, op) in deletes {
            let clen = self.chains[row as usize].len() as u32;
            let prev = self.deleted[row as usize];
            if len == clen && prev == 0 {
                self.deleted[row as usize] = op;
                continue;
            }
            if self.incompatible_rows[row as usize] {
                continue;
            }
            self.incompatible_rows[row as usize] = true;
            let v = self.version(row, len);
            let who = self
                .ops
                .get(op)
                .map(|i| self.label(i.txn))
                .unwrap_or_default();
            let s = if prev != 0 {
                format!(
                    "{who}'s DELETE (op {op}) removed {} version {v}, which op {prev} had already deleted",
                    self.row_name(row)
                )
            } else {
                format!(
                    "{who}'s DELETE (op {op}) removed {} version {v}, but later versions of the row exist (up to {})",
                    self.row_name(row),
                    self.version(row, clen)
                )
            };
            self.simple(INCOMPATIBLE_ORDER, vec![who], s);
        }
        // Rows deleted at the end of their chain must not be in the final state.
        if let Some(fs) = &self.h.final_state {
            for r in fs {
                let Some(&t) = self.table_ix.get(r.table.as_str()) else {
                    continue;
                };
                let Some(&row) = self.row_ix.get(&(t, r.rid)) else {
                    continue;
                };
                let d = self.deleted[row as usize];
                if d != 0 && !self.incompatible_rows[row as usize] {
                    self.incompatible_rows[row as usize] = true;
                    let who = self
                        .ops
                        .get(d)
                        .map(|i| self.label(i.txn))
                        .unwrap_or_default();
                    let s = format!(
                        "{who}'s DELETE (op {d}) removed {}, yet the final state holds it at version {}",
                        self.row_name(row),
                        r.wl
                    );
                    self.simple(INCOMPATIBLE_ORDER, vec![who], s);
                }
            }
        }
    }

    /// Edges ww, wr, rw, so as a CSR adjacency: (offsets, (to, kinds)).
    fn build_graph(&mut self) -> (Vec<u32>, Vec<(u32, u8)>) {
        let n = self.txn_of_node.len();
        let mut edges: Vec<(u32, u32, u8)> =
            Vec::with_capacity(self.reads.len() * 2 + self.writes.len());
        // ww: consecutive distinct writers on each chain.
        for row in 0..self.chains.len() as u32 {
            let clen = self.chains[row as usize].len() as u32;
            let Some(first) = self.entry(row, 0) else {
                continue;
            };
            let mut prev = self.writer_node(first);
            let mut j = 1;
            while let Some(op) = self.entry(row, j) {
                let x = self.writer_node(op);
                if x != prev {
                    if prev != NONE && x != NONE {
                        edges.push((prev, x, WW));
                    }
                    prev = x;
                }
                j += 1;
                if j > clen + 1 {
                    break;
                }
            }
        }
        // wr, rw, G1b.
        for node in 0..n as u32 {
            let (lo, hi) = (
                self.read_off[node as usize] as usize,
                self.read_off[node as usize + 1] as usize,
            );
            for i in lo..hi {
                let ReadRec { row, len } = self.reads[i];
                let vop = self.chains[row as usize][len as usize - 1];
                let w = self.writer_node(vop);
                if w != NONE && w != node {
                    edges.push((w, node, WR));
                    if let Some(nx) = self.entry(row, len) {
                        if self.writer_node(nx) == w {
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
                            self.simple(G1B, txns, s);
                        }
                    }
                }
                if let Some((x, _)) = self.next_writer(row, len, w) {
                    if x != NONE && x != node {
                        edges.push((node, x, RW));
                    }
                }
            }
        }
        // so: consecutive committed transactions of a session.
        let mut last: FxMap<u64, u32> = FxMap::default();
        for node in 0..n as u32 {
            let s = self.h.txns[self.txn_of_node[node as usize] as usize].session;
            if let Some(p) = last.insert(s, node) {
                edges.push((p, node, SO));
            }
        }
        // CSR with merged kinds.
        let mut off = vec![0u32; n + 1];
        for &(a, _, _) in &edges {
            off[a as usize + 1] += 1;
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let mut pos = off.clone();
        let mut adj = vec![(0u32, 0u8); edges.len()];
        for &(a, b, k) in &edges {
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

    /// Tarjan's SCCs (iterative), then per cyclic SCC a shortest cycle per
    /// anomaly spec. Returns the number of cyclic SCCs.
    fn cycles(&mut self, off: &[u32], adj: &[(u32, u8)]) -> usize {
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
        drop((index, low, on));
        let mut bfs = Bfs {
            stamp: vec![0; n],
            parent: vec![NONE; n],
            pmask: vec![0; n],
            gen: 0,
            queue: Default::default(),
        };
        for members in &sccs {
            let c = comp[members[0] as usize];
            let max_seeds = if members.len() > 10_000 { 4 } else { MAX_SEEDS };
            for spec in &CYCLE_SPECS {
                let mut best: Option<Vec<CycleEdge>> = None;
                let mut tried = 0;
                'seeds: for &a in members {
                    for &(b, mask) in &adj[off[a as usize] as usize..off[a as usize + 1] as usize] {
                        if mask & spec.seed == 0 || comp[b as usize] != c {
                            continue;
                        }
                        tried += 1;
                        if tried > max_seeds {
                            break 'seeds;
                        }
                        let limit = best.as_ref().map(|b| b.len()).unwrap_or(usize::MAX);
                        if let Some(path) =
                            bfs_path(&mut bfs, off, adj, &comp, b, a, spec.rest, limit)
                        {
                            let mut cyc = vec![CycleEdge {
                                from: a,
                                to: b,
                                kind: spec.seed,
                            }];
                            cyc.extend(path);
                            let rw = cyc.iter().filter(|e| e.kind == RW).count();
                            if rw >= spec.min_rw
                                && (spec.name != G_SINGLE || rw == 1)
                                && best.as_ref().is_none_or(|b| cyc.len() < b.len())
                            {
                                let two = cyc.len() == 2;
                                best = Some(cyc);
                                if two {
                                    break 'seeds;
                                }
                            }
                        }
                    }
                }
                if let Some(cyc) = best {
                    self.report_cycle(spec, &cyc);
                }
            }
        }
        sccs.len()
    }

    /// Sentence, row and version for one cycle edge.
    fn explain(&self, e: &CycleEdge) -> (String, Option<u32>, Option<String>) {
        let (a, b) = (e.from, e.to);
        let (la, lb) = (self.node_label(a), self.node_label(b));
        match e.kind {
            WW => {
                let (lo, hi) = (self.write_off[b as usize], self.write_off[b as usize + 1]);
                for &(row, op) in &self.writes[lo as usize..hi as usize] {
                    let c = &self.chains[row as usize];
                    let Some(j) = c
                        .iter()
                        .position(|&x| x == op)
                        .or_else(|| (self.deleted[row as usize] == op).then_some(c.len()))
                    else {
                        continue;
                    };
                    let mut k = j as u32;
                    while k > 0 && self.writer_node(self.entry(row, k - 1).unwrap_or(0)) == b {
                        k -= 1;
                    }
                    if k == 0 {
                        continue;
                    }
                    let prev = self.entry(row, k - 1).unwrap_or(0);
                    if self.writer_node(prev) != a {
                        continue;
                    }
                    let mine = self.entry(row, k).unwrap_or(op);
                    let v = self.version(row, k);
                    return (
                        format!(
                            "{lb}'s {} (op {mine}) overwrote {} version {v} written by {la}'s {} (op {prev}) (ww)",
                            self.op_kind(mine, row),
                            self.row_name(row),
                            self.op_kind(prev, row)
                        ),
                        Some(row),
                        Some(v),
                    );
                }
            }
            WR => {
                let (lo, hi) = (self.read_off[b as usize], self.read_off[b as usize + 1]);
                for r in &self.reads[lo as usize..hi as usize] {
                    let vop = self.chains[r.row as usize][r.len as usize - 1];
                    if self.writer_node(vop) == a {
                        let v = self.version(r.row, r.len);
                        return (
                            format!(
                                "{lb} read {} version {v} written by {la}'s {} (op {vop}) (wr)",
                                self.row_name(r.row),
                                self.op_kind(vop, r.row)
                            ),
                            Some(r.row),
                            Some(v),
                        );
                    }
                }
            }
            RW => {
                let (lo, hi) = (self.read_off[a as usize], self.read_off[a as usize + 1]);
                for r in &self.reads[lo as usize..hi as usize] {
                    let vop = self.chains[r.row as usize][r.len as usize - 1];
                    let w = self.writer_node(vop);
                    if let Some((x, op)) = self.next_writer(r.row, r.len, w) {
                        if x == b {
                            let v = self.version(r.row, r.len);
                            return (
                                format!(
                                    "{lb}'s {} (op {op}) overwrote {} version {v} that {la} read (rw)",
                                    self.op_kind(op, r.row),
                                    self.row_name(r.row)
                                ),
                                Some(r.row),
                                Some(v),
                            );
                        }
                    }
                }
            }
            _ => {
                let s = self.h.txns[self.txn_of_node[a as usize] as usize].session;
                return (
                    format!("{la} ran before {lb} in session {s} (so)"),
                    None,
                    None,
                );
            }
        }
        (format!("{la} -> {lb} ({})", kind_name(e.kind)), None, None)
    }

    fn report_cycle(&mut self, spec: &CycleSpec, cyc: &[CycleEdge]) {
        let mut sentences = Vec::new();
        let mut edges = Vec::new();
        let mut rows = Vec::new();
        let mut dot = String::from("digraph cycle {\n  rankdir=LR;\n");
        for (i, e) in cyc.iter().enumerate() {
            let (s, row, v) = self.explain(e);
            if let Some(r) = row {
                if !rows.contains(&r) {
                    rows.push(r);
                }
            }
            let (la, lb) = (self.node_label(e.from), self.node_label(e.to));
            let (table, rid) = match row {
                Some(r) => {
                    let (t, rid) = self.row_key[r as usize];
                    (Some(self.tables[t as usize]), Some(rid))
                }
                None => (None, None),
            };
            edges.push(json!({
                "from": la, "to": lb, "kind": kind_name(e.kind),
                "table": table, "rid": rid, "version": v,
            }));
            if i < MAX_DOT_EDGES {
                let what = match row {
                    Some(r) => format!("{} {}", kind_name(e.kind), self.row_name(r)),
                    None => kind_name(e.kind).to_string(),
                };
                dot.push_str(&format!("  \"{la}\" -> \"{lb}\" [label=\"{what}\"];\n"));
            }
            sentences.push(s);
        }
        if cyc.len() > MAX_DOT_EDGES {
            dot.push_str(&format!("  // {} more edges\n", cyc.len() - MAX_DOT_EDGES));
        }
        dot.push_str("}\n");
        let kinds: Vec<u8> = cyc.iter().map(|e| e.kind).collect();
        let name = match spec.name {
            G_SINGLE if cyc.len() == 2 && kinds.contains(&WW) && rows.len() == 1 => LOST_UPDATE,
            G_SINGLE if cyc.len() == 2 && rows.len() == 2 => READ_SKEW,
            G2_ITEM if cyc.len() == 2 && rows.len() == 2 => WRITE_SKEW,
            n => n,
        };
        let txns = cyc.iter().map(|e| self.node_label(e.from)).collect();
        self.push(Anomaly {
            name,
            txns,
            explanation: sentences,
            dot: Some(dot),
            edges: serde_json::Value::Array(edges),
        });
    }
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
