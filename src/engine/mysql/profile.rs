//! MariaDB/MySQL with InnoDB: what the manuals document, per level, read from
//! the server settings at connect (docs/engine-facts.md).

use crate::engine::profile::{
    AnomalyPermission, Conflict, EngineProfile, LevelsPermission, ReadOnlyRule, ResumedScan, Rule,
    ScanRule, SessionSettings, SnapshotPoint, Source, StartRule, SubqueryRead, ViewRule,
};
use crate::model::{Anomaly, ErrorClass, Features, Isolation, LockMode, StartMode};
use std::collections::BTreeMap;

fn on(settings: &BTreeMap<String, String>, name: &str) -> bool {
    settings
        .get(name)
        .is_some_and(|v| v.eq_ignore_ascii_case("ON") || v == "1")
}

/// InnoDB's rules at `iso` ("InnoDB Transaction Isolation Levels",
/// "Consistent Nonlocking Reads", "Locking Reads"). `snapshot_isolation`:
/// `innodb_snapshot_isolation=ON` (a locking read or write of a row changed
/// since the read view fails with 1020).
pub fn rule(iso: Isolation, snapshot_isolation: bool) -> Rule {
    let base = Rule {
        plain_read: ViewRule::Snapshot,
        locking_read: ViewRule::LatestCommitted,
        write: ViewRule::LatestCommitted,
        snapshot: SnapshotPoint::FirstConsistentRead,
        conflict: if snapshot_isolation {
            Conflict::Abort(ErrorClass::SnapshotConflict)
        } else {
            Conflict::Proceed
        },
        plain_read_is_locking: false,
        row_locks: true,
        resumed_scan: None,
        // Locking reads: "does not lock the rows of a table in a nested
        // subquery" (17.7.2.4); writes: shared next-key locks on the rows of
        // their subqueries (17.7.3), except at READ COMMITTED / READ
        // UNCOMMITTED below. tests/subqueries.rs::subqueries_of_writes_and_locking_reads_per_level.
        locking_read_subqueries: SubqueryRead::Plain,
        write_subqueries: SubqueryRead::AsOuter,
        aborts_anywhere: None,
        keys_checked_at_commit: false,
        write_lock_at_begin: false,
        read_only_error: None,
        read_only_refused_locks: &[],
    };
    match iso {
        // 17.7.2.3: at READ COMMITTED / READ UNCOMMITTED the selects of
        // INSERT ... SELECT and UPDATE ... (SELECT) are nonlocking reads.
        Isolation::ReadUncommitted => Rule {
            plain_read: ViewRule::Uncommitted,
            snapshot: SnapshotPoint::EachStatement,
            conflict: Conflict::Proceed,
            resumed_scan: Some(INNODB_RESUMED_SCAN),
            write_subqueries: SubqueryRead::Plain,
            ..base
        },
        Isolation::ReadCommitted => Rule {
            snapshot: SnapshotPoint::EachStatement,
            conflict: Conflict::Proceed,
            resumed_scan: Some(if snapshot_isolation {
                INNODB_RESUMED_SCAN_LOCKING
            } else {
                INNODB_RESUMED_SCAN
            }),
            write_subqueries: SubqueryRead::Plain,
            ..base
        },
        Isolation::RepeatableRead => base,
        Isolation::Serializable => Rule {
            plain_read_is_locking: true,
            ..base
        },
    }
}

/// How InnoDB's writes and locking reads that waited judge rows at READ
/// COMMITTED / READ UNCOMMITTED (view: `statement/resumed.rs`). Documented: a
/// row skipped on a committed version of the statement's run that did not
/// match. Not documented (so violations, MDEV-34106 confirms one as a bug):
/// a committed row missed because it was inserted, or its key moved, behind
/// the scan position.
pub const INNODB_RESUMED_SCAN: ResumedScan = ResumedScan {
    documented: &[(
        ScanRule::SkippedOnCommittedVersion,
        Source {
            doc: "MySQL 8.0 Reference Manual 17.7.2.1 \"Transaction Isolation Levels\", READ COMMITTED (https://dev.mysql.com/doc/refman/8.0/en/innodb-transaction-isolation-levels.html; MariaDB KB \"SET TRANSACTION\" refers to the same behaviour): \"Record locks for nonmatching rows are released after MySQL has evaluated the WHERE condition\"; \"For UPDATE statements, if a row is already locked, InnoDB performs a 'semi-consistent' read, returning the latest committed version to MySQL so that MySQL can determine whether the row matches the WHERE condition of the UPDATE. If the row matches (must be updated), MySQL reads the row again and this time InnoDB either locks it or waits for a lock on it.\" READ UNCOMMITTED: \"Otherwise, this isolation level works like READ COMMITTED.\"",
            test: "tests/resumed_scan.rs::resumed_update_does_not_revisit_the_rows_it_passed",
        },
    )],
    semi_consistent_update: true,
};

