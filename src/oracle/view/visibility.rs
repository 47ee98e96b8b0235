//! Visibility rules as data: for each engine family, isolation level and kind
//! of statement, which row versions a statement sees, where its transaction's
//! snapshot is taken, and what happens when it writes a row changed since.
//!
//! Sources: the engines' documentation, ENGINE-FACTS.md (observed on the
//! servers) and `tests/view_servers.rs`, which checks each rule on the servers.

use crate::model::{ErrorClass, Isolation, LockMode, Stmt};
use crate::sql::Dialect;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Sqlite,
    /// MariaDB/MySQL with InnoDB.
    Innodb,
    Postgres,
}

impl Family {
    pub fn of(d: Dialect) -> Family {
        match d {
            Dialect::Sqlite => Family::Sqlite,
            Dialect::Mysql => Family::Innodb,
            Dialect::Postgres => Family::Postgres,
        }
    }
}

/// How a statement accesses rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A plain SELECT.
    PlainRead,
    /// SELECT ... FOR UPDATE / FOR SHARE.
    LockingRead(LockMode),
    /// INSERT, UPDATE, DELETE.
    Write,
}

impl Access {
    pub fn of(s: &Stmt) -> Option<Access> {
        match s {
            Stmt::Select(sel) => Some(match sel.lock {
                Some(m) => Access::LockingRead(m),
                None => Access::PlainRead,
            }),
            Stmt::Insert(_) | Stmt::Update(_) | Stmt::Delete(_) => Some(Access::Write),
            _ => None,
        }
    }
}

/// Which versions a statement's view is built from (always plus the
/// transaction's own latest versions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewRule {
    /// The newest version, committed or not (Troc V2).
    Uncommitted,
    /// The newest committed version when the statement completes: a current read
    /// that waited for row locks (Troc V3).
    LatestCommitted,
    /// The transaction's snapshot (Troc V4), taken at [`SnapshotPoint`].
    Snapshot,
    /// PostgreSQL READ COMMITTED writes and locking reads: the rows matching in
    /// the statement's snapshot, each re-checked on its newest committed version
    /// (EvalPlanQual); rows that match only in the newest version are not seen.
    SnapshotThenLatest,
}

/// Where a transaction's snapshot is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotPoint {
    /// Every statement takes its own when it starts.
    EachStatement,
    /// When the first data statement starts (PostgreSQL REPEATABLE READ/SERIALIZABLE).
    FirstStatementStart,
    /// When the first data statement has its locks (SQLite WAL: a write waiting
    /// for the write lock opens its read snapshot once it has it; reads never wait).
    FirstStatementEnd,
    /// At the first consistent (plain) read, not at BEGIN and not at a write or
    /// locking read (InnoDB read views).
    FirstConsistentRead,
}

/// What happens to a write (or locking read) of a row whose newest committed
/// version is newer than the transaction's snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conflict {
    /// It proceeds on the newest version (InnoDB without snapshot isolation,
    /// PostgreSQL READ COMMITTED).
    Proceed,
    /// The statement fails with this error and the transaction aborts
    /// (PostgreSQL RR/SER: 40001; InnoDB with innodb_snapshot_isolation: 1020,
    /// only once a read view exists).
    Abort(ErrorClass),
    /// SQLite WAL: one writer at a time; a writer whose snapshot is not the
    /// newest is refused (BUSY_SNAPSHOT), and one holding a read snapshot while
    /// another holds the write lock is refused at once (BUSY) instead of waiting.
    SingleWriter,
}

/// The rule set of one engine family at one isolation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub plain_read: ViewRule,
    pub locking_read: ViewRule,
    pub write: ViewRule,
    pub snapshot: SnapshotPoint,
    pub conflict: Conflict,
    /// Plain SELECTs inside explicit transactions are locking reads in share
    /// mode (InnoDB SERIALIZABLE).
    pub plain_read_is_locking: bool,
    /// Locks are per row (servers) rather than one database write lock (SQLite).
    pub row_locks: bool,
}

