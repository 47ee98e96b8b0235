//! One data statement: its snapshot, its view, its evaluation on the scratch
//! tables, the expected schedule (block, abort or run) and the comparison with
//! what the engine did. Applying it extends the version history and the locks.

use super::locks::LockTable;
use super::state::{undecided, Checker, Stop};
use super::undecided::Undecided;
use super::versions::{Pos, Sight, Version, Writer};
use super::visibility::{Access, Conflict, SnapshotPoint, ViewRule};
use crate::instrument::Shape;
use crate::model::compare::{bag_diff, same_bag};
use crate::model::{
    ErrorClass, Expr, LockMode, OnConflict, Outcome, RowWrite, Select, Stmt, StmtRef, Value,
    WriteList,
};
use crate::oracle::Finding;
use serde_json::json;

mod evaluate;
mod expect;
mod judge;
mod query_bug;
mod read_only;
mod resumed;
mod uncertain;

use evaluate::{evaluate, sorted_writes, Evaluation};
use expect::{expect, Expect};
use judge::{judge_abort, judge_block, judge_run};
use uncertain::{insert_query_view, partial_write_visible, release_unobserved, subquery_read_view};

/// Where this statement's snapshot is, and whether the transaction had one before.
struct SnapshotInfo {
    at: Option<Pos>,
    prior: bool,
}

fn has_subquery(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Update(u) => {
            u.where_.as_ref().is_some_and(Expr::has_subquery)
                || u.assignments.iter().any(|a| a.value.has_subquery())
        }
        Stmt::Delete(d) => d.where_.as_ref().is_some_and(Expr::has_subquery),
        Stmt::Insert(i) => i.select.is_some() || i.rows.iter().flatten().any(Expr::has_subquery),
        Stmt::Select(sel) => {
            sel.where_.as_ref().is_some_and(Expr::has_subquery)
                || sel.items.iter().any(|i| i.expr.has_subquery())
                || sel
                    .from
                    .iter()
                    .any(|f| f.join.as_ref().is_some_and(|j| j.on.has_subquery()))
        }
        _ => false,
    }
}

/// Statements the model does not cover.
fn unsupported(ck: &Checker, stmt: &Stmt) -> Option<Undecided> {
    match stmt {
        // Scratch tables without foreign keys (MariaDB's temporary tables), and
        // INSERT IGNORE skips rows that violate one instead of failing. A
        // single row is emulated (evaluate.rs: the scratch run's foreign-key
        // error means the row was skipped) unless the table refers to itself.
        Stmt::Insert(i)
            if !ck.scratch_foreign_keys
                && i.on_conflict == OnConflict::Ignore
                && !insert_ignore_emulated(ck, i)
                && ck
                    .case
                    .schema
                    .table(&i.table)
                    .is_some_and(|t| !t.foreign_keys.is_empty()) =>
        {
            Some(Undecided::InsertIgnoreForeignKey)
        }
        _ => None,
    }
}

/// A single-row INSERT IGNORE into a table that does not refer to itself:
/// the row is either inserted or skipped (duplicate key or foreign key alike),
/// so a foreign-key error of the scratch evaluation means "skipped".
fn insert_ignore_emulated(ck: &Checker, i: &crate::model::Insert) -> bool {
    i.on_conflict == OnConflict::Ignore
        && i.rows.len() == 1
        && ck
            .case
            .schema
            .table(&i.table)
            .is_some_and(|t| t.foreign_keys.iter().all(|fk| fk.ref_table != t.name))
}

/// A statement the engine reported as blocked: the model must predict a lock
/// conflict where it was submitted, else the case is undecided.
///
/// A wait the engine reported is a fact: a statement that takes locks goes on
/// being judged after it, whether or not the model predicted the wait (gap,
/// next-key, foreign-key and scan locks are not all modelled). Only a
/// statement that takes no lock at all and still waited stops the comparison.
pub fn on_blocked_submit(ck: &mut Checker, r: StmtRef, pos: Pos) -> Result<(), Stop> {
    // A BEGIN that takes the write lock waits for its holder.
    let begin = matches!(ck.case.stmt(r).map(|c| &c.stmt), Some(Stmt::Begin(_)));
    if begin && ck.rule_of(r.txn).write_lock_at_begin {
        return match ck.locks.database_holder(r.txn) {
            Some(_) => Ok(()),
            None => Err(undecided(Undecided::UnpredictedBlock)),
        };
    }
    let access = modelled_access(ck, r, Undecided::UnpredictedBlock)?;
    if ck.rule_of(r.txn).lock_of(access, in_txn(ck, r)).is_some() {
        return Ok(());
    }
    ck.subquery_sight = None;
    let snap = peek_snapshot(ck, r, access, pos);
    let eval = evaluate(ck, r, access, &snap, pos)?;
    match expect(ck, r, access, &eval, &snap, pos, true) {
        Expect::Block(_) => Ok(()),
        _ => Err(undecided(Undecided::UnpredictedBlock)),
    }
}

