//! Judging a completed statement: what the engine did against what its
//! evaluation expects (block, abort or run).

use super::*;

/// Judges a statement expected to wait for `holder`'s lock.
pub(super) fn judge_block(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    holder: u32,
    eval: &Evaluation,
    actual: &Outcome,
) -> Result<(), Stop> {
    match actual.error.as_ref().map(|e| e.class) {
        None if covering_share_read(ck, r, access, actual) => {
            Err(undecided(Undecided::CoveringIndexRead))
        }
        None => {
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
                eval,
                actual,
            )
        }
        Some(ErrorClass::Deadlock | ErrorClass::LockWaitTimeout) => Ok(()),
        // It waited without the probe seeing it (a short wait), and failed
        // once the holder finished: judged on the state after the wait.
        Some(c) if ck.rule_of(r.txn).aborts_anywhere == Some(c) => Ok(()),
        Some(c) => {
            if own_error(ck, r, access, pos, eval, c) {
                Ok(())
            } else {
                Err(undecided(Undecided::ErrorInsteadOfBlock))
            }
        }
    }
}

/// Judges a statement expected to fail with `class` (`why`) and abort.
pub(super) fn judge_abort(
    ck: &mut Checker,
    r: StmtRef,
    class: ErrorClass,
    why: &str,
    eval: &Evaluation,
    actual: &Outcome,
) -> Result<(), Stop> {
    match actual.error.as_ref().map(|e| e.class) {
        None => {
            let summary = format!("{} must fail ({why}) but succeeded", label(ck, r));
            violation(
                ck,
                r,
                "missed-abort",
                summary,
                json!({ "expected_error": class, "why": why }),
                eval,
                actual,
            )
        }
        Some(c) if c.is_concurrency() => Ok(()),
        // The statement's own error on its view (a constraint the engine
        // checked before the conflict): it wrote nothing and its transaction
        // goes on, as for any statement that fails.
        Some(c) if eval.outcome.error.as_ref().map(|e| e.class) == Some(c) => Ok(()),
        Some(_) => Err(undecided(Undecided::ErrorInsteadOfAbort)),
    }
}

/// Why the holder of a write lock taken at BEGIN writes without a conflict.
const EXCLUSIVE_WRITER: &str = "turso documentation, SQL reference \"Transactions\": \
    \"IMMEDIATE: Acquires a write lock immediately when BEGIN is executed. Other connections \
    can still read but cannot write until the transaction completes\"; \
    tursodatabase/turso#5954 (a correctness bug: another connection's BEGIN CONCURRENT \
    speculative write refuses the lock holder's write)";

/// A write refused although its transaction holds the write lock its BEGIN
/// took, beside BEGIN CONCURRENT transactions (turso MVCC): nobody else can
/// have written, so no write can conflict with it ([`EXCLUSIVE_WRITER`]).
fn refused_exclusive_writer(ck: &Checker, r: StmtRef, access: Access) -> bool {
    access == Access::Write && ck.mixed_conflicts && super::expect::exclusive_writer(ck, r.txn)
}

