//! SQLite's profile: WAL mode, one writer at a time, snapshot reads, always
//! serializable (docs/engine-facts.md).

use crate::engine::profile::{
    Conflict, EngineProfile, Rule, SnapshotPoint, Source, StartRule, SubqueryRead, ViewRule,
};
use crate::model::{ErrorClass, Features, Isolation, StartMode};
use std::collections::BTreeMap;

/// The rules of SQLite in WAL mode ("Isolation In SQLite"; "Write-Ahead
/// Logging"): reads see the snapshot taken when the transaction first reads,
/// one writer at a time, a writer whose snapshot is stale is refused with
/// SQLITE_BUSY_SNAPSHOT.
pub fn rule() -> Rule {
    Rule {
        plain_read: ViewRule::Snapshot,
        locking_read: ViewRule::Snapshot,
        write: ViewRule::Snapshot,
        snapshot: SnapshotPoint::FirstStatementEnd,
        conflict: Conflict::SingleWriter,
        plain_read_is_locking: false,
        row_locks: false,
        resumed_scan: None,
        locking_read_subqueries: SubqueryRead::AsOuter,
        write_subqueries: SubqueryRead::AsOuter,
        aborts_anywhere: None,
        keys_checked_at_commit: false,
        write_lock_at_begin: false,
        read_only_error: None,
        read_only_refused_locks: &[],
    }
}

/// `BEGIN IMMEDIATE` and `BEGIN EXCLUSIVE` (the same in WAL mode): the
/// write lock and the snapshot at BEGIN. DEFERRED is the default.
pub fn immediate_start_rules(source: Source) -> Vec<StartRule> {
    [StartMode::Immediate, StartMode::Exclusive]
        .into_iter()
        .map(|mode| StartRule {
            mode,
            levels: &[],
            rule: None,
            snapshot: Some(SnapshotPoint::Begin),
            write_lock_at_begin: true,
            source,
        })
        .collect()
}

/// BUSY (refused lock upgrade / stale snapshot) and interrupts end the
/// transaction; constraint errors roll back the statement (ABORT conflict
/// resolution). Nothing is permitted: SQLite is serializable.
pub fn profile(_settings: &BTreeMap<String, String>) -> EngineProfile {
    EngineProfile {
        engine: "sqlite",
        embedded: true,
        isolations: vec![Isolation::Serializable],
        aborting_errors: vec![
            ErrorClass::Busy,
            ErrorClass::Deadlock,
            ErrorClass::Cancelled,
            ErrorClass::LockWaitTimeout,
            ErrorClass::ConnectionLost,
            ErrorClass::Internal,
        ],
        all_errors_abort: false,
        read_only_at_snapshot: true,
        write_conflicts_detected: vec![Isolation::Serializable],
        serializable_reads_in_commit_order: true,
        savepoint_rollback_releases_locks: false,
        unique_checked_per_row: None,
        insert_conflicts_decided_per_row: None,
        constraint_checks_outside_snapshot: Vec::new(),
        locking_read_subqueries_use_statement_snapshot: false,
        permitted_anomalies: Vec::new(),
        rules: vec![(Isolation::Serializable, rule())],
        start_rules: immediate_start_rules(Source {
            doc: "SQLite \"BEGIN TRANSACTION\" (https://sqlite.org/lang_transaction.html): \"IMMEDIATE causes the database connection to start a new write immediately, without waiting for a write statement. The BEGIN IMMEDIATE might fail with SQLITE_BUSY if another write transaction is already active on another database connection ... EXCLUSIVE and IMMEDIATE are the same in WAL mode\"; a write transaction in WAL mode reads the newest snapshot (\"Write-Ahead Logging\")",
            test: "tests/start_modes.rs::sqlite_begin_immediate_takes_the_write_lock_at_begin",
        }),
        read_only: None,
        features: Features::sqlite(),
        temporary_foreign_keys: true,
        unique_nulls_distinct: true,
        own_writes_hide_same_key: false,
        uncommitted_reads_inconsistent: None,
        own_writes_over_snapshot: None,
        reads_valid_after_commit: None,
        guarantee_among_own_level_only: None,
        lock_waits: true,
        session_settings: None,
    }
}