/// How statement `r` accesses data, if the model covers it; otherwise the
/// case is undecided (`no_access`: the reason for a statement that reads and
/// writes nothing).
fn modelled_access(ck: &Checker, r: StmtRef, no_access: Undecided) -> Result<Access, Stop> {
    let Some(cs) = ck.case.stmt(r) else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    let Some(access) = Access::of(&cs.stmt) else {
        return Err(undecided(no_access));
    };
    if let Some(reason) = unsupported(ck, &cs.stmt) {
        return Err(undecided(reason));
    }
    // Child rows a foreign-key action wrote belong to no statement: the
    // walk's versions stop matching the engine's from here on.
    let acted = ck.history.outcome(r).is_some_and(|o| {
        !crate::oracle::cascade::written_by_action(&cs.stmt, o, &ck.case.schema).is_empty()
    });
    if acted {
        return Err(undecided(Undecided::CascadeUnobserved));
    }
    Ok(access)
}

pub fn on_complete(ck: &mut Checker, r: StmtRef, pos: Pos) -> Result<(), Stop> {
    let access = modelled_access(ck, r, Undecided::UnknownStatement)?;
    let Some(actual) = ck.history.outcome(r).cloned() else {
        return Err(undecided(Undecided::NoOutcome));
    };
    if let Some(class) = read_only::refused(ck, r, access) {
        return read_only::judge_refused(ck, r, access, class, &actual);
    }
    let was_blocked = ck.blocked.contains(&r);
    subquery_read_view(ck, r, access, pos)?;
    insert_query_view(ck, r, access, pos)?;
    set_undecided_instead(ck, r, access);
    if let Some(judged) = judge_resumed_scan(ck, r, access, pos, was_blocked, &actual) {
        return judged;
    }
    let snap = take_snapshot(ck, r, access, pos, &actual)?;
    let eval = evaluate(ck, r, access, &snap, pos)?;
    match expect(ck, r, access, &eval, &snap, pos, !was_blocked) {
        Expect::Block(holder) => judge_block(ck, r, access, pos, holder, &eval, &actual),
        Expect::Abort(class, why) => judge_abort(ck, r, class, why, &eval, &actual),
        Expect::Run => judge_run(ck, r, access, pos, was_blocked, &eval, &actual),
    }
}

/// Sets the reason a difference leaves the case undecided instead of being a
/// violation, where the statement's view may hide rows the engine saw.
fn set_undecided_instead(ck: &mut Checker, r: StmtRef, access: Access) {
    // A waiting multi-row write may have written part of its rows, which a
    // read-uncommitted view of its table would show; a deadlock victim's rows
    // may already be gone. The statement is compared on the view without
    // either: agreement decides it, a difference leaves the case undecided.
    ck.undecided_instead = None;
    if insert_rows_decided_apart(ck, r) {
        ck.undecided_instead = Some(Undecided::InsertRowsDecidedApart);
    } else if upsert_key_order_unknown(ck, r) {
        ck.undecided_instead = Some(Undecided::UpsertKeyOrder);
    } else if release_unobserved(ck, r) {
        ck.undecided_instead = Some(Undecided::ReleaseBeforeObserved);
    } else if view_rule(ck, r, access) == ViewRule::Uncommitted {
        if partial_write_visible(ck, r) {
            ck.undecided_instead = Some(Undecided::PartialWriteVisible);
        } else if ck.doomed_txns.iter().any(|t| *t != r.txn) {
            ck.undecided_instead = Some(Undecided::DoomedTransaction);
        }
    }
}

