//! turso's profile (the Rust rewrite of SQLite, crate `turso`), in its two
//! modes. Always compiled, so offline tools read turso findings without the
//! `turso` feature.
//!
//! - **Default mode** (`turso:PATH`): SQLite's single writer. txfuzz sets no
//!   busy timeout, so a statement that would wait for the write lock fails at
//!   once with `Busy` instead (the engine has no busy handler through which
//!   txfuzz could see a wait).
//! - **MVCC mode** (`turso-mvcc:PATH`, `PRAGMA journal_mode = 'mvcc'`, every
//!   transaction `BEGIN CONCURRENT`): snapshot isolation. Sources: turso's
//!   documentation, "Concurrent Writes" (docs.turso.tech/tursodb/concurrent-writes):
//!   "With MVCC (Multi-Version Concurrency Control), multiple connections can
//!   write simultaneously. If two transactions modify the same data, one will
//!   receive a conflict error and must roll back and retry ... Transactions
//!   that write to non-overlapping data proceed without conflict"; and the
//!   project's MVCC guide (tursodatabase/turso, skill `mvcc`): "MVCC: multiple
//!   row versions, snapshot isolation. Each transaction sees consistent
//!   snapshot at begin time." A writer of a row another open transaction
//!   wrote, or that was committed after its snapshot, fails at once with
//!   "Write-write conflict" (no lock waits) and its transaction is rolled back.

use crate::engine::profile::{
    AnomalyPermission, Conflict, EngineProfile, Rule, SnapshotPoint, Source, StartRule,
    SubqueryRead, ViewRule,
};
use crate::model::{Anomaly, ErrorClass, Features, Isolation, StartMode};
use std::collections::BTreeMap;

/// The setting that says which mode a turso engine runs in.
pub const MODE_SETTING: &str = "journal_mode";
/// Its value in MVCC mode (else `wal`).
pub const MVCC: &str = "mvcc";

/// MVCC mode: reads and writes see the snapshot taken at BEGIN CONCURRENT;
/// a write to a row written by another open transaction or committed since
/// the snapshot aborts the transaction; no locks are waited for.
pub fn mvcc_rule() -> Rule {
    Rule {
        plain_read: ViewRule::Snapshot,
        locking_read: ViewRule::Snapshot,
        write: ViewRule::Snapshot,
        snapshot: SnapshotPoint::Begin,
        conflict: Conflict::Abort(ErrorClass::SerializationFailure),
        plain_read_is_locking: false,
        // An uncommitted version marks its row as written (the conflict
        // check), as a row lock would; nobody waits for it.
        row_locks: true,
        resumed_scan: None,
        locking_read_subqueries: SubqueryRead::AsOuter,
        write_subqueries: SubqueryRead::AsOuter,
        aborts_anywhere: None,
        keys_checked_at_commit: true,
        write_lock_at_begin: false,
        read_only_error: None,
        read_only_refused_locks: &[],
    }
}

