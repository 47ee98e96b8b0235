//! What the model expects the engine to do with a statement: wait for a
//! lock that must conflict, abort on a write conflict, or run.

use super::*;

/// What the model expects the engine to do with a statement.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Expect {
    /// It must wait for this transaction's lock.
    Block(u32),
    /// It must fail with a concurrency error and abort its transaction.
    Abort(ErrorClass, &'static str),
    /// It runs; its result is the scratch evaluation.
    Run,
}

/// The expected schedule of a statement; `check_locks`: whether it must wait
/// for another transaction's locks (false once it actually waited).
pub(super) fn expect(
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
    let locking = ck.rule_of(r.txn).lock_of(access, in_txn(ck, r)).is_some();
    if matches!(ck.rule_of(r.txn).conflict, Conflict::SingleWriter) {
        if access != Access::Write {
            return Expect::Run;
        }
        if let Some(h) = ck.locks.database_holder(txn).filter(|_| check_locks) {
            return if snap.prior {
                Expect::Abort(
                    ErrorClass::Busy,
                    "another transaction holds the write lock and this one holds a read snapshot",
                )
            } else if !ck.lock_waits {
                Expect::Abort(
                    ErrorClass::Busy,
                    "another transaction holds the write lock and the engine does not wait",
                )
            } else {
                Expect::Block(h)
            };
        }
        if let Some(class) = check_locks
            .then(|| mixed_row_conflict(ck, txn, eval))
            .flatten()
        {
            return Expect::Abort(class, "another open transaction wrote a row it writes");
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
    // Beside single-writer transactions, an autocommit write needs the
    // write lock, and nothing waits for it.
    if ck.mixed_conflicts
        && check_locks
        && access == Access::Write
        && !in_txn(ck, r)
        && ck.locks.database_holder(txn).is_some()
    {
        return Expect::Abort(
            ErrorClass::Busy,
            "another transaction holds the write lock and the engine does not wait",
        );
    }
    if !locking {
        return Expect::Run;
    }
    if check_locks && ck.lock_waits {
        if let Some(h) = conflicting_holder(&ck.locks, ck, r, eval) {
            return Expect::Block(h);
        }
    }
    // An engine without lock waits (turso MVCC) refuses a write of a row
    // another open transaction wrote; a key another one inserted is its
    // commit's concern (first committer wins), not the statement's.
    if let (false, Conflict::Abort(class)) = (ck.lock_waits, ck.rule_of(r.txn).conflict) {
        let written = eval
            .targets
            .iter()
            .any(|(table, rid, mode)| ck.locks.row_holder(table, *rid, txn, *mode).is_some());
        if written {
            return Expect::Abort(class, "another open transaction wrote a row it writes");
        }
    }
    if let (Conflict::Abort(class), Some(at)) = (ck.rule_of(r.txn).conflict, snap.at) {
        let changed = eval.targets.iter().any(|(table, rid, _)| {
            let own_newest = ck
                .store
                .newest(table, *rid)
                .is_some_and(|v| v.writer == own && v.committed_at.is_none());
            // A row another transaction matched without changing keeps
            // its version: the engine wrote nothing there to conflict with.
            !own_newest
                && ck
                    .store
                    .latest_committed_change(table, *rid)
                    .is_some_and(|v| v.writer != own && v.committed_at.is_some_and(|c| c >= at))
        });
        if changed && in_txn(ck, r) {
            return Expect::Abort(class, "a row it writes or locks changed after its snapshot");
        }
    }
    Expect::Run
}

/// Beside row-conflict transactions: a row another open transaction wrote
/// is a write-write conflict with its error (turso: an autocommit write
/// against a BEGIN CONCURRENT transaction's uncommitted change,
/// tursodatabase/turso#3122, a maintainer: "how it's supposed to work",
/// after the Hekaton paper). Not for the holder of the write lock taken at
/// BEGIN ([`exclusive_writer`]).
fn mixed_row_conflict(ck: &Checker, txn: u32, eval: &Evaluation) -> Option<ErrorClass> {
    if !ck.mixed_conflicts || exclusive_writer(ck, txn) {
        return None;
    }
    eval.targets.iter().find_map(|(table, rid, mode)| {
        let h = ck.locks.row_holder(table, *rid, txn, *mode)?;
        match ck.rule_of(h).conflict {
            Conflict::Abort(class) => Some(class),
            _ => None,
        }
    })
}

/// Whether `txn` holds the write lock its BEGIN took: "IMMEDIATE: Acquires
/// a write lock immediately when BEGIN is executed. Other connections can
/// still read but cannot write until the transaction completes" (turso
/// documentation, SQL reference "Transactions"), so another connection's
/// speculative write cannot refuse its writes (tursodatabase/turso#5954,
/// labelled a correctness bug).
pub(super) fn exclusive_writer(ck: &Checker, txn: u32) -> bool {
    ck.rule_of(txn).write_lock_at_begin && ck.locks.holds_database(txn)
}

pub(super) fn conflicting_holder(
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
pub(super) fn literal_rows(t: &crate::model::Table, ins: &crate::model::Insert) -> Vec<Vec<Value>> {
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
