//! When the commit-order replay of `wss` is sound at a level where the engine
//! does not detect write-write conflicts (profile `write_conflicts_detected`
//! lacks the level: InnoDB READ COMMITTED / READ UNCOMMITTED, PostgreSQL).
//!
//! The documented write rules at those levels (docs/engine-facts.md, "Writes
//! and locking reads that waited"; profile `Rule::write`):
//! - InnoDB READ COMMITTED / READ UNCOMMITTED: a write judges each row on its
//!   newest committed version (semi-consistent read); a row locked by another
//!   transaction that matches makes it wait; no gap locks.
//! - PostgreSQL READ COMMITTED: rows are found on the statement's snapshot
//!   (taken when it starts); a matching row changed concurrently is waited for.
//! - PostgreSQL REPEATABLE READ / SERIALIZABLE: the transaction's snapshot;
//!   a row changed since fails with 40001 (the transaction aborts); the
//!   snapshot is taken at the first data statement.
//!
//! So a write was evaluated on the committed state at its
//! *view point* (its start; at snapshot levels its transaction's start) plus
//! its own transaction's writes. The replay in commit order evaluates it on
//! the state after every unit that committed before its own transaction.
//! Both are the same state, on the tables the write can depend on, when no
//! unit that writes those tables committed between the view point and the
//! write's commit (then a lock wait changed nothing it could read). Where
//! uncommitted versions are visible (InnoDB READ
//! UNCOMMITTED subqueries), also no other transaction may hold uncommitted
//! writes on them while the write runs. These conditions are checked for
//! every write of every committed unit; a case that fails one is undecided
//! with the reason, never judged on a replay that could not match.

use crate::engine::profile::{SnapshotPoint, ViewRule};
use crate::engine::EngineProfile;
use crate::model::{walk, EventKind, History, Schema, StmtRef, TestCase, Txn, TxnEnd};
use std::collections::{BTreeSet, HashMap};

/// Why the commit-order replay is not sound for a case (it is undecided).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsound {
    /// A write waited for a lock while a unit writing its tables committed
    /// (the rows it passed before the wait were judged on an earlier state
    /// than the rows after it; `view` judges such writes row by row), or its
    /// wait ended in a concurrency error. A wait that ended with no such
    /// commit (the holder rolled back, or only locked) left every row's
    /// newest committed version as it was: the write is judged.
    WriteWaited,
    /// A unit writing tables a write depends on committed between that
    /// write's view point and its own commit.
    CommitDuringWrite,
    /// Another transaction had uncommitted writes on tables a write reads at
    /// a level where such versions are visible.
    UncommittedWriteVisible,
    /// The profile has no write rule for the level.
    NoWriteRule,
}

impl Unsound {
    /// The key counted in `summary.json`.
    pub fn key(self) -> &'static str {
        match self {
            Unsound::WriteWaited => "write-waited",
            Unsound::CommitDuringWrite => "commit-during-write",
            Unsound::UncommittedWriteVisible => "uncommitted-write-visible",
            Unsound::NoWriteRule => "no-write-rule",
        }
    }
}

/// Where each statement's events are in the history.
#[derive(Default)]
struct Marks {
    submitted: HashMap<StmtRef, usize>,
    completed: HashMap<StmtRef, usize>,
    blocked: BTreeSet<StmtRef>,
    /// Per transaction: its last event (its end).
    last: HashMap<u32, usize>,
}

impl Marks {
    fn of(history: &History) -> Marks {
        let mut m = Marks::default();
        for (i, e) in history.events.iter().enumerate() {
            match e.kind {
                EventKind::Submitted => {
                    m.submitted.entry(e.stmt).or_insert(i);
                }
                EventKind::Blocked { .. } => {
                    m.blocked.insert(e.stmt);
                }
                EventKind::Completed { .. } => {
                    m.completed.insert(e.stmt, i);
                }
                _ => {}
            }
            m.last.insert(e.stmt.txn, i);
        }
        m
    }
}

/// A write statement with the window in which no conflicting commit may fall.
struct Write {
    stmt: StmtRef,
    tables: BTreeSet<String>,
    /// Its view point (event index) and its unit's commit (event index).
    from: usize,
    to: usize,
    /// Its unit: the transaction, or the autocommit statement itself.
    unit: (u32, Option<u32>),
    /// It waited for a lock.
    waited: bool,
}

/// `None` when the commit-order replay is sound for this case, else the
/// undecided reason.
pub fn unsound_reason(
    case: &TestCase,
    history: &History,
    profile: &EngineProfile,
) -> Option<Unsound> {
    let mut rules = Vec::new();
    for t in &case.txns {
        let Some(rule) = profile.rule_of(case, t.id) else {
            return Some(Unsound::NoWriteRule);
        };
        rules.push(rule);
    }
    let uncommitted_visible = rules
        .iter()
        .any(|r| r.plain_read == ViewRule::Uncommitted || r.write == ViewRule::Uncommitted);
    let marks = Marks::of(history);
    let mut writes = Vec::new();
    let mut all_writes = Vec::new();
    for (t, rule) in case.txns.iter().zip(rules) {
        let snapshot_writes = rule.write == ViewRule::Snapshot;
        // A snapshot taken at the first data statement (PostgreSQL: "the
        // first non-transaction-control statement") or, for other snapshot
        // points, conservatively at BEGIN.
        let first_data = rule.snapshot == SnapshotPoint::FirstStatementStart;
        let begin = snapshot_start(t, &marks, first_data);
        let ctx = TxnMarks {
            case,
            history,
            marks: &marks,
            snapshot_writes,
            begin,
        };
        if let Some(u) = ctx.writes_of(t, &mut writes, &mut all_writes) {
            return Some(u);
        }
    }
    overlap_reason(&writes, &all_writes, &marks, uncommitted_visible)
}