/// The profile of a turso engine with `settings` (`journal_mode`: `mvcc` or
/// `wal`).
pub fn profile(settings: &BTreeMap<String, String>) -> EngineProfile {
    let mvcc = settings.get(MODE_SETTING).is_some_and(|m| m == MVCC);
    let mut p = crate::engine::sqlite::profile(settings);
    p.engine = "turso";
    p.lock_waits = false;
    // Features turso 0.8 does not implement are switched off here
    // (tests/turso.rs runs each kind the generator uses): it has no PRAGMA
    // defer_foreign_keys.
    p.features = Features {
        set_constraints: false,
        deferred_key_shapes: true,
        parent_replaces: true,
        null_side_subqueries: true,
        ..Features::sqlite()
    };
    p.start_rules = crate::engine::sqlite::immediate_start_rules(Source {
        doc: "turso documentation, SQL reference \"Transactions\" (https://docs.turso.tech/sql-reference/statements/transactions): \"DEFERRED: Default. No locks are acquired until the first read or write operation ... IMMEDIATE: Acquires a write lock immediately when BEGIN is executed. Other connections can still read but cannot write until the transaction completes. EXCLUSIVE: Same behavior as IMMEDIATE in Turso\"",
        test: "tests/start_modes.rs::turso_begin_immediate_takes_the_write_lock_at_begin",
    });
    if mvcc {
        p.isolations = vec![Isolation::RepeatableRead];
        p.rules = vec![(Isolation::RepeatableRead, mvcc_rule())];
        // BEGIN CONCURRENT first (the mode a format-1 BEGIN meant here),
        // then the modes that take turso's single write lock beside the
        // MVCC transactions: DEFERRED at its first write, IMMEDIATE and
        // EXCLUSIVE at BEGIN. Their rules are SQLite's (one writer, a
        // writer with a stale snapshot refused); beside CONCURRENT
        // transactions `view` judges both kinds (`Checker::mixed_conflicts`):
        // a CONCURRENT transaction cannot commit changes while another holds
        // the write lock, and the lock holder's writes are not refused
        // (turso "Transactions": other connections "cannot write until the
        // transaction completes"; turso refuses them: tursodatabase/turso#5954,
        // `view:spurious-abort`).
        p.features.start_modes = &[
            StartMode::Concurrent,
            StartMode::Deferred,
            StartMode::Immediate,
            StartMode::Exclusive,
            StartMode::Savepoint,
        ];
        let exclusive = Source {
            doc: "turso documentation, SQL reference \"Transactions\" (https://docs.turso.tech/sql-reference/statements/transactions): DEFERRED takes the write lock at the first write, IMMEDIATE and EXCLUSIVE at BEGIN, \"Other connections can still read but cannot write until the transaction completes\"; \"Concurrent Writes\": BEGIN CONCURRENT instead of BEGIN lets other writers proceed",
            test: "tests/start_modes.rs::turso_mvcc_exclusive_transactions_take_the_write_lock",
        };
        // SAVEPOINT outside a transaction starts one as BEGIN DEFERRED.
        let deferred = |mode| matches!(mode, StartMode::Deferred | StartMode::Savepoint);
        p.start_rules = [
            StartMode::Deferred,
            StartMode::Immediate,
            StartMode::Exclusive,
            StartMode::Savepoint,
        ]
        .into_iter()
        .map(|mode| StartRule {
            mode,
            levels: &[],
            rule: Some(crate::engine::sqlite::rule()),
            snapshot: (!deferred(mode)).then_some(SnapshotPoint::Begin),
            write_lock_at_begin: !deferred(mode),
            source: exclusive,
        })
        .collect();
        p.aborting_errors.push(ErrorClass::SerializationFailure);
        p.read_only_at_snapshot = true;
        // As PostgreSQL REPEATABLE READ: writes find their rows on the
        // snapshot, so a write that matched nothing does not conflict with a
        // concurrent insert of a matching row, and the commit order is not a
        // serial order for writes (`wss` judges only cases where each write
        // saw the units committed before its own).
        p.write_conflicts_detected = Vec::new();
        p.serializable_reads_in_commit_order = false;
        // ROLLBACK TO SAVEPOINT removes the versions written since, and with
        // them the write-write conflict they would cause
        // (tests/turso.rs::mvcc_rollback_to_savepoint_releases_the_rows_written_since).
        p.savepoint_rollback_releases_locks = true;
        p.permitted_anomalies = vec![AnomalyPermission {
            level: Isolation::RepeatableRead,
            anomalies: vec![Anomaly::G2Item],
            source: Source {
                doc: "turso documentation, Concurrent Writes: BEGIN CONCURRENT transactions \
                      that write to non-overlapping data proceed without conflict; MVCC guide: \
                      snapshot isolation, each transaction sees a consistent snapshot at begin \
                      time (snapshot isolation permits write skew, Berenson et al. 1995, A5B)",
                test: "tests/turso.rs::mvcc_repeatable_read_permits_write_skew",
            },
        }];
    }
    p
}
