//! Statement dependencies (TxCheck §3.1) from an instrumented history.
//!
//! Every row's version chain comes from its write list (`wl`): the operation
//! ids that produced its versions, in order, then the statement that deleted
//! it. A statement is placed on each row of every table it can depend on:
//! - rows it wrote: between the previous and the next writer (item ww);
//! - rows it returned: after the writer of the version it read, before the
//!   next writer (item wr / rw, exact);
//! - every other row of those tables, as its VSRs saw it (predicate or value
//!   wr / rw: a sound over-approximation, since the statement may not have
//!   looked at that row; such edges only order the replay and never feed an
//!   isolation check).
//!
//! Statements of transactions that rolled back or aborted, statements undone
//! by ROLLBACK TO SAVEPOINT, and statements that failed with a concurrency (or READ ONLY)
//! error are not nodes: their effects are gone. A case whose committed
//! statements observed a version written by such a statement (or whose chains
//! branch, or whose views are missing) cannot be replayed soundly: it is
//! [`Undecided`].

use super::clock::{Clock, Side};
use super::vsr::{view_tables, VsrCase};
use crate::model::{History, OnConflict, Outcome, Stmt, StmtRef, TestCase, TxnEnd, WriteList};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DepKind {
    /// Both statements wrote the row (version order).
    Write,
    /// The later statement read (or saw in its view) the earlier one's version.
    Read,
    /// The earlier statement read (or saw) a version the later one overwrote.
    Anti,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Dep {
    pub from: u32,
    pub to: u32,
    pub kind: DepKind,
    /// Exact (the statement read or wrote the row itself) rather than from its
    /// version-set reads.
    pub item: bool,
    pub table: String,
    pub rid: i64,
}

/// The statement-dependency graph of one execution.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sdg {
    /// Operation ids of the statements that take part, in transaction order.
    pub nodes: Vec<u32>,
    pub deps: Vec<Dep>,
}

/// Why a history cannot be turned into a replayable graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecided {
    /// A short reason, counted in `summary.json` (`oracle_counts.sdg.undecided_by`).
    pub key: &'static str,
    pub detail: String,
}

impl Undecided {
    pub fn new(key: &'static str, detail: String) -> Undecided {
        Undecided { key, detail }
    }
}

type RowKey = (String, i64);

/// A row's writers in version order: `0` is the initial load.
#[derive(Clone, Debug, Default)]
struct Chain {
    ops: Vec<u32>,
    deleter: Option<u32>,
}

impl Chain {
    /// The writer following position `i` (the next update, else the deleter).
    fn next_after(&self, i: usize) -> Option<u32> {
        self.ops.get(i + 1).copied().or(self.deleter)
    }
}

/// A statement that saw one row at two versions: no sequential execution
/// gives its result. MariaDB REPEATABLE READ does this when a transaction
/// updates a row whose key a concurrent transaction changed after the
/// snapshot: its reads see the old key's snapshot version and its own update.
fn two_versions(op: u32, table: &str, rid: i64) -> Undecided {
    Undecided::new("two-versions", format!(
        "op {op} saw row {table}:{rid} at two versions (a snapshot read mixed with its transaction's own update of a newer version)"
    ))
}

/// The statements whose effects are part of the committed outcome.
pub fn included(case: &TestCase, history: &History, vsr: &VsrCase) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for t in &case.txns {
        if !t.autocommit && history.txn_end(t.id) != Some(TxnEnd::Committed) {
            continue;
        }
        let mut undone: BTreeSet<u32> = BTreeSet::new();
        let mut savepoints: Vec<(String, usize)> = Vec::new();
        for (i, s) in t.stmts.iter().enumerate() {
            let r = StmtRef {
                txn: t.id,
                index: i as u32,
            };
            let ok = history.outcome(r).is_some_and(Outcome::ok);
            match &s.stmt {
                Stmt::Savepoint(name) if ok => savepoints.push((name.clone(), i)),
                Stmt::Release(name) if ok => {
                    if let Some(p) = savepoints.iter().rposition(|(n, _)| n == name) {
                        savepoints.truncate(p);
                    }
                }
                Stmt::RollbackTo(name) if ok => {
                    if let Some(&(_, at)) = savepoints.iter().rev().find(|(n, _)| n == name) {
                        undone.extend(t.stmts[at + 1..i].iter().map(|s| s.op));
                        savepoints.retain(|(_, j)| *j <= at);
                    }
                }
                _ => {}
            }
        }
        for (i, s) in t.stmts.iter().enumerate() {
            let r = StmtRef {
                txn: t.id,
                index: i as u32,
            };
            let Some(o) = history.outcome(r) else {
                continue;
            };
            let from_txn = o.error.as_ref().is_some_and(|e| e.class.from_transaction());
            if s.stmt.kind().is_data() && !from_txn && !undone.contains(&s.op) && !vsr.is_vsr(s.op)
            {
                out.insert(s.op);
            }
        }
    }
    out
}