/// A multi-row INSERT that skips or updates rows on a key conflict, which
/// waited, where the engine decides each row at its turn
/// (`EngineProfile::insert_conflicts_decided_per_row`): the rows before the
/// wait were decided on an earlier state than the one it is judged on.
fn insert_rows_decided_apart(ck: &Checker, r: StmtRef) -> bool {
    ck.insert_conflicts_per_row
        && ck.blocked.contains(&r)
        && ck.case.stmt(r).is_some_and(|c| {
            matches!(&c.stmt, Stmt::Insert(i)
                if i.proposed_rows() > 1
                    && matches!(i.on_conflict, OnConflict::Ignore | OnConflict::Update { .. }))
        })
}

/// A MariaDB `INSERT ... ON DUPLICATE KEY UPDATE` (it names no conflict
/// target) into a table with two or more unique keys, one of them made by a
/// later `CREATE UNIQUE INDEX`. A proposed row that duplicates two rows on
/// different keys updates one of them, and the manuals do not say which (MariaDB
/// KB: "If more than one unique index is matched, only the first is
/// updated"; MySQL 5.7 13.2.5.2: "only one row is updated"). InnoDB checks its
/// indexes in the order it made them, an index added later last, while the
/// scratch copy makes every key in one CREATE TEMPORARY TABLE, where MariaDB
/// sorts NOT NULL keys first and a temporary table cannot be altered in
/// place (docs/engine-facts.md): the scratch run may update the other row.
fn upsert_key_order_unknown(ck: &Checker, r: StmtRef) -> bool {
    ck.scratch.dialect() == crate::sql::Dialect::Mysql
        && ck.case.stmt(r).is_some_and(|c| {
            matches!(&c.stmt, Stmt::Insert(i)
            if matches!(i.on_conflict, OnConflict::Update { .. })
                && ck.case.schema.table(&i.table).is_some_and(|t| {
                    t.unique_keys().len() >= 2 && t.indexes.iter().any(|x| x.unique)
                }))
        })
}

/// The judgement of a statement that resumed a scan after waiting, where
/// the engine skips rows behind its cursor; `None` for other statements.
fn judge_resumed_scan(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    was_blocked: bool,
    actual: &Outcome,
) -> Option<Result<(), Stop>> {
    // InnoDB READ COMMITTED/UNCOMMITTED scans without gap locks and skips rows
    // whose newest committed version does not match: a statement that waited
    // halfway through its scan may miss rows committed behind its cursor.
    if !(was_blocked
        && ck.rule_of(r.txn).resumed_scan.is_some()
        && view_rule(ck, r, access) == ViewRule::LatestCommitted)
    {
        return None;
    }
    match ck.case.stmt(r)?.stmt {
        Stmt::Update(_) | Stmt::Delete(_) => Some(resumed::judge(ck, r, access, pos, actual)),
        // An INSERT reads nothing: its key checks after the wait see
        // the newest committed rows, as modelled below.
        Stmt::Insert(_) => None,
        _ => Some(resumed::judge_locking_read(ck, r, access, pos, actual)),
    }
}

/// The engine's error (`actual`) differs from the scratch evaluation's:
/// undecided, with both in the reason (`error-mismatch:ACTUAL-vs-PREDICTED`).
fn error_mismatch(actual: Option<ErrorClass>, eval: &Evaluation) -> Stop {
    undecided(Undecided::ErrorMismatch {
        actual,
        predicted: eval.outcome.error.as_ref().map(|e| e.class),
    })
}

/// A share-mode locking read that ran as written (`Engine::keep_plans`: its
/// rows observed, not its versions) over a table with a secondary index:
/// InnoDB locks index records, and a read that the plan serves from a
/// covering secondary index does not meet an exclusive lock a writer holds
/// on the clustered record only (an UPDATE that left that index's columns
/// alone). The row-level lock model cannot tell, so no block is predicted.
/// A FOREIGN KEY counts: InnoDB makes an index for its columns.
fn covering_share_read(ck: &Checker, r: StmtRef, access: Access, actual: &Outcome) -> bool {
    let Some(Stmt::Select(sel)) = ck.case.stmt(r).map(|c| &c.stmt) else {
        return false;
    };
    let share = ck.rule_of(r.txn).lock_of(access, in_txn(ck, r)) == Some(LockMode::ForShare);
    let as_written = !actual.reads_complete && actual.reads.is_empty();
    let indexed = sel.from.iter().any(|f| {
        ck.case
            .schema
            .tables
            .iter()
            .find(|t| t.name == f.table)
            .is_some_and(|t| {
                !t.indexes.is_empty() || !t.uniques.is_empty() || !t.foreign_keys.is_empty()
            })
    });
    share && as_written && indexed
}

