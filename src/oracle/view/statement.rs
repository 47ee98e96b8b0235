//! One data statement: its snapshot, its view, its evaluation on the scratch
//! tables, the expected schedule (block, abort or run) and the comparison with
//! what the engine did. Applying it extends the version history and the locks.

use super::checker::{undecided, Checker, Stop};
use super::locks::LockTable;
use super::versions::{Pos, Sight, Version, Writer};
use super::visibility::{Access, Conflict, Family, SnapshotPoint, ViewRule};
use super::ORACLE;
use crate::instrument::Shape;
use crate::model::{
    ErrorClass, Expr, Isolation, LockMode, OnConflict, Outcome, RowWrite, Select, Stmt, StmtRef,
    Value,
};
use crate::oracle::compare::{bag_diff, same_bag};
use crate::oracle::{Finding, Verdict};
use serde_json::json;

/// What the model expects the engine to do with a statement.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    /// It must wait for this transaction's lock.
    Block(u32),
    /// It must fail with a concurrency error and abort its transaction.
    Abort(ErrorClass, &'static str),
    /// It runs; its result is the scratch evaluation.
    Run,
}

/// A statement evaluated on its predicted view.
struct Evaluation {
    outcome: Outcome,
    /// Rows it locks or writes, with the lock mode (for blocking and conflicts).
    targets: Vec<(String, i64, LockMode)>,
    /// The rows it wrote: the difference of its scratch table before and after
    /// (so rows an upsert or REPLACE deleted or inserted are seen too).
    writes: Vec<RowWrite>,
    /// Written rows as read back from the scratch table, by row id.
    written_rows: Vec<(i64, Vec<Value>)>,
    /// The view it ran on, per table (evidence).
    view: serde_json::Value,
}

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
        Stmt::Insert(i) => i.rows.iter().flatten().any(Expr::has_subquery),
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
fn unsupported(ck: &Checker, stmt: &Stmt) -> Option<&'static str> {
    match stmt {
        Stmt::Insert(_) if has_subquery(stmt) => Some("insert-subquery"),
        // InnoDB READ UNCOMMITTED: the subqueries of writes and locking reads
        // are plain (dirty) reads while the outer rows are current reads.
        Stmt::Update(_) | Stmt::Delete(_) | Stmt::Select(Select { lock: Some(_), .. })
            if ck.family == Family::Innodb
                && ck.history.isolation == Isolation::ReadUncommitted
                && has_subquery(stmt) =>
        {
            Some("read-uncommitted-subquery")
        }
        // MariaDB's scratch tables have no foreign keys, and INSERT IGNORE
        // skips rows that violate one instead of failing.
        Stmt::Insert(i)
            if ck.family == Family::Innodb
                && i.on_conflict == OnConflict::Ignore
                && ck
                    .case
                    .schema
                    .table(&i.table)
                    .is_some_and(|t| !t.foreign_keys.is_empty()) =>
        {
            Some("insert-ignore-foreign-key")
        }
        _ => None,
    }
}

/// A statement the engine reported as blocked: the model must predict a lock
/// conflict where it was submitted, else the case is undecided.
pub fn on_blocked_submit(ck: &mut Checker, r: StmtRef, pos: Pos) -> Result<(), Stop> {
    let Some(cs) = ck.case.stmt(r) else {
        return Err(undecided("unknown-statement"));
    };
    let Some(access) = Access::of(&cs.stmt) else {
        return Err(undecided("unpredicted-block"));
    };
    if let Some(reason) = unsupported(ck, &cs.stmt) {
        return Err(undecided(reason));
    }
    let snap = peek_snapshot(ck, r, access, pos);
    let eval = evaluate(ck, r, access, &snap, pos)?;
    match expect(ck, r, access, &eval, &snap, pos, true) {
        Expect::Block(_) => Ok(()),
        _ => Err(undecided("unpredicted-block")),
    }
}

