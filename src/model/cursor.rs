//! Open cursors: a SELECT stepped part-way ([`Select::cursor`]) while its
//! session runs other statements, stepped further by [`Stmt::Fetch`] and
//! reset by [`Stmt::Close`].
//!
//! The oracles judge a cursor as its SELECT at the open: the rows of its
//! steps, in order, are the first rows of the SELECT's result on the state
//! the open saw (the SELECT orders by the full primary key, so that prefix is
//! one result: `LIMIT k` for `k` rows stepped), and the whole result once a
//! step reached its end. The executor gathers the steps' rows and row
//! versions into the open's outcome ([`settle`]); the steps keep their own
//! rows for scripts and the shadow run.
//!
//! The snapshot is the transaction's: SQLite in WAL mode ("Isolation In
//! SQLite", sqlite.org/isolation.html: "When a read transaction starts,
//! that reader continues to see an unchanging \"snapshot\" of the database
//! file as it existed at the moment in time when the read transaction
//! started"); cursors open inside explicit transactions only.
//!
//! Rows stepped after the session wrote the cursor's table are not judged:
//! SQLite leaves them undefined (same page, "No Isolation Between
//! Operations On The Same Database Connection": whether later steps of a
//! SELECT see an UPDATE the application ran between them — "The answer is
//! that this behavior is undefined"). The write itself is judged as usual.

use super::case::{StmtRef, TestCase, Txn};
use super::history::History;
use super::stmt::{Select, Stmt};
use super::walk;
use std::collections::BTreeSet;

/// One cursor of a transaction: where it opens, the steps whose rows are
/// judged, those after the session wrote a table its SELECT reads (a
/// subquery's too), and where it closes.
#[derive(Clone, Debug, PartialEq)]
pub struct Cursor {
    pub name: String,
    /// Every table its SELECT reads (its subqueries' too).
    pub tables: BTreeSet<String>,
    pub open: StmtRef,
    pub judged: Vec<StmtRef>,
    pub unjudged: Vec<StmtRef>,
    pub close: Option<StmtRef>,
}

/// The cursors of `case`, transaction by transaction (cheap for a case
/// without one: the executor asks for every run).
pub fn cursors(case: &TestCase) -> Vec<Cursor> {
    case.txns
        .iter()
        .filter(|t| {
            t.stmts
                .iter()
                .any(|s| matches!(&s.stmt, Stmt::Select(q) if q.cursor.is_some()))
        })
        .flat_map(|t| txn_cursors(case, t))
        .collect()
}

fn txn_cursors(case: &TestCase, t: &Txn) -> Vec<Cursor> {
    let mut done = Vec::new();
    let mut open: Vec<(Cursor, bool)> = Vec::new();
    for (i, s) in t.stmts.iter().enumerate() {
        let r = StmtRef {
            txn: t.id,
            index: i as u32,
        };
        match &s.stmt {
            Stmt::Select(Select {
                cursor: Some(c), ..
            }) => open.push((
                Cursor {
                    name: c.name.clone(),
                    tables: walk::tables(&s.stmt),
                    open: r,
                    judged: Vec::new(),
                    unjudged: Vec::new(),
                    close: None,
                },
                false,
            )),
            Stmt::Fetch(f) => {
                if let Some((c, written)) = open.iter_mut().find(|(c, _)| c.name == f.cursor) {
                    match written {
                        true => c.unjudged.push(r),
                        false => c.judged.push(r),
                    }
                }
            }
            Stmt::Close(name) => {
                if let Some(at) = open.iter().position(|(c, _)| &c.name == name) {
                    let (mut c, _) = open.remove(at);
                    c.close = Some(r);
                    done.push(c);
                }
            }
            other if !open.is_empty() && other.kind().is_write() => {
                let written = writes(case, other);
                for (c, w) in &mut open {
                    *w |= !written.is_disjoint(&c.tables);
                }
            }
            _ => {}
        }
    }
    done.extend(open.into_iter().map(|(c, _)| c));
    done
}

/// The tables a write may change: its own and those its foreign-key
/// actions reach.
fn writes(case: &TestCase, stmt: &Stmt) -> BTreeSet<String> {
    let mut out = walk::tables(stmt);
    out.extend(walk::cascade_targets(stmt, &case.schema));
    out
}

/// Gathers each cursor's judged steps into its open's outcome: their rows
/// and row versions, in order, up to the first step that failed; the
/// outcome is `exhausted` when a judged step reached the end. The steps keep
/// their rows but no longer claim the versions (the open reads them).
/// `insensitive`: the engine's cursors do not see their own transaction's
/// later writes (`Features::cursors_insensitive`), so every step is judged.
pub fn settle(case: &TestCase, history: &mut History, insensitive: bool) {
    let cursors = cursors(case);
    if cursors.is_empty() {
        return;
    }
    let at: std::collections::HashMap<StmtRef, usize> = history
        .outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| (o.stmt, i))
        .collect();
    let pos = |r: StmtRef| at.get(&r).copied();
    for c in cursors {
        let Some(open_at) = pos(c.open) else { continue };
        if history.outcomes[open_at].outcome.error.is_some() {
            continue;
        }
        // Gathering stops at the first failed step, or at the first step
        // after an own write where that is undefined.
        let mut stopped = false;
        for r in c.judged.iter().chain(&c.unjudged) {
            let Some(at) = pos(*r) else { continue };
            let step = &mut history.outcomes[at].outcome;
            let reads = std::mem::take(&mut step.reads);
            if stopped || step.error.is_some() || (!insensitive && c.unjudged.contains(r)) {
                stopped = true;
                continue;
            }
            let (rows, exhausted, complete) =
                (step.rows.clone(), step.exhausted, step.reads_complete);
            let o = &mut history.outcomes[open_at].outcome;
            o.affected += rows.len() as u64;
            o.rows.extend(rows);
            o.reads.extend(reads);
            o.reads_complete &= complete;
            o.exhausted |= exhausted;
        }
    }
}

/// A cursor's SELECT as a plain SELECT (run whole, where a replay runs it
/// as a statement of its own).
pub fn run_whole(stmt: &mut Stmt) {
    if let Stmt::Select(q) = stmt {
        q.cursor = None;
    }
}

/// `case` with each cursor's SELECT limited to the rows its steps returned
/// when none reached the end (the statement the oracles judge); `None`
/// when nothing changes.
pub fn with_limits(case: &TestCase, history: &History) -> Option<TestCase> {
    let mut out: Option<TestCase> = None;
    for c in cursors(case) {
        let Some(o) = history.outcomes.iter().find(|o| o.stmt == c.open) else {
            continue;
        };
        if o.outcome.exhausted || o.outcome.error.is_some() {
            continue;
        }
        let target = out.get_or_insert_with(|| case.clone());
        let Some(Stmt::Select(sel)) = target.stmt_mut(c.open).map(|s| &mut s.stmt) else {
            continue;
        };
        let k = o.outcome.rows.len() as u64;
        sel.limit = Some(sel.limit.map_or(k, |l| l.min(k)));
    }
    out
}
