//! Implicit detection for pattern cases: did the executed history produce
//! exactly the pattern's dependency path? The observed ww/wr/rw edges between
//! transactions come from the write lists of the `graph` oracle's checker
//! history; the path is hit when they equal the expected edges (mapped to the
//! items' rows), every transaction ended as the pattern says, and each edge's
//! operations completed on the same side of the other transaction's commit or
//! abort as in the pattern (so a write that had to wait for the other's commit
//! is not a dirty write).

use crate::gen::pattern::path::{self, expected_anomaly, expected_edges, EdgeKind, PathEdge};
use crate::gen::pattern::{Binding, Pattern};
use crate::model::{Anomaly, EventKind, History, StmtRef, TestCase, TxnEnd, WriteList};
use crate::oracle::graph::{analyse, CheckHistory, Op, TxnStatus};
use crate::oracle::Finding;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// An observed edge: kind, from txn, to txn, table, rid.
pub type Observed = (EdgeKind, u32, u32, String, i64);

#[derive(Clone, Debug, Serialize)]
pub struct PatternReport {
    pub name: String,
    pub pattern: String,
    pub path_hit: bool,
    /// Why the path was missed (first reason), if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss: Option<String>,
    pub expected_edges: Vec<String>,
    pub observed_edges: Vec<String>,
    pub expected_anomaly: Option<Anomaly>,
    /// Anomalies the `graph` checker found in the history (any level).
    pub graph_anomalies: Vec<Anomaly>,
}

/// Cross-transaction edges of a checker history (sessions are the case's
/// transaction ids). ww and rw edges link committed, not undone writes; a wr
/// edge may come from an aborted writer (an aborted read).
pub fn observed_edges(h: &CheckHistory) -> BTreeSet<Observed> {
    let mut owner: BTreeMap<u32, u32> = BTreeMap::new();
    let mut installed: Vec<(u32, &str, i64, &WriteList)> = Vec::new(); // txn, table, rid, before
    for t in &h.txns {
        for op in &t.ops {
            if let Op::Write {
                op,
                table,
                rid,
                before,
                undone,
                ..
            } = op
            {
                owner.insert(*op, t.session as u32);
                if t.status == TxnStatus::Committed && !undone {
                    if let Some(b) = before {
                        installed.push((t.session as u32, table, *rid, b));
                    }
                }
            }
        }
    }
    let last_op = |wl: &WriteList| Some(wl.last());
    let mut out = BTreeSet::new();
    for &(to, table, rid, before) in &installed {
        if let Some(from) = last_op(before).and_then(|o| owner.get(&o)) {
            let from_committed = h
                .txns
                .iter()
                .any(|t| t.session as u32 == *from && t.status == TxnStatus::Committed);
            if *from != to && from_committed {
                out.insert((EdgeKind::Ww, *from, to, table.to_string(), rid));
            }
        }
    }
    for t in h.txns.iter().filter(|t| t.status == TxnStatus::Committed) {
        let me = t.session as u32;
        for op in &t.ops {
            let Op::Read {
                table,
                rid,
                wl,
                op: rop,
            } = op
            else {
                continue;
            };
            // An UPDATE reads the version it replaces: that is its write, not
            // a read of the pattern.
            let own_write = t.ops.iter().any(|w| {
                matches!(w, Op::Write { op, table: t2, rid: r2, before: Some(b), .. }
                    if Some(*op) == *rop && t2 == table && r2 == rid && b == wl)
            });
            if own_write {
                continue;
            }
            if let Some(&from) = last_op(wl).and_then(|o| owner.get(&o)) {
                if from != me {
                    out.insert((EdgeKind::Wr, from, me, table.to_string(), *rid));
                }
            }
            for &(to, t2, r2, before) in &installed {
                if to != me && *t2 == **table && r2 == *rid && before == wl {
                    out.insert((EdgeKind::Rw, me, to, table.to_string(), *rid));
                }
            }
        }
    }
    out
}

fn completed_at(history: &History, r: StmtRef) -> Option<usize> {
    history
        .events
        .iter()
        .position(|e| e.stmt == r && matches!(e.kind, EventKind::Completed { ok: true, .. }))
}