/// READ COMMITTED with `innodb_snapshot_isolation=ON`: no semi-consistent
/// read, an UPDATE waits for a locked row like a locking read and judges it
/// on its version after the wait; rows whose committed version does not
/// match are still skipped and their locks released.
pub const INNODB_RESUMED_SCAN_LOCKING: ResumedScan = ResumedScan {
    documented: &[(
        ScanRule::SkippedOnCommittedVersion,
        Source {
            doc: "MariaDB documentation \"SET TRANSACTION\", Semi-Consistent Reads (https://mariadb.com/docs/server/reference/sql-statements/administrative-sql-statements/set-commands/set-transaction): \"At READ COMMITTED, semi-consistent reads apply only when innodb_snapshot_isolation is disabled ... while it is enabled, READ COMMITTED performs an ordinary locking read and waits for the lock\" (MDEV-34108); MySQL 8.0 Reference Manual 17.7.2.1, READ COMMITTED: \"Record locks for nonmatching rows are released after MySQL has evaluated the WHERE condition\"",
            test: "tests/session_settings.rs::mariadb_read_committed_update_waits_with_snapshot_isolation",
        },
    )],
    semi_consistent_update: false,
};

/// The anomalies each level's documentation permits. With
/// `innodb_snapshot_isolation=ON`, REPEATABLE READ is snapshot isolation
/// (MariaDB KB, "InnoDB System Variables": innodb_snapshot_isolation), so it
/// permits write skew only.
fn permitted_anomalies(snapshot_isolation: bool) -> Vec<AnomalyPermission> {
    use Anomaly::*;
    let mut out = vec![
        AnomalyPermission {
            level: Isolation::ReadUncommitted,
            anomalies: vec![G1a, G1b, G1c, GSingle, G2Item],
            source: Source {
                doc: "MariaDB KB \"SET TRANSACTION\" (https://mariadb.com/kb/en/set-transaction/), READ UNCOMMITTED: \"SELECT statements are performed in a non-locking fashion, but a possible earlier version of a row might be used ... also called a dirty read\"; writes lock as at READ COMMITTED",
                test: "tests/hermitage.rs::mariadb_read_uncommitted_permits_what_its_manual_says",
            },
        },
        AnomalyPermission {
            level: Isolation::ReadCommitted,
            anomalies: vec![GSingle, G2Item],
            source: Source {
                doc: "MariaDB KB \"SET TRANSACTION\" (https://mariadb.com/kb/en/set-transaction/), READ COMMITTED: \"each consistent read, even within the same transaction, sets and reads its own fresh snapshot\" (non-repeatable reads, read skew, lost updates by read-then-write)",
                test: "tests/hermitage.rs::mariadb_read_committed_permits_what_its_manual_says",
            },
        },
    ];
    out.push(if snapshot_isolation {
        AnomalyPermission {
            level: Isolation::RepeatableRead,
            anomalies: vec![G2Item],
            source: Source {
                doc: "MariaDB KB \"InnoDB System Variables\" (https://mariadb.com/kb/en/innodb-system-variables/#innodb_snapshot_isolation), innodb_snapshot_isolation=ON (MDEV-32898): a locking read or write of a record not in the read view fails (snapshot isolation: write skew remains)",
                test: "tests/hermitage_si.rs::mariadb_snapshot_isolation_repeatable_read_permits_only_write_skew",
            },
        }
    } else {
        AnomalyPermission {
            level: Isolation::RepeatableRead,
            anomalies: vec![GSingle, G2Item],
            source: Source {
                doc: "MySQL 8.0 Reference Manual 17.7.2.3 \"Consistent Nonlocking Reads\" (https://dev.mysql.com/doc/refman/8.0/en/innodb-consistent-read.html): \"The snapshot of the database state applies to SELECT statements within a transaction, not necessarily to DML statements\" (UPDATE/DELETE read the latest committed version: lost update, G-single); innodb_snapshot_isolation=OFF is MariaDB 10.11's default",
                test: "tests/hermitage.rs::mariadb_repeatable_read_permits_what_its_manual_says",
            },
        }
    });
    out
}