fn label(ck: &Checker, r: StmtRef) -> String {
    let op = ck.case.stmt(r).map_or(0, |s| s.op);
    format!("T{}#{} (op {op})", r.txn, r.index)
}

fn in_txn(ck: &Checker, r: StmtRef) -> bool {
    ck.txns.get(&r.txn).is_some_and(|t| !t.autocommit)
}

fn view_rule(ck: &Checker, r: StmtRef, access: Access) -> ViewRule {
    ck.rule_of(r.txn).view_rule(access, in_txn(ck, r))
}

/// The snapshot a statement reads from, without recording it.
fn peek_snapshot(ck: &Checker, r: StmtRef, access: Access, pos: Pos) -> SnapshotInfo {
    let start = ck.submitted_at.get(&r).copied().unwrap_or(pos);
    let Some(t) = ck.txns.get(&r.txn) else {
        return SnapshotInfo {
            at: None,
            prior: false,
        };
    };
    if t.autocommit {
        let at = if ck.rule_of(r.txn).snapshot == SnapshotPoint::FirstStatementEnd {
            pos
        } else {
            start
        };
        return SnapshotInfo {
            at: Some(at),
            prior: false,
        };
    }
    let prior = t.snapshot.is_some();
    let at = match ck.rule_of(r.txn).snapshot {
        SnapshotPoint::EachStatement => Some(start),
        SnapshotPoint::FirstStatementStart | SnapshotPoint::Begin => t.snapshot.or(Some(start)),
        SnapshotPoint::FirstStatementEnd => t.snapshot.or(Some(pos)),
        SnapshotPoint::FirstConsistentRead => {
            if view_rule(ck, r, access) == ViewRule::Snapshot {
                t.snapshot.or(Some(pos))
            } else {
                t.snapshot
            }
        }
    };
    SnapshotInfo { at, prior }
}

/// The snapshot a statement reads from, recording the transaction's snapshot
/// where this statement takes it.
///
/// InnoDB creates a read view at the first consistent read that reaches the
/// storage engine; a read that read no row may have been answered without it.
/// Such a read leaves the snapshot tentative; a later read decides it if no
/// other transaction committed in between (both points then see the same),
/// else the case is undecided.
fn take_snapshot(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    actual: &Outcome,
) -> Result<SnapshotInfo, Stop> {
    let info = peek_snapshot(ck, r, access, pos);
    let per_txn = !matches!(ck.rule_of(r.txn).snapshot, SnapshotPoint::EachStatement);
    let lazy_view = ck.rule_of(r.txn).snapshot == SnapshotPoint::FirstConsistentRead
        && view_rule(ck, r, access) == ViewRule::Snapshot;
    let own = Writer::Txn(r.txn);
    let Some(t) = ck.txns.get(&r.txn) else {
        return Ok(info);
    };
    if t.autocommit || !per_txn || t.snapshot.is_some() {
        return Ok(info);
    }
    if !lazy_view {
        if let Some(t) = ck.txns.get_mut(&r.txn) {
            t.snapshot = info.at;
        }
        return Ok(info);
    }
    if let Some(tentative) = t.tentative_snapshot {
        if ck.store.commits_between(own, tentative, pos) {
            return Err(undecided(Undecided::ReadViewPointUncertain));
        }
    }
    let touched_table = !actual.reads.is_empty();
    if let Some(t) = ck.txns.get_mut(&r.txn) {
        if touched_table {
            t.snapshot = info.at;
        } else {
            t.tentative_snapshot.get_or_insert(pos);
        }
    }
    Ok(info)
}

fn lock_database(ck: &mut Checker, r: StmtRef, pos: Pos) {
    if !ck.rule_of(r.txn).row_locks && in_txn(ck, r) {
        ck.locks.lock_database(r.txn, pos);
    }
}