impl Rule {
    pub fn view_rule(&self, access: Access, in_txn: bool) -> ViewRule {
        match access {
            Access::PlainRead if self.plain_read_is_locking && in_txn => self.locking_read,
            Access::PlainRead => self.plain_read,
            Access::LockingRead(_) => self.locking_read,
            Access::Write => self.write,
        }
    }
    /// The lock a statement takes on the rows it reads or writes (`None`: no lock).
    pub fn lock_of(&self, access: Access, in_txn: bool) -> Option<LockMode> {
        match access {
            Access::PlainRead if self.plain_read_is_locking && in_txn => Some(LockMode::ForShare),
            Access::PlainRead => None,
            Access::LockingRead(m) => Some(m),
            Access::Write => Some(LockMode::ForUpdate),
        }
    }
}

/// The rules of `family` at `iso`. `snapshot_isolation`: InnoDB's
/// `innodb_snapshot_isolation` setting.
pub fn rule(family: Family, iso: Isolation, snapshot_isolation: bool) -> Rule {
    use ViewRule::*;
    match family {
        // SQLite is always serializable (WAL: snapshot reads, one writer).
        Family::Sqlite => Rule {
            plain_read: Snapshot,
            locking_read: Snapshot,
            write: Snapshot,
            snapshot: SnapshotPoint::FirstStatementEnd,
            conflict: Conflict::SingleWriter,
            plain_read_is_locking: false,
            row_locks: false,
        },
        Family::Postgres => match iso {
            // PostgreSQL's READ UNCOMMITTED is READ COMMITTED.
            Isolation::ReadUncommitted | Isolation::ReadCommitted => Rule {
                plain_read: Snapshot,
                locking_read: SnapshotThenLatest,
                write: SnapshotThenLatest,
                snapshot: SnapshotPoint::EachStatement,
                conflict: Conflict::Proceed,
                plain_read_is_locking: false,
                row_locks: true,
            },
            Isolation::RepeatableRead | Isolation::Serializable => Rule {
                plain_read: Snapshot,
                locking_read: Snapshot,
                write: Snapshot,
                snapshot: SnapshotPoint::FirstStatementStart,
                conflict: Conflict::Abort(ErrorClass::SerializationFailure),
                plain_read_is_locking: false,
                row_locks: true,
            },
        },
        Family::Innodb => {
            let si = if snapshot_isolation {
                Conflict::Abort(ErrorClass::SnapshotConflict)
            } else {
                Conflict::Proceed
            };
            let base = Rule {
                plain_read: Snapshot,
                locking_read: LatestCommitted,
                write: LatestCommitted,
                snapshot: SnapshotPoint::FirstConsistentRead,
                conflict: si,
                plain_read_is_locking: false,
                row_locks: true,
            };
            match iso {
                Isolation::ReadUncommitted => Rule {
                    plain_read: Uncommitted,
                    snapshot: SnapshotPoint::EachStatement,
                    conflict: Conflict::Proceed,
                    ..base
                },
                Isolation::ReadCommitted => Rule {
                    snapshot: SnapshotPoint::EachStatement,
                    conflict: Conflict::Proceed,
                    ..base
                },
                Isolation::RepeatableRead => base,
                Isolation::Serializable => Rule {
                    plain_read_is_locking: true,
                    ..base
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn innodb_serializable_reads_lock_only_inside_transactions() {
        let r = rule(Family::Innodb, Isolation::Serializable, false);
        assert_eq!(
            r.view_rule(Access::PlainRead, true),
            ViewRule::LatestCommitted
        );
        assert_eq!(r.view_rule(Access::PlainRead, false), ViewRule::Snapshot);
        assert_eq!(r.lock_of(Access::PlainRead, true), Some(LockMode::ForShare));
        assert_eq!(r.lock_of(Access::PlainRead, false), None);
    }

    #[test]
    fn postgres_read_committed_writes_recheck_latest() {
        let r = rule(Family::Postgres, Isolation::ReadCommitted, false);
        assert_eq!(
            r.view_rule(Access::Write, true),
            ViewRule::SnapshotThenLatest
        );
        let r = rule(Family::Postgres, Isolation::RepeatableRead, false);
        assert_eq!(r.view_rule(Access::Write, true), ViewRule::Snapshot);
        assert!(matches!(
            r.conflict,
            Conflict::Abort(ErrorClass::SerializationFailure)
        ));
    }
}