/// MariaDB/InnoDB error scopes:
/// - 1213 deadlock: InnoDB rolls back the whole victim transaction.
/// - 1020 snapshot conflict (innodb_snapshot_isolation): treated as aborting,
///   txfuzz issues ROLLBACK.
/// - 1317 KILL QUERY: the server rolls back only the statement, but txfuzz only
///   cancels blocked or hung statements and then ends their transaction.
/// - 1205 lock wait timeout: statement only, unless innodb_rollback_on_timeout=ON.
/// - Lost connections end the transaction; everything else is statement-level.
///
/// SERIALIZABLE is two-phase locking (plain SELECTs become locking reads), so the
/// commit order is a valid serial order for reads too. No snapshot rule for
/// read-only transactions: RR snapshots start at the first read, not at BEGIN,
/// and RC/RU have none. READ UNCOMMITTED and READ COMMITTED use semi-consistent
/// reads and no gap locks, so `wss` cannot judge them with a commit-order
/// replay (their cases are undecided there).
pub fn profile(settings: &BTreeMap<String, String>) -> EngineProfile {
    let mut aborting = vec![
        ErrorClass::Deadlock,
        ErrorClass::SnapshotConflict,
        ErrorClass::Cancelled,
        ErrorClass::ConnectionLost,
    ];
    if on(settings, "innodb_rollback_on_timeout") {
        aborting.push(ErrorClass::LockWaitTimeout);
    }
    let si = on(settings, "innodb_snapshot_isolation");
    EngineProfile {
        engine: "mariadb",
        embedded: false,
        isolations: Isolation::ALL.to_vec(),
        aborting_errors: aborting,
        all_errors_abort: false,
        read_only_at_snapshot: false,
        write_conflicts_detected: vec![Isolation::RepeatableRead, Isolation::Serializable],
        serializable_reads_in_commit_order: true,
        // MariaDB KB "SAVEPOINT": "all locks that have been acquired after the
        // save point will survive"; MySQL 15.3.4: "InnoDB does not release the
        // row locks that were stored in memory after the savepoint".
        savepoint_rollback_releases_locks: false,
        unique_checked_per_row: Some(Source {
            doc: "MySQL 8.0 Reference Manual 15.2.17 \"UPDATE Statement\" (https://dev.mysql.com/doc/refman/8.0/en/update.html): \"UPDATE t SET id = id + 1; ... could fail with a duplicate-key error, depending on the order in which rows are updated\" (InnoDB; MariaDB's UPDATE page has no such sentence)",
            test: "tests/mariadb.rs::unique_keys_are_checked_row_by_row",
        }),
        insert_conflicts_decided_per_row: None,
        constraint_checks_outside_snapshot: Vec::new(),
        locking_read_subqueries_use_statement_snapshot: true,
        permitted_anomalies: permitted_anomalies(si),
        rules: Isolation::ALL.iter().map(|&l| (l, rule(l, si))).collect(),
        start_rules: start_rules(),
        read_only: read_only_rule(),
        features: Features::mysql(),
        // MariaDB refuses foreign keys between temporary tables (errno 150):
        // tests/mariadb.rs::temporary_tables_cannot_have_foreign_keys.
        temporary_foreign_keys: false,
        unique_nulls_distinct: true,
        own_writes_hide_same_key: true,
        uncommitted_reads_inconsistent: Some(LevelsPermission {
            levels: vec![Isolation::ReadUncommitted],
            source: Source {
                doc: "MySQL 8.0 Reference Manual 17.7.2.1 \"Transaction Isolation Levels\", READ UNCOMMITTED (https://dev.mysql.com/doc/refman/8.0/en/innodb-transaction-isolation-levels.html): \"SELECT statements are performed in a nonlocking fashion, but a possible earlier version of a row might be used. Thus, using this isolation level, such reads are not consistent. This is also called a dirty read.\"",
                test: "tests/integrity.rs::mariadb_read_uncommitted_reads_a_waiting_insert_next_to_the_row_it_duplicates",
            },
        }),
        // innodb_snapshot_isolation=ON fails a locking read of a record
        // not in the read view (MDEV-32898): no permission claimed there.
        own_writes_over_snapshot: (!si).then(|| LevelsPermission {
            levels: vec![Isolation::RepeatableRead],
            source: Source {
                doc: "MySQL 8.0 Reference Manual 17.7.2.3 \"Consistent Nonlocking Reads\" (https://dev.mysql.com/doc/refman/8.0/en/innodb-consistent-read.html): \"If you update some rows in a table, a SELECT sees the latest version of the updated rows, but it might also see older versions of any rows. If other sessions simultaneously update the same table, the anomaly means that you might see the table in a state that never existed in the database.\"",
                test: "tests/integrity.rs::mariadb_repeatable_read_reads_its_own_insert_next_to_a_deleted_snapshot_row",
            },
        }),
        reads_valid_after_commit: None,
        guarantee_among_own_level_only: None,
        lock_waits: true,
        session_settings: Some(SessionSettings {
            allowed: SESSION_SETTINGS,
            build: profile,
            server: settings.clone(),
            source: Source {
                doc: "MariaDB KB \"InnoDB System Variables\", innodb_snapshot_isolation (https://mariadb.com/kb/en/innodb-system-variables/#innodb_snapshot_isolation): \"Scope: Global, Session\", \"Dynamic: Yes\"",
                test: "tests/session_settings.rs::mariadb_sessions_run_with_their_own_snapshot_isolation",
            },
        }),
    }
}