/// Builds the statement-dependency graph of `history`, an execution of `vsr.case`.
pub fn build(vsr: &VsrCase, history: &History) -> Result<Sdg, Undecided> {
    // The replay without transactions runs each statement on its own, so a
    // key checked at COMMIT by default would be checked after each statement.
    if crate::oracle::cascade::writes_deferred_key(&vsr.case, history) {
        return Err(Undecided::new(
            "deferred-constraint",
            "a foreign key is checked at COMMIT, which the replay without transactions does not have".to_string(),
        ));
    }
    // Child rows written by a foreign-key action belong to no statement.
    if let Some(r) = crate::oracle::cascade::first_action_write(&vsr.case, history) {
        return Err(Undecided::new(
            "cascade-unobserved",
            format!(
                "T{}#{} changed parent rows whose foreign-key actions write child rows no statement reports",
                r.txn, r.index
            ),
        ));
    }
    let case = &vsr.case;
    let nodes = included(case, history, vsr);
    let by_op = statements_by_op(case);
    let views = vsr_views(vsr, history, &nodes, &by_op)?;
    let chains = version_chains(case, history, &nodes, &by_op, &views)?;
    let clock = Clock::new(case, history);
    let mut deps: BTreeSet<Dep> = BTreeSet::new();
    for &op in &nodes {
        let Some(&(r, stmt)) = by_op.get(&op) else {
            continue;
        };
        let o = history.outcome(r).cloned().unwrap_or_default();
        let node = Node {
            op,
            stmt,
            outcome: &o,
            view: &views[&op],
        };
        node_deps(&node, case, &chains, &clock, &mut deps)?;
    }
    let mut ordered: Vec<u32> = Vec::new();
    for t in &case.txns {
        ordered.extend(t.stmts.iter().map(|s| s.op).filter(|o| nodes.contains(o)));
    }
    Ok(Sdg {
        nodes: ordered,
        deps: deps.into_iter().collect(),
    })
}

/// Each statement of `case` by operation id.
type ByOp<'a> = HashMap<u32, (StmtRef, &'a Stmt)>;

/// What a statement's version-set reads saw: table -> rid -> write list.
type View = BTreeMap<String, BTreeMap<i64, WriteList>>;

fn statements_by_op(case: &TestCase) -> ByOp<'_> {
    case.txns
        .iter()
        .flat_map(|t| {
            t.stmts.iter().enumerate().map(move |(i, s)| {
                let r = StmtRef {
                    txn: t.id,
                    index: i as u32,
                };
                (s.op, (r, &s.stmt))
            })
        })
        .collect()
}

fn outcome_of<'h>(by_op: &ByOp, history: &'h History, op: u32) -> Option<&'h Outcome> {
    by_op.get(&op).and_then(|(r, _)| history.outcome(*r))
}

/// The view of every included statement, from its version-set reads.
fn vsr_views(
    vsr: &VsrCase,
    history: &History,
    nodes: &BTreeSet<u32>,
    by_op: &ByOp,
) -> Result<HashMap<u32, View>, Undecided> {
    let mut views = HashMap::new();
    for &op in nodes {
        let mut view = View::new();
        for v in vsr.vsrs.get(&op).into_iter().flatten() {
            let o = outcome_of(by_op, history, *v)
                .filter(|o| o.ok())
                .ok_or_else(|| {
                    Undecided::new(
                        "vsr-missing",
                        format!("the version-set read of op {op} did not run"),
                    )
                })?;
            let Some((_, Stmt::Select(q))) = by_op.get(v) else {
                continue;
            };
            let table = q.from.first().map(|f| f.table.clone()).unwrap_or_default();
            let mut rows = BTreeMap::new();
            for r in &o.reads {
                if rows.insert(r.rid, r.wl.clone()).is_some_and(|w| w != r.wl) {
                    return Err(two_versions(op, &r.table, r.rid));
                }
            }
            // A table read both current and plain (a subquery): one view
            // only when both reads saw the same versions.
            match view.get(&table) {
                Some(other) if *other != rows => {
                    return Err(Undecided::new(
                        "subquery-read-view",
                        format!(
                            "op {op} reads {table} current and, in a subquery, in its read \
                             view, and the two differ"
                        ),
                    ))
                }
                _ => {
                    view.insert(table, rows);
                }
            }
        }
        views.insert(op, view);
    }
    Ok(views)
}

