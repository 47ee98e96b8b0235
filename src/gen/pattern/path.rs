//! Constraint extraction and the dependency path a pattern prescribes: the
//! statement-type constraint per transaction, the schedule order, and the
//! ww/wr/rw edges between transactions on data items (Adya), from which the
//! anomaly the pattern represents and the levels that forbid it follow.

use super::parser::{OpKind, Pattern};
use crate::model::anomaly::level_forbids;
use crate::model::{Anomaly, Isolation};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    Ww,
    Wr,
    Rw,
}

impl EdgeKind {
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Ww => "ww",
            EdgeKind::Wr => "wr",
            EdgeKind::Rw => "rw",
        }
    }
}

/// A dependency `from -kind[item]-> to` between transactions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathEdge {
    pub kind: EdgeKind,
    pub from: u32,
    pub to: u32,
    pub item: String,
    /// Pattern operations the edge comes from (indexes into `Pattern::ops`).
    #[serde(skip)]
    pub ops: (usize, usize),
}

impl std::fmt::Display for PathEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "T{} -{}[{}]-> T{}",
            self.from,
            self.kind.name(),
            self.item,
            self.to
        )
    }
}

/// Statement-type constraint of one transaction: counts of reads, writes,
/// rollbacks and commits (Definition 3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TypeConstraint {
    pub reads: u32,
    pub writes: u32,
    pub rollbacks: u32,
    pub commits: u32,
}

pub fn type_constraints(p: &Pattern) -> Vec<TypeConstraint> {
    (1..=p.txn_count())
        .map(|t| {
            let mut c = TypeConstraint::default();
            for o in p.ops.iter().filter(|o| o.txn == t) {
                match o.kind {
                    OpKind::Read => c.reads += 1,
                    OpKind::Write => c.writes += 1,
                    OpKind::Abort => c.rollbacks += 1,
                    OpKind::Commit => c.commits += 1,
                }
            }
            c
        })
        .collect()
}

/// The schedule order constraint: the transaction of each operation.
pub fn schedule(p: &Pattern) -> Vec<u32> {
    p.ops.iter().map(|o| o.txn).collect()
}

/// The edges the pattern prescribes, in pattern order, without duplicates.
/// Writes of aborting transactions are not installed (no ww/rw to them), but a
/// read of such a write is a wr edge (an aborted read).
pub fn expected_edges(p: &Pattern) -> Vec<PathEdge> {
    let mut out: Vec<PathEdge> = Vec::new();
    let mut push = |e: PathEdge| {
        if !out
            .iter()
            .any(|o| (o.kind, o.from, o.to, &o.item) == (e.kind, e.from, e.to, &e.item))
        {
            out.push(e);
        }
    };
    for item in p.items() {
        // (op index, txn, version) of every write of the item; installed = committed ones.
        let writes: Vec<(usize, u32, u32)> = p
            .ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.kind == OpKind::Write)
            .filter_map(|(i, o)| {
                let (it, v) = o.item.as_ref()?;
                (*it == item).then_some((i, o.txn, *v))
            })
            .collect();
        let installed: Vec<(usize, u32, u32)> =
            writes.iter().copied().filter(|w| !p.aborts(w.1)).collect();
        for w in installed.windows(2) {
            if w[0].1 != w[1].1 {
                push(PathEdge {
                    kind: EdgeKind::Ww,
                    from: w[0].1,
                    to: w[1].1,
                    item: item.clone(),
                    ops: (w[0].0, w[1].0),
                });
            }
        }
        for (ri, r) in p.ops.iter().enumerate() {
            let (OpKind::Read, Some((it, v))) = (r.kind, &r.item) else {
                continue;
            };
            if *it != item || p.aborts(r.txn) {
                continue;
            }
            let writer = writes.iter().find(|w| w.2 == *v);
            if let Some(w) = writer {
                if w.1 != r.txn {
                    push(PathEdge {
                        kind: EdgeKind::Wr,
                        from: w.1,
                        to: r.txn,
                        item: item.clone(),
                        ops: (w.0, ri),
                    });
                }
            }
            let next = match writer {
                None => installed.first(),
                Some(w) => installed
                    .iter()
                    .position(|x| x.0 == w.0)
                    .and_then(|i| installed.get(i + 1)),
            };
            if let Some(n) = next.filter(|n| n.1 != r.txn) {
                push(PathEdge {
                    kind: EdgeKind::Rw,
                    from: r.txn,
                    to: n.1,
                    item: item.clone(),
                    ops: (ri, n.0),
                });
            }
        }
    }
    out
}