/// `START TRANSACTION WITH CONSISTENT SNAPSHOT` takes the read view at once.
fn start_rules() -> Vec<StartRule> {
    vec![StartRule {
        mode: StartMode::ConsistentSnapshot,
        levels: &[Isolation::RepeatableRead],
        rule: None,
        snapshot: Some(SnapshotPoint::Begin),
        write_lock_at_begin: false,
        source: Source {
            doc: "MariaDB KB \"START TRANSACTION\" (https://mariadb.com/kb/en/start-transaction/) and MySQL 8.0 Reference Manual 15.3.1 (https://dev.mysql.com/doc/refman/8.0/en/commit.html): \"The WITH CONSISTENT SNAPSHOT modifier starts a consistent read for storage engines that are capable of it ... The effect is the same as issuing a START TRANSACTION followed by a SELECT from any InnoDB table ... The only isolation level that permits a consistent read is REPEATABLE READ. For all other isolation levels, the WITH CONSISTENT SNAPSHOT clause is ignored.\"",
            test: "tests/start_modes.rs::mariadb_consistent_snapshot_takes_the_read_view_at_start",
        },
    }]
}

/// A READ ONLY transaction refuses writes and FOR UPDATE.
fn read_only_rule() -> Option<ReadOnlyRule> {
    Some(ReadOnlyRule {
        error: ErrorClass::ReadOnlyTransaction,
        refused_locks: &[LockMode::ForUpdate],
        source: Source {
            doc: "MariaDB KB \"START TRANSACTION\", Access Mode (https://mariadb.com/kb/en/start-transaction/): \"The access mode specifies whether the transaction is allowed to write data or not ... READ ONLY ... prohibits changes to tables\"; a change fails with error 1792 ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION",
            test: "tests/start_modes.rs::mariadb_read_only_transactions_refuse_writes",
        },
    })
}

/// MySQL's InnoDB: the same rules per level as MariaDB's where both manuals
/// say the same (each rule above cites the MySQL Reference Manual where it
/// does), and MySQL's own where they part:
/// - no `innodb_snapshot_isolation` (a MariaDB variable, MDEV-32898): MySQL
///   9.7 Reference Manual 17.7.2.3 "Consistent Nonlocking Reads": "The
///   snapshot of the database state applies to SELECT statements within a
///   transaction, not necessarily to DML statements", so writes and locking
///   reads take the latest committed version (lost update and G-single
///   permitted at REPEATABLE READ, as with the MariaDB setting OFF); no
///   session setting is modelled;
/// - the permissions of READ UNCOMMITTED and READ COMMITTED cite MySQL's
///   manual (17.7.2.1 "Transaction Isolation Levels");
/// - no REPLACE: without DELETE ... RETURNING, MySQL's deleted rows are
///   reported by a DELETE trigger, and a table with one makes REPLACE delete
///   and insert where it would update in place (`sql::capture_triggers`).
pub fn mysql_profile(settings: &BTreeMap<String, String>) -> EngineProfile {
    let mut plain = settings.clone();
    plain.remove("innodb_snapshot_isolation");
    let mut p = profile(&plain);
    p.engine = "mysql";
    p.session_settings = None;
    p.features.replace = false;
    for permission in &mut p.permitted_anomalies {
        match permission.level {
            Isolation::ReadUncommitted => permission.source.doc = MYSQL_READ_UNCOMMITTED,
            Isolation::ReadCommitted => permission.source.doc = MYSQL_READ_COMMITTED,
            Isolation::RepeatableRead => permission.source.doc = MYSQL_REPEATABLE_READ,
            Isolation::Serializable => {}
        }
    }
    if let Some(read_only) = &mut p.read_only {
        read_only.source.doc = MYSQL_READ_ONLY;
    }
    p
}