pub fn on_complete(ck: &mut Checker, r: StmtRef, pos: Pos) -> Result<(), Stop> {
    let Some(cs) = ck.case.stmt(r) else {
        return Err(undecided("unknown-statement"));
    };
    let Some(access) = Access::of(&cs.stmt) else {
        return Err(undecided("unknown-statement"));
    };
    if let Some(reason) = unsupported(ck, &cs.stmt) {
        return Err(undecided(reason));
    }
    let Some(actual) = ck.history.outcome(r).cloned() else {
        return Err(undecided("no-outcome"));
    };
    let was_blocked = ck.blocked.contains(&r);
    // InnoDB READ COMMITTED/UNCOMMITTED scans without gap locks and skips rows
    // whose newest committed version does not match: a statement that waited
    // halfway through its scan may miss rows committed behind its cursor.
    if was_blocked
        && ck.family == Family::Innodb
        && view_rule(ck, r, access) == ViewRule::LatestCommitted
        && matches!(
            ck.history.isolation,
            Isolation::ReadCommitted | Isolation::ReadUncommitted
        )
    {
        return Err(undecided("resumed-scan"));
    }
    // A waiting multi-row write may have written part of its rows, which a
    // read-uncommitted view would show.
    if view_rule(ck, r, access) == ViewRule::Uncommitted
        && ck
            .waiting
            .iter()
            .any(|w| w.txn != r.txn && ck.case.stmt(*w).is_some_and(|c| c.stmt.kind().is_write()))
    {
        return Err(undecided("partial-write-visible"));
    }
    let snap = take_snapshot(ck, r, access, pos, &actual)?;
    let eval = evaluate(ck, r, access, &snap, pos)?;
    let exp = expect(ck, r, access, &eval, &snap, pos, !was_blocked);
    let actual_class = actual.error.as_ref().map(|e| e.class);
    match (&exp, actual_class) {
        (Expect::Block(holder), None) => {
            let summary = format!(
                "{} must wait for T{holder}'s lock but completed without blocking",
                label(ck, r)
            );
            violation(
                ck,
                r,
                "missed-block",
                summary,
                json!({ "holder": holder }),
                &eval,
                &actual,
            )
        }
        (Expect::Block(_), Some(ErrorClass::Deadlock)) => Ok(()),
        (Expect::Block(_), Some(_)) => Err(undecided("error-instead-of-block")),
        (Expect::Abort(class, why), None) => {
            let summary = format!("{} must fail ({why}) but succeeded", label(ck, r));
            violation(
                ck,
                r,
                "missed-abort",
                summary,
                json!({ "expected_error": class, "why": why }),
                &eval,
                &actual,
            )
        }
        (Expect::Abort(..), Some(c)) if c.is_concurrency() => Ok(()),
        (Expect::Abort(..), Some(_)) => Err(undecided("error-instead-of-abort")),
        (Expect::Run, Some(c)) if c.is_concurrency() => {
            if was_blocked && matches!(c, ErrorClass::Deadlock | ErrorClass::LockWaitTimeout) {
                Ok(())
            } else {
                Err(Stop::Undecided(format!("unpredicted-{}", class_name(c))))
            }
        }
        (Expect::Run, Some(c)) => {
            if eval.outcome.error.as_ref().map(|e| e.class) == Some(c) {
                if access == Access::Write {
                    lock_database(ck, r, pos);
                }
                Ok(())
            } else {
                Err(undecided("error-mismatch"))
            }
        }
        (Expect::Run, None) => {
            if eval.outcome.error.is_some() {
                return Err(undecided("error-mismatch"));
            }
            compare_and_apply(ck, r, access, pos, &eval, &actual)
        }
    }
}

fn class_name(c: ErrorClass) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "error".into())
}

fn label(ck: &Checker, r: StmtRef) -> String {
    let op = ck.case.stmt(r).map_or(0, |s| s.op);
    format!("T{}#{} (op {op})", r.txn, r.index)
}

fn in_txn(ck: &Checker, r: StmtRef) -> bool {
    ck.txns.get(&r.txn).is_some_and(|t| !t.autocommit)
}