/// Every write list observed, per row, and the rows' deleters.
#[derive(Default)]
struct Observations {
    /// The longest write list seen of each row.
    longest: BTreeMap<RowKey, Vec<u32>>,
    /// Every write list seen (each must be a prefix of the longest).
    observed: Vec<(RowKey, Vec<u32>)>,
    deleter: BTreeMap<RowKey, u32>,
    /// REPLACE statements, whose deletions instrumentation does not observe, by table.
    blind: BTreeMap<String, Vec<u32>>,
}

impl Observations {
    fn note(&mut self, table: &str, rid: i64, wl: &WriteList) {
        let ops: Vec<u32> = wl.ops().collect();
        let key = (table.to_string(), rid);
        let e = self.longest.entry(key.clone()).or_default();
        if ops.len() > e.len() {
            *e = ops.clone();
        }
        self.observed.push((key, ops));
    }

    /// What the committed statement `op` read, wrote and saw.
    fn statement(
        &mut self,
        op: u32,
        stmt: &Stmt,
        o: &Outcome,
        view: &View,
    ) -> Result<(), Undecided> {
        if let Stmt::Insert(ins) = stmt {
            if !o.writes_complete && o.ok() && ins.on_conflict == OnConflict::Replace {
                self.blind.entry(ins.table.clone()).or_default().push(op);
            }
        }
        for r in &o.reads {
            self.note(&r.table, r.rid, &r.wl);
        }
        for w in &o.writes {
            if let Some(b) = &w.before {
                self.note(&w.table, w.rid, b);
            }
            match &w.after {
                Some(a) => self.note(&w.table, w.rid, a),
                None => {
                    if self.deleter.insert((w.table.clone(), w.rid), op).is_some() {
                        return Err(Undecided::new(
                            "deleted-twice",
                            format!("row {}:{} deleted twice", w.table, w.rid),
                        ));
                    }
                }
            }
        }
        for (table, rows) in view {
            for (rid, wl) in rows {
                self.note(table, *rid, wl);
            }
        }
        Ok(())
    }
}

/// Version chains from every observation of a committed statement (and the
/// final state), with each row's deleter.
fn version_chains(
    case: &TestCase,
    history: &History,
    nodes: &BTreeSet<u32>,
    by_op: &ByOp,
    views: &HashMap<u32, View>,
) -> Result<BTreeMap<RowKey, Chain>, Undecided> {
    let mut seen = Observations::default();
    if history.final_state_error.is_none() {
        let finals = history
            .final_versions()
            .map_err(|e| Undecided::new("unreadable-final-state", e))?;
        for v in &finals {
            seen.note(&v.table, v.rid, &v.wl);
        }
    }
    for &op in nodes {
        let (Some(o), Some((_, stmt))) = (outcome_of(by_op, history, op), by_op.get(&op)) else {
            continue;
        };
        seen.statement(op, stmt, o, &views[&op])?;
    }
    for (key, ops) in &seen.observed {
        if !seen.longest[key].starts_with(ops) {
            return Err(Undecided::new(
                "branching-versions",
                format!("row {}:{} has branching versions", key.0, key.1),
            ));
        }
    }
    let mut chains: BTreeMap<RowKey, Chain> = BTreeMap::new();
    for (key, ops) in seen.longest {
        if let Some(&op) = ops.iter().find(|&&op| op != 0 && !nodes.contains(&op)) {
            return Err(Undecided::new(
                "uncommitted-version",
                format!(
                    "row {}:{} has a version written by op {op}, which did not commit",
                    key.0, key.1
                ),
            ));
        }
        chains.insert(key, Chain { ops, deleter: None });
    }
    // Initial rows nobody observed still exist in every view.
    for d in &case.data {
        for r in &d.rows {
            chains
                .entry((d.table.clone(), r.rid))
                .or_insert_with(|| Chain {
                    ops: vec![0],
                    deleter: None,
                });
        }
    }
    for (key, op) in seen.deleter {
        chains.entry(key).or_default().deleter = Some(op);
    }
    replace_deletions(history, &seen.blind, &mut chains)?;
    Ok(chains)
}

/// A row gone from the final state without an observed DELETE was removed by
/// the table's REPLACE, if there is exactly one (nothing else deletes).
fn replace_deletions(
    history: &History,
    blind: &BTreeMap<String, Vec<u32>>,
    chains: &mut BTreeMap<RowKey, Chain>,
) -> Result<(), Undecided> {
    for (key, chain) in chains.iter_mut() {
        let present = history.final_state.get(&key.0).is_some_and(|rows| {
            rows.iter()
                .any(|r| r.first() == Some(&crate::model::Value::Int(key.1)))
        });
        if chain.deleter.is_some() || present {
            continue;
        }
        match blind.get(&key.0).map(Vec::as_slice) {
            Some([op]) => chain.deleter = Some(*op),
            Some(_) => {
                return Err(Undecided::new(
                    "replace-deletion",
                    format!(
                        "row {}:{} was removed by one of several REPLACE statements",
                        key.0, key.1
                    ),
                ))
            }
            None => {}
        }
    }
    Ok(())
}