const MYSQL_READ_UNCOMMITTED: &str = "MySQL 9.7 Reference Manual 17.7.2.1 \"Transaction Isolation Levels\" (https://dev.mysql.com/doc/refman/9.7/en/innodb-transaction-isolation-levels.html), READ UNCOMMITTED: \"SELECT statements are performed in a nonlocking fashion, but a possible earlier version of a row might be used. Thus, using this isolation level, such reads are not consistent. This is also called a dirty read. Otherwise, this isolation level works like READ COMMITTED.\"";
const MYSQL_READ_COMMITTED: &str = "MySQL 9.7 Reference Manual 17.7.2.1 \"Transaction Isolation Levels\" (https://dev.mysql.com/doc/refman/9.7/en/innodb-transaction-isolation-levels.html), READ COMMITTED: \"Each consistent read, even within the same transaction, sets and reads its own fresh snapshot\" (non-repeatable reads, read skew, lost updates by read-then-write)";
const MYSQL_REPEATABLE_READ: &str = "MySQL 9.7 Reference Manual 17.7.2.3 \"Consistent Nonlocking Reads\" (https://dev.mysql.com/doc/refman/9.7/en/innodb-consistent-read.html): \"The snapshot of the database state applies to SELECT statements within a transaction, not necessarily to DML statements\" (UPDATE/DELETE read the latest committed version: lost update, G-single)";
const MYSQL_READ_ONLY: &str = "MySQL 9.7 Reference Manual 15.3.1 \"START TRANSACTION, COMMIT, and ROLLBACK Statements\" (https://dev.mysql.com/doc/refman/9.7/en/commit.html): \"The READ ONLY restriction prevents the transaction from modifying or locking both transactional and nontransactional tables that are visible to other transactions\"; a change fails with error 1792 ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION";

/// The settings a MariaDB session may set for itself (`--setting`).
pub const SESSION_SETTINGS: &[(&str, &[&str])] = &[("innodb_snapshot_isolation", &["ON", "OFF"])];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::profile::Access;
    use crate::model::LockMode;

    #[test]
    fn innodb_serializable_reads_lock_only_inside_transactions() {
        let r = rule(Isolation::Serializable, false);
        assert_eq!(
            r.view_rule(Access::PlainRead, true),
            ViewRule::LatestCommitted
        );
        assert_eq!(r.view_rule(Access::PlainRead, false), ViewRule::Snapshot);
        assert_eq!(r.lock_of(Access::PlainRead, true), Some(LockMode::ForShare));
        assert_eq!(r.lock_of(Access::PlainRead, false), None);
    }

    /// MySQL has no innodb_snapshot_isolation: a value in the settings
    /// (none on a real server) changes nothing, and no session may set it.
    #[test]
    fn mysql_profile_has_no_snapshot_isolation_and_cites_mysql() {
        let si = BTreeMap::from([("innodb_snapshot_isolation".to_string(), "ON".to_string())]);
        let p = mysql_profile(&si);
        assert_eq!(p.engine, "mysql");
        assert!(p.session_settings.is_none());
        assert!(!p.features.replace);
        assert_eq!(
            p.rule(Isolation::RepeatableRead).unwrap().conflict,
            Conflict::Proceed
        );
        assert!(p
            .permitted_anomalies
            .iter()
            .all(|a| a.source.doc.starts_with("MySQL 9.7 Reference Manual")));
    }

    #[test]
    fn snapshot_isolation_changes_repeatable_read_only() {
        let si = BTreeMap::from([("innodb_snapshot_isolation".to_string(), "ON".to_string())]);
        let p = profile(&si);
        assert_eq!(
            p.rule(Isolation::RepeatableRead).unwrap().conflict,
            Conflict::Abort(ErrorClass::SnapshotConflict)
        );
        assert_eq!(
            p.permitted_at(Isolation::RepeatableRead),
            vec![Anomaly::G2Item]
        );
        assert_eq!(
            p.rule(Isolation::ReadCommitted).unwrap().conflict,
            Conflict::Proceed
        );
        let off = profile(&BTreeMap::new());
        assert!(off
            .anomaly_permission(Isolation::RepeatableRead, Anomaly::LostUpdate)
            .is_some());
        assert!(off
            .rule(Isolation::ReadCommitted)
            .unwrap()
            .resumed_scan
            .is_some_and(|s| s.source(ScanRule::SkippedOnCommittedVersion).is_some()
                && s.source(ScanRule::MissedInsertedRow).is_none()
                && s.source(ScanRule::MissedMovedRow).is_none()));
    }
}