fn view_rule(ck: &Checker, r: StmtRef, access: Access) -> ViewRule {
    ck.rule.view_rule(access, in_txn(ck, r))
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
        let at = if ck.family == Family::Sqlite {
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
    let at = match ck.rule.snapshot {
        SnapshotPoint::EachStatement => Some(start),
        SnapshotPoint::FirstStatementStart => t.snapshot.or(Some(start)),
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
    let per_txn = !matches!(ck.rule.snapshot, SnapshotPoint::EachStatement);
    let lazy_view = ck.rule.snapshot == SnapshotPoint::FirstConsistentRead
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
            return Err(undecided("read-view-point-uncertain"));
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

fn rows_of(versions: Vec<&Version>) -> Vec<Vec<Value>> {
    versions.into_iter().map(|v| v.row.clone()).collect()
}

/// Fills every scratch table with the view `sight` gives `reader`.
fn materialise(ck: &mut Checker, reader: Writer, sight: Sight) -> Result<serde_json::Value, Stop> {
    // Schema order: parents before the tables referencing them.
    let tables: Vec<String> = ck
        .case
        .schema
        .tables
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let mut view = serde_json::Map::new();
    // Filling a parent table may empty the tables referencing it (PostgreSQL):
    // a second pass refills those.
    for _pass in 0..2 {
        for t in &tables {
            let rows = rows_of(ck.store.view(t, reader, sight));
            ck.scratch
                .fill(t, &rows)
                .map_err(|_| undecided("view-not-materialisable"))?;
            view.insert(t.clone(), json!(rows));
        }
    }
    if !tables.iter().all(|t| ck.scratch.is_filled(t)) {
        return Err(undecided("view-not-materialisable"));
    }
    Ok(serde_json::Value::Object(view))
}

fn evaluate(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    snap: &SnapshotInfo,
    pos: Pos,
) -> Result<Evaluation, Stop> {
    let Some(stmt) = ck.case.stmt(r).map(|c| c.stmt.clone()) else {
        return Err(undecided("unknown-statement"));
    };
    let Some(p) = ck.prepared.get(&r).cloned() else {
        return Err(undecided("unknown-statement"));
    };
    let reader = Writer::Txn(r.txn);
    let rule = view_rule(ck, r, access);
    let start = ck.submitted_at.get(&r).copied().unwrap_or(pos);
    // Inserts read nothing: on the servers their unique checks see the newest
    // committed rows (they wait for uncommitted ones).
    let rule = match stmt {
        Stmt::Insert(_) if ck.rule.row_locks => ViewRule::LatestCommitted,
        _ => rule,
    };
    let sight = match rule {
        ViewRule::Uncommitted => Sight::Uncommitted,
        ViewRule::LatestCommitted => Sight::CommittedBefore(pos),
        ViewRule::Snapshot => Sight::CommittedBefore(snap.at.unwrap_or(pos)),
        ViewRule::SnapshotThenLatest => Sight::CommittedBefore(start),
    };
    let mut view = materialise(ck, reader, sight)?;
    let lock = ck
        .rule
        .lock_of(access, in_txn(ck, r))
        .unwrap_or(LockMode::ForShare);
    let mut recheck_targets = None;
    if rule == ViewRule::SnapshotThenLatest {
        let (table, where_) = match &stmt {
            Stmt::Update(u) => (u.table.clone(), u.where_.clone()),
            Stmt::Delete(d) => (d.table.clone(), d.where_.clone()),
            _ => return locking_read_on_snapshot(ck, r, reader, sight, pos, lock, view),
        };
        let candidates = ck
            .scratch
            .matching(&table, where_.as_ref())
            .map_err(|_| undecided("scratch-failed"))?;
        let latest = Sight::CommittedBefore(pos);
        let changed = candidates.iter().any(|rid| {
            let then = ck.store.visible(&table, *rid, reader, sight).map(|v| &v.wl);
            let now = ck.store.visible(&table, *rid, reader, latest);
            then != now.map(|v| &v.wl) || now.is_none_or(|v| v.deleted)
        });
        if changed {
            if has_subquery(&stmt) {
                return Err(undecided("recheck-with-subquery"));
            }
            let rows: Vec<Vec<Value>> = candidates
                .iter()
                .filter_map(|rid| ck.store.visible(&table, *rid, reader, latest))
                .filter(|v| !v.deleted)
                .map(|v| v.row.clone())
                .collect();
            ck.scratch
                .fill(&table, &rows)
                .map_err(|_| undecided("view-not-materialisable"))?;
            view = json!({ table.clone(): rows, "rechecked_from_snapshot": true });
        }
        recheck_targets = Some(
            candidates
                .into_iter()
                .map(|rid| (table.clone(), rid, LockMode::ForUpdate))
                .collect::<Vec<_>>(),
        );
    }
    // Rows an UPDATE/DELETE matches on its view: it writes (and locks) each of
    // them when it succeeds, also when the scratch run fails on a constraint.
    if recheck_targets.is_none() {
        let matched = match &stmt {
            Stmt::Update(u) => Some((u.table.clone(), u.where_.clone())),
            Stmt::Delete(d) => Some((d.table.clone(), d.where_.clone())),
            _ => None,
        };
        if let Some((table, where_)) = matched {
            let rids = ck
                .scratch
                .matching(&table, where_.as_ref())
                .map_err(|_| undecided("scratch-failed"))?;
            recheck_targets = Some(
                rids.into_iter()
                    .map(|rid| (table.clone(), rid, LockMode::ForUpdate))
                    .collect(),
            );
        }
    }
    let before = match &p.shape {
        Shape::Write { table, .. } => Some((
            table.clone(),
            ck.scratch
                .read(table)
                .map_err(|_| undecided("scratch-failed"))?,
        )),
        _ => None,
    };
    let outcome = ck.scratch.run(&p);
    let mut writes = Vec::new();
    let mut written_rows = Vec::new();
    if let (Some((table, before)), true) = (before, outcome.ok()) {
        let after = ck
            .scratch
            .read(&table)
            .map_err(|_| undecided("scratch-failed"))?;
        writes = row_diff(&table, &before, &after);
        for w in writes.iter().filter(|w| w.after.is_some()) {
            if let Some(row) = after
                .iter()
                .find(|row| row.first() == Some(&Value::Int(w.rid)))
            {
                written_rows.push((w.rid, row.clone()));
            }
        }
    }
    let targets = match recheck_targets {
        Some(t) => t,
        None if access == Access::Write => writes
            .iter()
            .filter(|w| w.before.is_some())
            .map(|w| (w.table.clone(), w.rid, LockMode::ForUpdate))
            .collect(),
        None if outcome.reads_complete => outcome
            .reads
            .iter()
            .map(|v| (v.table.clone(), v.rid, lock))
            .collect(),
        None => Vec::new(),
    };
    Ok(Evaluation {
        outcome,
        writes,
        targets,
        written_rows,
        view,
    })
}

/// PostgreSQL READ COMMITTED locking read: evaluated on the statement's
/// snapshot; decided only when no row it returns changed since (otherwise the
/// engine re-checks the newest versions, which is not modelled for reads).
fn locking_read_on_snapshot(
    ck: &mut Checker,
    r: StmtRef,
    reader: Writer,
    sight: Sight,
    pos: Pos,
    lock: LockMode,
    view: serde_json::Value,
) -> Result<Evaluation, Stop> {
    let Some(p) = ck.prepared.get(&r).cloned() else {
        return Err(undecided("unknown-statement"));
    };
    let outcome = ck.scratch.run(&p);
    if !outcome.reads_complete {
        return Err(undecided("locking-read-recheck"));
    }
    let latest = Sight::CommittedBefore(pos);
    let changed = outcome.reads.iter().any(|v| {
        let now = ck.store.visible(&v.table, v.rid, reader, latest);
        let then = ck.store.visible(&v.table, v.rid, reader, sight);
        now.map(|x| (&x.wl, x.deleted)) != then.map(|x| (&x.wl, x.deleted))
    });
    if changed {
        return Err(undecided("locking-read-recheck"));
    }
    let targets = outcome
        .reads
        .iter()
        .map(|v| (v.table.clone(), v.rid, lock))
        .collect();
    Ok(Evaluation {
        outcome,
        writes: Vec::new(),
        targets,
        written_rows: Vec::new(),
        view,
    })
}

/// The expected schedule of a statement; `check_locks`: whether it must wait
/// for another transaction's locks (false once it actually waited).
fn expect(
    ck: &Checker,
    r: StmtRef,
    access: Access,
    eval: &Evaluation,
    snap: &SnapshotInfo,
    pos: Pos,
    check_locks: bool,
) -> Expect {
    let txn = r.txn;
    let own = Writer::Txn(txn);
    let locking = ck.rule.lock_of(access, in_txn(ck, r)).is_some();
    if ck.family == Family::Sqlite || matches!(ck.rule.conflict, Conflict::SingleWriter) {
        if access != Access::Write {
            return Expect::Run;
        }
        if let Some(h) = ck.locks.database_holder(txn).filter(|_| check_locks) {
            return if snap.prior {
                Expect::Abort(
                    ErrorClass::Busy,
                    "another transaction holds the write lock and this one holds a read snapshot",
                )
            } else {
                Expect::Block(h)
            };
        }
        if let (true, Some(at)) = (snap.prior, snap.at) {
            if ck.store.commits_between(own, at.saturating_sub(1), pos) {
                return Expect::Abort(
                    ErrorClass::Busy,
                    "a write committed after this transaction's snapshot",
                );
            }
        }
        return Expect::Run;
    }
    if !locking {
        return Expect::Run;
    }
    if check_locks {
        if let Some(h) = conflicting_holder(&ck.locks, ck, r, eval) {
            return Expect::Block(h);
        }
    }
    if let (Conflict::Abort(class), Some(at)) = (ck.rule.conflict, snap.at) {
        let changed = eval.targets.iter().any(|(table, rid, _)| {
            let own_newest = ck
                .store
                .newest(table, *rid)
                .is_some_and(|v| v.writer == own && v.committed_at.is_none());
            !own_newest
                && ck
                    .store
                    .latest_committed(table, *rid)
                    .is_some_and(|v| v.writer != own && v.committed_at.is_some_and(|c| c >= at))
        });
        if changed && in_txn(ck, r) {
            return Expect::Abort(class, "a row it writes or locks changed after its snapshot");
        }
    }
    Expect::Run
}

fn conflicting_holder(
    locks: &LockTable,
    ck: &Checker,
    r: StmtRef,
    eval: &Evaluation,
) -> Option<u32> {
    let txn = r.txn;
    let rows = eval
        .targets
        .iter()
        .find_map(|(table, rid, mode)| locks.row_holder(table, *rid, txn, *mode));
    rows.or_else(|| {
        // Only a plain INSERT that succeeds has checked every row's keys; an
        // upsert or INSERT IGNORE may divert a row on another key first.
        let Some(Stmt::Insert(ins)) = ck.case.stmt(r).map(|c| &c.stmt) else {
            return None;
        };
        if ins.on_conflict != OnConflict::Error {
            return None;
        }
        let t = ck.case.schema.table(&ins.table)?;
        literal_rows(t, ins)
            .iter()
            .find_map(|row| locks.key_holder(t, row, txn))
    })
}

/// The rows an INSERT proposes, as far as they are literals (other values are
/// NULL, which never conflicts): equal literals are equal stored keys, so a
/// key another open transaction holds makes a successful INSERT wait.
fn literal_rows(t: &crate::model::Table, ins: &crate::model::Insert) -> Vec<Vec<Value>> {
    ins.rows
        .iter()
        .map(|vals| {
            let mut row = vec![Value::Null, Value::Null];
            for c in &t.columns {
                let v = match ins.columns.iter().position(|n| n == &c.name) {
                    Some(i) => match vals.get(i) {
                        Some(Expr::Lit(v)) => v.clone(),
                        _ => Value::Null,
                    },
                    None => c.default.clone().unwrap_or(Value::Null),
                };
                row.push(v);
            }
            row
        })
        .collect()
}

fn lock_database(ck: &mut Checker, r: StmtRef, pos: Pos) {
    if !ck.rule.row_locks && in_txn(ck, r) {
        ck.locks.lock_database(r.txn, pos);
    }
}

/// What changed between two readings of a table (`[rid, wl, ...]` rows).
fn row_diff(table: &str, before: &[Vec<Value>], after: &[Vec<Value>]) -> Vec<RowWrite> {
    fn key(row: &[Value]) -> Option<(i64, String)> {
        // Text protocols return a write list like `12` as an integer.
        match (row.first(), row.get(1)) {
            (Some(Value::Int(rid)), Some(Value::Text(wl))) => Some((*rid, wl.clone())),
            (Some(Value::Int(rid)), Some(Value::Int(wl))) => Some((*rid, wl.to_string())),
            _ => None,
        }
    }
    let b: std::collections::BTreeMap<i64, String> = before.iter().filter_map(|r| key(r)).collect();
    let a: std::collections::BTreeMap<i64, String> = after.iter().filter_map(|r| key(r)).collect();
    let mut out = Vec::new();
    for rid in b.keys().chain(a.keys().filter(|k| !b.contains_key(k))) {
        let (old, new) = (b.get(rid), a.get(rid));
        if old != new {
            out.push(RowWrite {
                table: table.to_string(),
                rid: *rid,
                before: old.cloned(),
                after: new.cloned(),
            });
        }
    }
    out
}

/// Writes as net changes per row, sorted: a statement that inserts a row and
/// then updates it (a multi-row upsert) reports two writes of one row.
fn sorted_writes(w: &[RowWrite]) -> Vec<RowWrite> {
    let mut net: Vec<RowWrite> = Vec::new();
    for w in w {
        match net
            .iter_mut()
            .find(|n| n.table == w.table && n.rid == w.rid)
        {
            Some(n) => n.after = w.after.clone(),
            None => net.push(w.clone()),
        }
    }
    net.retain(|n| n.before != n.after);
    net.sort();
    net
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
        return Err(undecided("unknown-statement"));
    };
    if let Stmt::Select(sel) = &stmt {
        let cut = sel
            .limit
            .is_some_and(|l| eval.outcome.rows.len() as u64 >= l);
        if !cut && !same_bag(&eval.outcome.rows, &actual.rows) {
            let (only_expected, only_actual) = bag_diff(&eval.outcome.rows, &actual.rows);
            let summary = format!("{} returned rows its view does not contain", label(ck, r));
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
            sorted_writes(&actual.writes).iter().all(|w| {
                predicted
                    .iter()
                    .filter(|p| p.table == w.table && p.rid == w.rid)
                    .all(|p| p.after == w.after)
            })
        };
        if !same {
            let summary = format!(
                "{} wrote other rows or versions than its view predicts",
                label(ck, r)
            );
            return violation(ck, r, "write-set", summary, json!({}), eval, actual);
        }
    }
    apply(ck, r, access, pos, eval, actual)
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
                    return Err(undecided("write-not-read-back"));
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
                wl: w.before.clone().unwrap_or_default(),
                writer,
                deleted: true,
                written_at: pos,
                committed_at,
            },
        };
        if locks && ck.rule.row_locks {
            ck.locks
                .lock_row(&w.table, w.rid, txn, LockMode::ForUpdate, pos);
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
    if let (Some(mode), true, true) = (
        ck.rule.lock_of(access, open),
        access != Access::Write && locks && ck.rule.row_locks,
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
    let plain = ck
        .prepared
        .get(&r)
        .map(|p| p.plain.clone())
        .unwrap_or_default();
    ck.findings.push(Finding {
        oracle: ORACLE.into(),
        kind: kind.into(),
        verdict: Verdict::Violation,
        summary,
        evidence: json!({
            "stmt": format!("T{}#{}", r.txn, r.index),
            "sql": plain,
            "isolation": ck.history.isolation,
            "details": details,
            "view": eval.view,
            "expected": { "rows": eval.outcome.rows, "writes": eval.writes, "error": eval.outcome.error },
            "actual": { "rows": actual.rows, "writes": actual.writes, "error": actual.error },
        }),
    });
    Err(Stop::Violation)
}
