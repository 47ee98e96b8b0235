//! Engine profiles: what an engine's documented design permits, as data.

use crate::model::{ErrorClass, Isolation};
use serde::{Deserialize, Serialize};

/// What an error rolls back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorScope {
    /// Only the failing statement; the transaction goes on.
    Statement,
    /// The whole transaction (txfuzz issues ROLLBACK where the engine needs one).
    Transaction,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineProfile {
    /// Isolation levels the engine implements (the default `--isolation` set).
    pub isolations: Vec<Isolation>,
    /// Error classes that abort the whole transaction; every other class rolls
    /// back only the statement.
    pub aborting_errors: Vec<ErrorClass>,
    /// Every error inside a transaction aborts it (PostgreSQL: later statements
    /// fail with 25P02 until ROLLBACK).
    #[serde(default)]
    pub all_errors_abort: bool,
    /// A transaction that wrote nothing is serialised where it took its snapshot
    /// (its first statement), not where it committed. True for snapshot engines
    /// whose writers serialise in commit order (SQLite WAL).
    pub read_only_at_snapshot: bool,
    /// Levels at which the engine identifies every write-write conflict (blocks
    /// or aborts), so a final state unlike the commit-order serial replay is a
    /// bug (WriteCheck's Assumption 1). Elsewhere the engine's design permits
    /// such differences (semi-consistent reads and no gap locks at MariaDB RU/RC,
    /// snapshot-evaluated writes in PostgreSQL) and `wss` findings are
    /// classified as permitted.
    #[serde(default)]
    pub wss_sound: Vec<Isolation>,
    /// ROLLBACK TO SAVEPOINT releases the locks taken after the savepoint, so
    /// what the transaction read there is no longer protected (observed on
    /// MariaDB 10.11 — tests/mariadb.rs — although its documentation says such
    /// locks survive). Findings that rest on such a transaction are classified
    /// as permitted, with a note.
    #[serde(default)]
    pub savepoint_rollback_releases_locks: bool,
    /// Unique constraints are checked row by row during a statement (not at its
    /// end), so a multi-row UPDATE of a key column succeeds or fails depending
    /// on the order its plan visits rows (MariaDB/MySQL; PostgreSQL for
    /// non-deferrable constraints).
    #[serde(default)]
    pub unique_checked_per_row: bool,
    /// Levels at which writes read the transaction's snapshot while their
    /// unique and foreign-key checks see the latest committed rows (PostgreSQL
    /// REPEATABLE READ and SERIALIZABLE): a constraint error there can come from
    /// a row the statement's view does not contain.
    #[serde(default)]
    pub constraint_checks_outside_snapshot: Vec<Isolation>,
    /// A locking read (`FOR UPDATE`/`FOR SHARE`) reads its own rows current,
    /// after any lock wait, but evaluates its subqueries as consistent reads of
    /// the snapshot taken when the statement started (InnoDB: a locking clause
    /// does not lock the rows of nested subqueries; observed on MariaDB 10.11 in
    /// autocommit mode — tests/mariadb.rs). Such a read that waited for a lock
    /// can match no serial order.
    #[serde(default)]
    pub locking_read_subqueries_use_statement_snapshot: bool,
    /// At SERIALIZABLE, the commit/rollback order is a valid serial order for
    /// reads too (false for PostgreSQL SSI, where a reader may serialise before a
    /// writer that committed first).
    pub serializable_reads_in_commit_order: bool,
    /// Dependency-graph anomalies (see `oracle::graph::anomaly`) the engine's
    /// design permits, per level; the `graph` oracle classifies them as
    /// permitted. A level not listed falls back to
    /// [`crate::engine::anomalies::permitted_for`] (which documents the
    /// MariaDB and PostgreSQL values from ENGINE-FACTS.md).
    #[serde(default)]
    pub permitted_anomalies: Vec<(Isolation, Vec<String>)>,
}

impl EngineProfile {
    pub fn error_scope(&self, class: ErrorClass) -> ErrorScope {
        if self.all_errors_abort || self.aborting_errors.contains(&class) {
            ErrorScope::Transaction
        } else {
            ErrorScope::Statement
        }
    }

    /// SQLite in WAL mode: one writer at a time, snapshot reads, always serializable.
    /// BUSY (refused lock upgrade / stale snapshot) and interrupts end the
    /// transaction; constraint errors roll back the statement (ABORT conflict
    /// resolution).
    pub fn sqlite() -> EngineProfile {
        EngineProfile {
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
            wss_sound: vec![Isolation::Serializable],
            read_only_at_snapshot: true,
            savepoint_rollback_releases_locks: false,
            unique_checked_per_row: false,
            constraint_checks_outside_snapshot: Vec::new(),
            locking_read_subqueries_use_statement_snapshot: false,
            serializable_reads_in_commit_order: true,
            // Serializable: no anomaly is permitted.
            permitted_anomalies: vec![(Isolation::Serializable, Vec::new())],
        }
    }
}