/// Judges a statement expected to run: its error or result against the
/// evaluation's, applied when they agree.
pub(super) fn judge_run(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    was_blocked: bool,
    eval: &Evaluation,
    actual: &Outcome,
) -> Result<(), Stop> {
    match actual.error.as_ref().map(|e| e.class) {
        Some(c) if c.is_concurrency() => {
            // A deadlock or lock wait timeout proves a wait (one too short for
            // the probe to report); the statement and, for a deadlock, its
            // transaction are undone. Statements that take no lock cannot wait.
            let waits = ck.rule_of(r.txn).lock_of(access, in_txn(ck, r)).is_some();
            if ((was_blocked || waits)
                && matches!(c, ErrorClass::Deadlock | ErrorClass::LockWaitTimeout))
                || ck.rule_of(r.txn).aborts_anywhere == Some(c)
                || (waits && scanned_row_changed(ck, r, c))
            {
                Ok(())
            } else if refused_exclusive_writer(ck, r, access) {
                let summary = format!(
                    "{} holds the write lock its BEGIN took, yet failed with a concurrency \
                     error: no other connection can write until it completes",
                    label(ck, r)
                );
                let details = json!({ "error_class": c, "why": EXCLUSIVE_WRITER });
                violation(ck, r, "spurious-abort", summary, details, eval, actual)
            } else {
                Err(undecided(Undecided::UnpredictedError(c)))
            }
        }
        Some(c) => {
            if own_error(ck, r, access, pos, eval, c) {
                Ok(())
            } else {
                Err(error_mismatch(Some(c), eval))
            }
        }
        None => {
            if eval.outcome.error.is_some() {
                return Err(error_mismatch(None, eval));
            }
            compare_and_apply(ck, r, access, pos, eval, actual)
        }
    }
}

/// A snapshot conflict (`Conflict::Abort(c)`) the statement may have met on
/// a row it scanned without matching it: which rows a locking statement
/// scans and locks is its plan's choice (InnoDB with
/// `innodb_snapshot_isolation=ON` fails a locking read or write of any
/// record it locks that changed after the read view), so the error is
/// explained when another transaction committed a change of a row of a
/// table the statement reads or writes after the transaction's snapshot
/// (or, where every read locks, after the earliest point its read view can
/// have been made: [`locking_read_view_floor`]).
fn scanned_row_changed(ck: &Checker, r: StmtRef, c: ErrorClass) -> bool {
    if ck.rule_of(r.txn).conflict != Conflict::Abort(c) {
        return false;
    }
    let taken = ck
        .txns
        .get(&r.txn)
        .and_then(|t| t.snapshot.or(t.tentative_snapshot));
    let Some(at) = taken.or_else(|| locking_read_view_floor(ck, r.txn)) else {
        return false;
    };
    let Some(cs) = ck.case.stmt(r) else {
        return false;
    };
    crate::model::walk::tables(&cs.stmt)
        .iter()
        .any(|t| ck.store.table_changed_since(t, Writer::Txn(r.txn), at))
}

/// Where every read of a transaction locks (InnoDB SERIALIZABLE, 17.7.2.1:
/// "InnoDB implicitly converts all plain SELECT statements to SELECT ...
/// FOR SHARE if autocommit is disabled"), its first read operation is a
/// locking read or a write's, and that is where a plain BEGIN creates the
/// read view (MariaDB KB "START TRANSACTION ... WITH CONSISTENT SNAPSHOT":
/// "a standard START TRANSACTION or BEGIN statement ... creates its read
/// view lazily only when the first read operation is performed"; WITH
/// CONSISTENT SNAPSHOT at once). The model takes no snapshot there (no
/// consistent read), so a snapshot conflict is explained from the earliest
/// such point, the transaction's BEGIN (seen on 11.8.9: 1020 after a
/// first locking read, UPDATE or INSERT at SERIALIZABLE, never after one at
/// REPEATABLE READ). Only explains an error; predicts none.
fn locking_read_view_floor(ck: &Checker, txn: u32) -> Option<Pos> {
    let t = ck.txns.get(&txn)?;
    if t.autocommit || !ck.rule_of(txn).plain_read_is_locking {
        return None;
    }
    ck.submitted_at.get(&StmtRef { txn, index: 0 }).copied()
}

/// Whether error `c` is the one the statement gives on its own view (as
/// for any statement that fails); if so, a write still locks the database
/// where the engine locks whole databases.
fn own_error(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    eval: &Evaluation,
    c: ErrorClass,
) -> bool {
    if eval.outcome.error.as_ref().map(|e| e.class) != Some(c) {
        return false;
    }
    if access == Access::Write {
        lock_database(ck, r, pos);
    }
    true
}