/// Where a transaction's snapshot starts: the first submitted statement
/// (with `first_data`, the first data statement) of `t`.
fn snapshot_start(t: &Txn, marks: &Marks, first_data: bool) -> Option<usize> {
    t.stmts
        .iter()
        .enumerate()
        .filter(|(_, cs)| !first_data || cs.stmt.kind().is_data())
        .filter_map(|(i, _)| {
            marks.submitted.get(&StmtRef {
                txn: t.id,
                index: i as u32,
            })
        })
        .min()
        .copied()
}

/// A write's span: statement, tables it depends on, submit and end of its
/// unit (event indexes).
type WriteSpan = (StmtRef, BTreeSet<String>, usize, usize);

/// What the writes of one transaction are judged against.
struct TxnMarks<'a> {
    case: &'a TestCase,
    history: &'a History,
    marks: &'a Marks,
    /// Writes see the transaction's snapshot.
    snapshot_writes: bool,
    /// Where the transaction's snapshot starts.
    begin: Option<usize>,
}

impl TxnMarks<'_> {
    /// Adds the submitted writes of `t` to `all_writes`, and those of a
    /// committed unit to `writes`; `Some` when a write waited and failed on
    /// a concurrency error.
    fn writes_of(
        &self,
        t: &Txn,
        writes: &mut Vec<Write>,
        all_writes: &mut Vec<WriteSpan>,
    ) -> Option<Unsound> {
        let (history, marks) = (self.history, self.marks);
        let committed = !t.autocommit && history.txn_end(t.id) == Some(TxnEnd::Committed);
        let commit = marks.last.get(&t.id).copied();
        for (i, cs) in t.stmts.iter().enumerate() {
            let r = StmtRef {
                txn: t.id,
                index: i as u32,
            };
            if !cs.stmt.kind().is_write() {
                continue;
            }
            let Some(&start) = marks.submitted.get(&r) else {
                continue;
            };
            let tables = depends_on(&cs.stmt, &self.case.schema);
            let end = marks.completed.get(&r).copied();
            let txn_end = if t.autocommit { end } else { commit };
            all_writes.push((r, tables.clone(), start, txn_end.unwrap_or(usize::MAX)));
            let unit_committed = if t.autocommit {
                history
                    .outcome(r)
                    .is_some_and(crate::model::Outcome::autocommit_committed)
            } else {
                committed
            };
            let (true, Some(to)) = (unit_committed, txn_end) else {
                continue;
            };
            let waited = marks.blocked.contains(&r);
            let failed_by_concurrency = history
                .outcome(r)
                .and_then(|o| o.error.as_ref())
                .is_some_and(|e| e.class.is_concurrency());
            if waited && failed_by_concurrency {
                return Some(Unsound::WriteWaited);
            }
            let from = match (self.snapshot_writes && !t.autocommit, self.begin) {
                (true, Some(b)) => b,
                _ => start,
            };
            let unit = (t.id, t.autocommit.then_some(r.index));
            writes.push(Write {
                stmt: r,
                tables,
                from,
                to,
                unit,
                waited,
            });
        }
        None
    }
}

/// Why overlapping writes make the replay unsound: another unit's commit
/// during a write (of tables it depends on), or, where uncommitted rows are
/// visible, another transaction's write running at the same time.
fn overlap_reason(
    writes: &[Write],
    all_writes: &[WriteSpan],
    marks: &Marks,
    uncommitted_visible: bool,
) -> Option<Unsound> {
    for w in writes {
        let conflicting_commit = writes.iter().any(|o| {
            o.unit != w.unit && o.to > w.from && o.to < w.to && !o.tables.is_disjoint(&w.tables)
        });
        if conflicting_commit {
            return Some(if w.waited {
                Unsound::WriteWaited
            } else {
                Unsound::CommitDuringWrite
            });
        }
        if uncommitted_visible {
            let end = marks.completed.get(&w.stmt).copied().unwrap_or(usize::MAX);
            let start = marks.submitted.get(&w.stmt).copied().unwrap_or(0);
            let dirty = all_writes.iter().any(|(o, tables, o_start, o_end)| {
                o.txn != w.stmt.txn
                    && *o_start < end
                    && *o_end > start
                    && !tables.is_disjoint(&w.tables)
            });
            if dirty {
                return Some(Unsound::UncommittedWriteVisible);
            }
        }
    }
    None
}

/// Tables whose rows can change what a write does: those it mentions and,
/// through foreign keys in either direction (checks, cascades), every table
/// linked to them.
fn depends_on(stmt: &crate::model::Stmt, schema: &Schema) -> BTreeSet<String> {
    let mut out = walk::tables(stmt);
    loop {
        let before = out.len();
        let linked = walk::fk_linked(&out, schema);
        out.extend(linked);
        if out.len() == before {
            return out;
        }
    }
}

#[cfg(test)]
mod tests;