fn compare_and_apply(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    eval: &Evaluation,
    actual: &Outcome,
) -> Result<(), Stop> {
    let Some(stmt) = ck.case.stmt(r).map(|c| c.stmt.clone()) else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    if let Stmt::Select(sel) = &stmt {
        // A LIMIT may cut among rows the ORDER BY does not order; a
        // cursor's SELECT is ordered by its full primary key, so the rows
        // its steps returned are the one prefix of the result.
        let cut = sel.cursor.is_none()
            && sel
                .limit
                .is_some_and(|l| eval.outcome.rows.len() as u64 >= l);
        if !cut && !same_bag(&eval.outcome.rows, &actual.rows) {
            let (only_expected, only_actual) = bag_diff(&eval.outcome.rows, &actual.rows);
            let summary = result_summary(&label(ck, r), only_expected.len(), only_actual.len());
            return violation(
                ck,
                r,
                "result",
                summary,
                json!({ "only_expected": only_expected, "only_actual": only_actual }),
                eval,
                actual,
            );
        }
    } else {
        let predicted = sorted_writes(&eval.writes);
        let same = if actual.writes_complete {
            sorted_writes(&actual.writes) == predicted
        } else {
            // Rows instrumentation could not observe (REPLACE deletions, upsert
            // inserts on MariaDB; rows a multi-row REPLACE inserted and deleted
            // again): rows on both sides must agree, the final state checks the rest.
            // A row that was there before the statement and that the engine was
            // seen writing must be predicted too (a row the statement inserted
            // may be gone again at its end, out of the scratch run's sight).
            let own = match &stmt {
                Stmt::Insert(i) => i.rids.as_slice(),
                _ => &[],
            };
            sorted_writes(&actual.writes).iter().all(|w| {
                let mut same_row = predicted
                    .iter()
                    .filter(|p| p.table == w.table && p.rid == w.rid)
                    .peekable();
                (own.contains(&w.rid) || same_row.peek().is_some())
                    && same_row.all(|p| p.after == w.after)
            })
        };
        if !same {
            let summary = format!(
                "{} wrote other rows or versions than its view predicts",
                label(ck, r)
            );
            return violation(ck, r, "write-set", summary, json!({}), eval, actual);
        }
        // Rows it matched but left unchanged (MariaDB UPDATE): the same rows.
        let rows = |u: &[crate::model::RowVersion]| {
            let mut v: Vec<(String, i64)> = u.iter().map(|x| (x.table.clone(), x.rid)).collect();
            v.sort();
            v
        };
        let any_unchanged = !actual.unchanged.is_empty() || !eval.outcome.unchanged.is_empty();
        if actual.writes_complete
            && any_unchanged
            && rows(&actual.unchanged) != rows(&eval.outcome.unchanged)
        {
            let summary = format!(
                "{} matched other rows without changing them than its view predicts",
                label(ck, r)
            );
            let evidence = json!({
                "unchanged_expected": eval.outcome.unchanged,
                "unchanged_actual": actual.unchanged,
            });
            return violation(ck, r, "write-set", summary, evidence, eval, actual);
        }
    }
    apply(ck, r, access, pos, eval, actual)
}

/// Rows an UPDATE matched without changing them are its transaction's own
/// rows from then on (a transaction sees its own updates; MariaDB does not
/// for such rows: known issue MDEV-26642): the version it
/// matched becomes an own version with the same values, and the row is locked.
fn apply_unchanged(
    ck: &mut Checker,
    r: StmtRef,
    pos: Pos,
    eval: &Evaluation,
    locks: bool,
) -> Result<(), Stop> {
    let open = in_txn(ck, r);
    for u in &eval.outcome.unchanged {
        let Some(matched) = ck.store.newest(&u.table, u.rid).cloned() else {
            return Err(undecided(Undecided::UnchangedRowUnknown));
        };
        if matched.wl != u.wl || matched.deleted {
            return Err(undecided(Undecided::UnchangedRowUnknown));
        }
        if locks && ck.row_locks_of(r.txn) {
            ck.locks
                .lock_row(&u.table, u.rid, r.txn, LockMode::ForUpdate, pos);
        }
        ck.store.push(
            &u.table,
            u.rid,
            Version {
                writer: Writer::Txn(r.txn),
                written_at: pos,
                committed_at: (!open).then_some(pos),
                ..matched
            },
        );
    }
    Ok(())
}

