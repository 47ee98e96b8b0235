//! PostgreSQL: what its manual documents, per level (docs/engine-facts.md).

use crate::engine::profile::{
    AnomalyPermission, Conflict, EngineProfile, LevelsPermission, ReadOnlyRule, Rule,
    SnapshotPoint, Source, SubqueryRead, ViewRule,
};
use crate::model::{Anomaly, ErrorClass, Features, Isolation, LockMode};
use std::collections::BTreeMap;

/// PostgreSQL's rules at `iso` (manual, 13.2 "Transaction Isolation").
pub fn rule(iso: Isolation) -> Rule {
    match iso {
        // READ UNCOMMITTED is READ COMMITTED (13.2). Writes and locking reads
        // find rows on the statement's snapshot and re-check a concurrently
        // updated row's newest version (13.2.1).
        Isolation::ReadUncommitted | Isolation::ReadCommitted => Rule {
            plain_read: ViewRule::Snapshot,
            locking_read: ViewRule::SnapshotThenLatest,
            write: ViewRule::SnapshotThenLatest,
            snapshot: SnapshotPoint::EachStatement,
            conflict: Conflict::Proceed,
            plain_read_is_locking: false,
            row_locks: true,
            resumed_scan: None,
            locking_read_subqueries: SubqueryRead::AsOuter,
            write_subqueries: SubqueryRead::AsOuter,
            aborts_anywhere: None,
            keys_checked_at_commit: false,
            write_lock_at_begin: false,
            read_only_error: None,
            read_only_refused_locks: &[],
        },
        // 13.2.2: the snapshot is taken at the first statement; updating a row
        // changed since fails with 40001.
        Isolation::RepeatableRead | Isolation::Serializable => Rule {
            plain_read: ViewRule::Snapshot,
            locking_read: ViewRule::Snapshot,
            write: ViewRule::Snapshot,
            snapshot: SnapshotPoint::FirstStatementStart,
            conflict: Conflict::Abort(ErrorClass::SerializationFailure),
            plain_read_is_locking: false,
            row_locks: true,
            resumed_scan: None,
            locking_read_subqueries: SubqueryRead::AsOuter,
            write_subqueries: SubqueryRead::AsOuter,
            // 13.2.3 "Serializable Isolation Level": "applications using this
            // level must be prepared to retry transactions due to
            // serialization failures"; SSI's conflict tracking has false
            // positives ("a serialization failure ... even though ... there is
            // no serialization anomaly"), so any statement or COMMIT may fail.
            aborts_anywhere: (iso == Isolation::Serializable)
                .then_some(ErrorClass::SerializationFailure),
            keys_checked_at_commit: false,
            write_lock_at_begin: false,
            read_only_error: None,
            read_only_refused_locks: &[],
        },
    }
}