/// One included statement and what it did.
struct Node<'a> {
    op: u32,
    stmt: &'a Stmt,
    outcome: &'a Outcome,
    view: &'a View,
}

/// The dependencies of `node` on the rows of every table it reads or writes.
fn node_deps(
    node: &Node,
    case: &TestCase,
    chains: &BTreeMap<RowKey, Chain>,
    clock: &Clock,
    deps: &mut BTreeSet<Dep>,
) -> Result<(), Undecided> {
    let op = node.op;
    let o = node.outcome;
    let written: BTreeSet<RowKey> = o.writes.iter().map(|w| (w.table.clone(), w.rid)).collect();
    let mut read: BTreeMap<RowKey, &WriteList> = BTreeMap::new();
    for r in &o.reads {
        let prev = read.insert((r.table.clone(), r.rid), &r.wl);
        if prev.is_some_and(|w| *w != r.wl) && !written.contains(&(r.table.clone(), r.rid)) {
            return Err(two_versions(op, &r.table, r.rid));
        }
    }
    let mut edge = |from: u32, to: u32, kind: DepKind, item: bool, key: &RowKey| {
        if from != 0 && from != to {
            deps.insert(Dep {
                from,
                to,
                kind,
                item,
                table: key.0.clone(),
                rid: key.1,
            });
        }
    };
    for table in view_tables(node.stmt, &case.schema) {
        for (key, chain) in chains.range((table.clone(), i64::MIN)..=(table.clone(), i64::MAX)) {
            if written.contains(key) {
                if chain.deleter == Some(op) {
                    if let Some(&last) = chain.ops.last() {
                        edge(last, op, DepKind::Write, true, key);
                    }
                } else if let Some(i) = chain.ops.iter().position(|&w| w == op) {
                    if i > 0 {
                        edge(chain.ops[i - 1], op, DepKind::Write, true, key);
                    }
                    if let Some(next) = chain.next_after(i) {
                        edge(op, next, DepKind::Write, true, key);
                    }
                }
                continue;
            }
            let (seen, item) = match read.get(key) {
                Some(wl) => (Some(*wl), true),
                None => (node.view.get(&table).and_then(|v| v.get(&key.1)), false),
            };
            match seen {
                Some(wl) => {
                    let i = wl.len().saturating_sub(1);
                    if let Some(&writer) = chain.ops.get(i) {
                        edge(writer, op, DepKind::Read, item, key);
                    }
                    if let Some(next) = chain.next_after(i) {
                        edge(op, next, DepKind::Anti, item, key);
                    }
                }
                None => match unseen_row(op, key, chain, clock)? {
                    Some(Unseen::After(d)) => edge(d, op, DepKind::Read, false, key),
                    Some(Unseen::Before(c)) => edge(op, c, DepKind::Anti, false, key),
                    None => {}
                },
            }
        }
    }
    Ok(())
}

/// Where a statement stands to a row of its tables it did not see.
enum Unseen {
    /// After the row's deletion by this op.
    After(u32),
    /// Before the row's creation by this op.
    Before(u32),
}

fn unseen_row(
    op: u32,
    key: &RowKey,
    chain: &Chain,
    clock: &Clock,
) -> Result<Option<Unseen>, Undecided> {
    Ok(match (chain.ops.first().copied(), chain.deleter) {
        (Some(0), Some(d)) => Some(Unseen::After(d)),
        (Some(0), None) => {
            return Err(Undecided::new(
                "row-missing",
                format!(
                    "op {op} did not see row {}:{}, which was never deleted",
                    key.0, key.1
                ),
            ))
        }
        (Some(c), None) => Some(Unseen::Before(c)),
        (Some(c), Some(d)) => match clock.absent_side(op, c, d) {
            Some(Side::BeforeCreation) => Some(Unseen::Before(c)),
            Some(Side::AfterDeletion) => Some(Unseen::After(d)),
            None => {
                return Err(Undecided::new(
                    "insert-delete-ambiguous",
                    format!(
                        "op {op} did not see row {}:{}, inserted and deleted in this case",
                        key.0, key.1
                    ),
                ))
            }
        },
        (None, _) => None,
    })
}