/// Extends the version history and the locks with what the statement did.
fn apply(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    eval: &Evaluation,
    actual: &Outcome,
) -> Result<(), Stop> {
    let txn = r.txn;
    let open = in_txn(ck, r);
    let writer = Writer::Txn(txn);
    let committed_at = (!open).then_some(pos);
    // A transaction that may already have been rolled back holds no lock the
    // model relies on.
    let locks = open && !ck.doomed_txns.contains(&txn);
    if access == Access::Write && locks {
        lock_database(ck, r, pos);
    }
    for w in &eval.writes {
        let previous = ck.store.newest(&w.table, w.rid).cloned();
        let table = ck.case.schema.table(&w.table).cloned();
        let version = match &w.after {
            Some(after) => {
                let Some((_, row)) = eval.written_rows.iter().find(|(rid, _)| *rid == w.rid) else {
                    return Err(undecided(Undecided::WriteNotReadBack));
                };
                Version {
                    row: row.clone(),
                    wl: after.clone(),
                    writer,
                    deleted: false,
                    written_at: pos,
                    committed_at,
                }
            }
            None => Version {
                row: previous.as_ref().map(|v| v.row.clone()).unwrap_or_default(),
                wl: w
                    .before
                    .clone()
                    .ok_or_else(|| undecided(Undecided::DeletedRowVersionUnknown))?,
                writer,
                deleted: true,
                written_at: pos,
                committed_at,
            },
        };
        if locks && ck.row_locks_of(r.txn) {
            if previous.as_ref().is_none_or(|p| p.deleted) {
                ck.locks.lock_inserted_row(&w.table, w.rid, txn, pos);
            } else {
                ck.locks
                    .lock_row(&w.table, w.rid, txn, LockMode::ForUpdate, pos);
            }
            if let Some(t) = &table {
                if let Some(prev) = previous.as_ref().filter(|p| !p.deleted) {
                    ck.locks.lock_keys(t, &prev.row, txn, pos);
                }
                if !version.deleted {
                    ck.locks.lock_keys(t, &version.row, txn, pos);
                }
            }
        }
        ck.store.push(&w.table, w.rid, version);
    }
    apply_unchanged(ck, r, pos, eval, locks)?;
    if let (Some(mode), true, true) = (
        ck.rule_of(r.txn).lock_of(access, open),
        access != Access::Write && locks && ck.rule_of(r.txn).row_locks,
        actual.reads_complete,
    ) {
        for v in &actual.reads {
            ck.locks.lock_row(&v.table, v.rid, txn, mode, pos);
        }
    }
    Ok(())
}

fn violation(
    ck: &mut Checker,
    r: StmtRef,
    kind: &str,
    summary: String,
    details: serde_json::Value,
    eval: &Evaluation,
    actual: &Outcome,
) -> Result<(), Stop> {
    if let Some(reason) = ck.undecided_instead.take() {
        return Err(undecided(reason));
    }
    if matches!(kind, "result" | "write-set") {
        if let Some(f) = query_bug::query_bug(ck, r, eval, actual)? {
            ck.findings.push(f);
            return Err(Stop::Violation);
        }
    }
    let plain = ck
        .prepared
        .get(&r)
        .map(|p| p.plain.clone())
        .unwrap_or_default();
    ck.findings.push(Finding::new(
        crate::oracle::OracleKind::View,
        kind,
        summary,
        json!({
            "stmt": format!("T{}#{}", r.txn, r.index),
            "sql": plain,
            "isolation": ck.history.isolation,
            "details": details,
            "view": eval.view,
            "expected": { "rows": eval.outcome.rows, "writes": eval.writes, "error": eval.outcome.error },
            "actual": { "rows": actual.rows, "writes": actual.writes, "error": actual.error },
        }),
    )
    .about([r]));
    Err(Stop::Violation)
}

/// What a result difference is, in words: rows the statement returned that
/// its view does not contain, rows of its view it did not return, or both.
fn result_summary(label: &str, missing: usize, extra: usize) -> String {
    match (missing, extra) {
        (0, n) => format!("{label} returned {n} row(s) its view does not contain"),
        (m, 0) => format!("{label} did not return {m} row(s) its view contains"),
        (m, n) => {
            format!("{label} returned {n} row(s) its view does not contain and not {m} it contains")
        }
    }
}

#[cfg(test)]
mod summary_tests {
    #[test]
    fn a_result_difference_says_whether_rows_are_missing_or_extra() {
        let s = |m, n| super::result_summary("T1#1", m, n);
        assert_eq!(s(0, 2), "T1#1 returned 2 row(s) its view does not contain");
        assert_eq!(s(1, 0), "T1#1 did not return 1 row(s) its view contains");
        assert_eq!(
            s(1, 3),
            "T1#1 returned 3 row(s) its view does not contain and not 1 it contains"
        );
    }
}