/// What PostgreSQL's documented design permits.
///
/// - Levels: READ COMMITTED, REPEATABLE READ (snapshot isolation) and
///   SERIALIZABLE (SSI). READ UNCOMMITTED is accepted but behaves exactly as
///   READ COMMITTED, so testing it would only repeat READ COMMITTED.
/// - Any error inside a transaction block aborts it (later statements fail with
///   25P02 until ROLLBACK): `all_errors_abort`. The concurrency classes are
///   listed in `aborting_errors` too, for readers of the profile.
/// - `read_only_at_snapshot`: false. A read-only transaction at RR/SER is not
///   generally serialisable at its snapshot (SSI may place it elsewhere, and
///   at READ COMMITTED every statement takes a new snapshot).
/// - `serializable_reads_in_commit_order`: false. SSI guarantees some serial
///   order, not commit order: a reader may serialise before a writer that
///   committed first.
/// - `write_conflicts_detected`: none. Writes are evaluated on snapshots and SSI
///   may serialise a writer before one that committed earlier, so a final
///   state unlike the commit-order replay proves nothing by itself: `wss`
///   judges only cases where each write saw exactly the units committed before
///   its own (`oracle::commit_order`), whatever order SSI chose.
pub fn profile(_settings: &BTreeMap<String, String>) -> EngineProfile {
    use Anomaly::*;
    let levels = [
        Isolation::ReadCommitted,
        Isolation::RepeatableRead,
        Isolation::Serializable,
    ];
    EngineProfile {
        engine: "postgres",
        embedded: false,
        isolations: levels.to_vec(),
        aborting_errors: vec![
            ErrorClass::Deadlock,
            ErrorClass::SerializationFailure,
            ErrorClass::LockWaitTimeout,
            ErrorClass::Cancelled,
            ErrorClass::TransactionAborted,
            ErrorClass::ConnectionLost,
            ErrorClass::Internal,
        ],
        all_errors_abort: true,
        read_only_at_snapshot: false,
        write_conflicts_detected: Vec::new(),
        serializable_reads_in_commit_order: false,
        // Manual 13.3.2 "Row-Level Locks": "Row-level locks are released at
        // transaction end or during savepoint rollback".
        savepoint_rollback_releases_locks: true,
        unique_checked_per_row: Some(Source {
            doc: "PostgreSQL 15 manual, CREATE TABLE, Compatibility, \"Non-Deferred Uniqueness Constraints\" (https://www.postgresql.org/docs/15/sql-createtable.html): \"When a UNIQUE or PRIMARY KEY constraint is not deferrable, PostgreSQL checks for uniqueness immediately whenever a row is inserted or modified\"",
            test: "tests/postgres.rs::unique_keys_are_checked_row_by_row",
        }),
        insert_conflicts_decided_per_row: Some(Source {
            doc: "PostgreSQL 15 manual, 13.2.1 \"Read Committed Isolation Level\" (https://www.postgresql.org/docs/15/transaction-iso.html): \"INSERT with an ON CONFLICT DO NOTHING clause may have insertion not proceed for a row due to the outcome of another transaction whose effects are not visible to the INSERT snapshot\"",
            test: "tests/postgres.rs::a_multi_row_insert_that_waited_decided_its_rows_apart",
        }),
        constraint_checks_outside_snapshot: vec![
            Isolation::RepeatableRead,
            Isolation::Serializable,
        ],
        locking_read_subqueries_use_statement_snapshot: false,
        permitted_anomalies: vec![
            AnomalyPermission {
                level: Isolation::ReadCommitted,
                anomalies: vec![GSingle, G2Item],
                source: Source {
                    doc: "PostgreSQL 15 manual 13.2.1 \"Read Committed Isolation Level\" (https://www.postgresql.org/docs/15/transaction-iso.html): each command sees a new snapshot, and UPDATE/DELETE/SELECT FOR UPDATE act on the newest version of a row (nonrepeatable reads, read skew, lost updates)",
                    test: "tests/hermitage.rs::postgres_read_committed_permits_what_its_manual_says",
                },
            },
            AnomalyPermission {
                level: Isolation::RepeatableRead,
                anomalies: vec![G2Item],
                source: Source {
                    doc: "PostgreSQL 15 manual 13.2.2 \"Repeatable Read Isolation Level\" (https://www.postgresql.org/docs/15/transaction-iso.html) (snapshot isolation: a transaction cannot modify rows changed by others since its snapshot, but \"does not guarantee serializable behavior\"; 13.2.3's write-skew example)",
                    test: "tests/hermitage.rs::postgres_repeatable_read_permits_what_its_manual_says",
                },
            },
        ],
        rules: Isolation::ALL.iter().map(|&l| (l, rule(l))).collect(),
        start_rules: Vec::new(),
        read_only: Some(ReadOnlyRule {
            error: ErrorClass::ReadOnlyTransaction,
            refused_locks: &[LockMode::ForUpdate, LockMode::ForShare],
            source: Source {
                doc: "PostgreSQL 15 manual, SET TRANSACTION (https://www.postgresql.org/docs/15/sql-set-transaction.html): \"When a transaction is read-only, the following SQL commands are disallowed: INSERT, UPDATE, DELETE, MERGE, and COPY FROM if the table they would write to is not a temporary table\" (SQLSTATE 25006 read_only_sql_transaction; SELECT FOR UPDATE/SHARE fail the same way)",
                test: "tests/start_modes.rs::postgres_read_only_transactions_refuse_writes_and_locking_reads",
            },
        }),
        features: Features::postgres(),
        temporary_foreign_keys: true,
        unique_nulls_distinct: true,
        own_writes_hide_same_key: false,
        uncommitted_reads_inconsistent: None,
        own_writes_over_snapshot: Some(LevelsPermission {
            levels: vec![Isolation::RepeatableRead],
            source: Source {
                doc: "PostgreSQL 15 manual 13.2.2 \"Repeatable Read Isolation Level\" (https://www.postgresql.org/docs/15/transaction-iso.html): \"implemented using a technique known in academic database literature ... as Snapshot Isolation\"; a query \"does see the effects of previous updates executed within its own transaction\" next to its snapshot, and \"this view will not necessarily always be consistent with some serial (one at a time) execution of concurrent transactions of the same level\"; unique checks see rows committed after the snapshot (64.5 \"Index Uniqueness Checks\")",
                test: "tests/integrity.rs::postgres_repeatable_read_reads_its_own_insert_next_to_a_deleted_snapshot_row",
            },
        }),
        reads_valid_after_commit: Some(LevelsPermission {
            levels: vec![Isolation::Serializable],
            source: Source {
                doc: "PostgreSQL 15 manual 13.2.3 \"Serializable Isolation Level\" (https://www.postgresql.org/docs/15/transaction-iso.html): \"any reads of permanent user tables are not considered valid until the transaction which read them has successfully committed. This is true even for read-only transactions, except that data read within a deferrable read-only transaction is known to be valid as soon as it has been read\"",
                test: "tests/integrity.rs::postgres_serializable_reads_count_only_once_committed",
            },
        }),
        guarantee_among_own_level_only: Some(LevelsPermission {
            levels: vec![Isolation::Serializable],
            source: Source {
                doc: "PostgreSQL 15 manual 13.2.3 \"Serializable Isolation Level\" (https://www.postgresql.org/docs/15/transaction-iso.html): \"The guarantee that any set of successfully committed concurrent Serializable transactions will have the same effect as if they were run one at a time\" (the monitoring covers reads and writes \"among concurrent serializable transactions\"; a concurrent transaction at a weaker level is outside it)",
                test: "tests/integrity.rs::postgres_serializable_reads_beside_a_weaker_writer_are_not_covered",
            },
        }),
        lock_waits: true,
        session_settings: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::profile::Access;

    #[test]
    fn read_committed_writes_recheck_latest() {
        let r = rule(Isolation::ReadCommitted);
        assert_eq!(
            r.view_rule(Access::Write, true),
            ViewRule::SnapshotThenLatest
        );
        let r = rule(Isolation::RepeatableRead);
        assert_eq!(r.view_rule(Access::Write, true), ViewRule::Snapshot);
        assert!(matches!(
            r.conflict,
            Conflict::Abort(ErrorClass::SerializationFailure)
        ));
        let p = profile(&BTreeMap::new());
        assert!(p.write_conflicts_detected.is_empty());
        assert!(p
            .anomaly_permission(Isolation::RepeatableRead, Anomaly::WriteSkew)
            .is_some());
        assert!(p
            .anomaly_permission(Isolation::RepeatableRead, Anomaly::LostUpdate)
            .is_none());
    }
}