/// Checks an executed pattern case.
pub fn check(p: &Pattern, b: &Binding, case: &TestCase, history: &History) -> PatternReport {
    let h = CheckHistory::from_case(case, history, None);
    let observed = observed_edges(&h);
    let expected = expected_edges(p);
    let graph_anomalies: Vec<Anomaly> = analyse(&h).anomalies.iter().map(|a| a.name).collect();
    let miss = miss_reason(p, b, history, &expected, &observed);
    PatternReport {
        name: p.name.clone(),
        pattern: p.to_string(),
        path_hit: miss.is_none(),
        miss,
        expected_edges: expected.iter().map(|e| e.to_string()).collect(),
        observed_edges: observed
            .iter()
            .map(|(k, f, t, tab, rid)| format!("T{f} -{}[{tab}#{rid}]-> T{t}", k.name()))
            .collect(),
        expected_anomaly: expected_anomaly(p),
        graph_anomalies,
    }
}

fn miss_reason(
    p: &Pattern,
    b: &Binding,
    history: &History,
    expected: &[PathEdge],
    observed: &BTreeSet<Observed>,
) -> Option<String> {
    for t in 1..=p.txn_count() {
        let want = if p.aborts(t) {
            TxnEnd::RolledBack
        } else {
            TxnEnd::Committed
        };
        let got = history.txn_end(t);
        if got != Some(want) {
            return Some(format!("T{t} ended {got:?}, the pattern wants {want:?}"));
        }
    }
    let mut want: BTreeSet<Observed> = BTreeSet::new();
    for e in expected {
        let (table, rid) = b.row_of(&e.item)?;
        want.insert((e.kind, e.from, e.to, table.to_string(), rid));
    }
    if let Some(e) = want.difference(observed).next() {
        return Some(format!(
            "expected edge T{} -{}[{}#{}]-> T{} did not occur",
            e.1,
            e.0.name(),
            e.3,
            e.4,
            e.2
        ));
    }
    if let Some(e) = observed.difference(&want).next() {
        return Some(format!(
            "unexpected edge T{} -{}[{}#{}]-> T{}",
            e.1,
            e.0.name(),
            e.3,
            e.4,
            e.2
        ));
    }
    // Timing: each edge's target op relative to the source's end, and the
    // source op relative to the target's end, as in the pattern.
    for e in expected {
        for (op, other) in [(e.ops.1, e.from), (e.ops.0, e.to)] {
            let end = p.end_of(other);
            let (Some(a), Some(z)) = (
                completed_at(history, b.ops[op]),
                completed_at(history, b.ops[end]),
            ) else {
                return Some(format!("{} or {} did not complete", p.ops[op], p.ops[end]));
            };
            if (op < end) != (a < z) {
                return Some(format!(
                    "{} completed {} {}, the pattern has it {}",
                    p.ops[op],
                    if a < z { "before" } else { "after" },
                    p.ops[end],
                    if op < end { "before" } else { "after" }
                ));
            }
        }
    }
    None
}

/// Two-phase detection's implicit step for a pattern case: attaches the
/// pattern report (`evidence.pattern`) to the `graph` findings, and reports a
/// dirty write (P0, which no engine permits and which the graph cannot show
/// without a cycle) when the pattern's dirty-write path occurred.
pub fn annotate(findings: &mut Vec<Finding>, report: &PatternReport, p: &Pattern) {
    let ev = serde_json::to_value(report).unwrap_or_default();
    for f in findings
        .iter_mut()
        .filter(|f| f.oracle == crate::oracle::OracleKind::Graph)
    {
        if f.evidence.is_object() {
            f.evidence["pattern"] = ev.clone();
        }
    }
    if report.path_hit && path::dirty_write(p) && report.expected_anomaly.is_none() {
        findings.push(Finding::new(
            crate::oracle::OracleKind::Graph,
            "dirty-write",
            format!(
                "dirty write: pattern {} ({}) ran as written: a write completed while another transaction's write of the same row was uncommitted",
                report.name, report.pattern
            ),
            serde_json::json!({ "pattern": ev }),
        ));
    }
}