/// The `graph` oracle's name for the anomaly the pattern's path forms (G1a,
/// G1b, or the cycle's Anomaly::G0 / G1c / G-single / lost-update / read-skew / G2-item
/// / write-skew), or `None` for an acyclic path.
pub fn expected_anomaly(p: &Pattern) -> Option<Anomaly> {
    let edges = expected_edges(p);
    for e in edges.iter().filter(|e| e.kind == EdgeKind::Wr) {
        if p.aborts(e.from) {
            return Some(Anomaly::G1a);
        }
        let (w, _) = e.ops;
        let rewritten = p.ops[w + 1..].iter().any(|o| {
            o.kind == OpKind::Write
                && o.txn == e.from
                && o.item.as_ref().map(|i| &i.0) == Some(&e.item)
        });
        if rewritten {
            return Some(Anomaly::G1b);
        }
    }
    let committed: Vec<&PathEdge> = edges
        .iter()
        .filter(|e| !p.aborts(e.from) && !p.aborts(e.to))
        .collect();
    let n = p.txn_count();
    // Best cycle: fewest rw edges, then shortest; enumerate simple cycles (n <= 5).
    let mut best: Option<(usize, usize, Vec<&PathEdge>)> = None;
    let mut stack: Vec<&PathEdge> = Vec::new();
    fn dfs<'a>(
        start: u32,
        at: u32,
        edges: &[&'a PathEdge],
        stack: &mut Vec<&'a PathEdge>,
        best: &mut Option<(usize, usize, Vec<&'a PathEdge>)>,
        depth: u32,
    ) {
        for e in edges.iter().filter(|e| e.from == at) {
            if e.to == start {
                stack.push(e);
                let rw = stack.iter().filter(|e| e.kind == EdgeKind::Rw).count();
                let key = (rw, stack.len());
                if best.as_ref().is_none_or(|b| key < (b.0, b.1)) {
                    *best = Some((rw, stack.len(), stack.clone()));
                }
                stack.pop();
            } else if e.to > start && !stack.iter().any(|s| s.from == e.to) && depth > 0 {
                stack.push(e);
                dfs(start, e.to, edges, stack, best, depth - 1);
                stack.pop();
            }
        }
    }
    for s in 1..=n {
        dfs(s, s, &committed, &mut stack, &mut best, n);
    }
    let (rw, len, cyc) = best?;
    let kinds: Vec<EdgeKind> = cyc.iter().map(|e| e.kind).collect();
    let mut items: Vec<&str> = cyc.iter().map(|e| e.item.as_str()).collect();
    items.sort();
    items.dedup();
    Some(match rw {
        0 if kinds.iter().all(|k| *k == EdgeKind::Ww) => Anomaly::G0,
        0 => Anomaly::G1c,
        1 if len == 2 && kinds.contains(&EdgeKind::Ww) && items.len() == 1 => Anomaly::LostUpdate,
        1 if len == 2 && items.len() == 2 => Anomaly::ReadSkew,
        1 => Anomaly::GSingle,
        _ if len == 2 && items.len() == 2 => Anomaly::WriteSkew,
        _ => Anomaly::G2Item,
    })
}

/// Whether the pattern has a dirty write (P0): a transaction writes an item
/// while another transaction's write of it is uncommitted.
pub fn dirty_write(p: &Pattern) -> bool {
    p.ops.iter().enumerate().any(|(i, o)| {
        o.kind == OpKind::Write
            && p.ops[..i].iter().any(|w| {
                w.kind == OpKind::Write
                    && w.txn != o.txn
                    && w.item.as_ref().map(|x| &x.0) == o.item.as_ref().map(|x| &x.0)
                    && p.end_of(w.txn) > i
            })
    })
}

/// The levels that forbid the pattern: those whose model forbids its anomaly
/// (the `graph` oracle's level table); every level for a dirty write; the
/// paper's tag otherwise (acyclic paths).
pub fn forbidden_in(p: &Pattern, paper: &[Isolation]) -> Vec<Isolation> {
    if dirty_write(p) {
        return Isolation::ALL.to_vec();
    }
    match expected_anomaly(p) {
        Some(a) => Isolation::ALL
            .into_iter()
            .filter(|l| level_forbids(*l, a))
            .collect(),
        None => paper.to_vec(),
    }
}
