//! Concurrency-control rules as data (part of the engine profile): for one
//! isolation level and kind of statement, which row versions a statement sees,
//! where its transaction's snapshot is taken, what happens when it writes a row
//! changed since, and how its locks behave. Each engine's profile gives one
//! [`Rule`] per level (`engine/*/profile.rs`); the `view` oracle and the
//! pattern generator read them, never an engine name.
//!
//! Sources: the engines' documentation (docs/engine-facts.md) and
//! `tests/view_servers.rs`, which checks each rule on the servers.

use crate::model::{ErrorClass, Isolation, LockMode, StartMode, Stmt};

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
    /// At BEGIN (turso's BEGIN CONCURRENT in MVCC mode).
    Begin,
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

/// How the subqueries of a write or locking read read their rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubqueryRead {
    /// Like the statement's outer rows (one view for the whole statement).
    AsOuter,
    /// As a plain (consistent) read in the transaction's read view, while the
    /// outer rows are read current.
    Plain,
}

/// A way a row may end up skipped by a write or locking read that waited
/// halfway through its scan ([`ResumedScan`]). Each is either documented in
/// the profile (with its source: the outcome is permitted) or only what the
/// engine does (a violation, which a known issue may name).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ScanRule {
    /// The row was judged on a committed version from the statement's run
    /// that did not match (the version it had when the scan met it; an
    /// UPDATE also judges a row another transaction holds on its latest
    /// committed version, none for a row that transaction inserted: the
    /// semi-consistent read), or on a state where it was deleted.
    SkippedOnCommittedVersion,
    /// A row another transaction inserted and committed while the statement
    /// ran (or had inserted, so that the statement had to wait for it) was
    /// not met, though it matched in every committed state that holds it:
    /// inserted behind the scan position.
    MissedInsertedRow,
    /// A row whose indexed columns another transaction changed while the
    /// statement ran was not met, though it matched in every committed state:
    /// moved behind the scan position.
    MissedMovedRow,
}

impl ScanRule {
    /// The finding kind of an outcome only this rule explains.
    pub fn kind(self) -> &'static str {
        match self {
            ScanRule::SkippedOnCommittedVersion => "resumed-skip",
            ScanRule::MissedInsertedRow => "resumed-missed-insert",
            ScanRule::MissedMovedRow => "resumed-missed-moved-row",
        }
    }
}

impl std::fmt::Display for ScanRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ScanRule::SkippedOnCommittedVersion => "skipped-on-committed-version",
            ScanRule::MissedInsertedRow => "missed-inserted-row",
            ScanRule::MissedMovedRow => "missed-moved-row",
        })
    }
}

/// How writes and locking reads that waited halfway through their scan
/// judge rows (InnoDB READ COMMITTED / READ UNCOMMITTED): a row they write,
/// delete or return is judged on its version when its lock was granted (it
/// holds the row from then on); a row they skip was judged on some
/// committed version of their run, by one of the [`ScanRule`]s. Only the
/// rules listed here are documented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResumedScan {
    pub documented: &'static [(ScanRule, super::Source)],
    /// An UPDATE reads a locked row's latest committed version without
    /// waiting (InnoDB's semi-consistent read), so it also skips a row
    /// another transaction's uncommitted INSERT holds.
    pub semi_consistent_update: bool,
}

impl ResumedScan {
    /// The documentation that allows `rule`, if any.
    pub fn source(&self, rule: ScanRule) -> Option<super::Source> {
        self.documented
            .iter()
            .find(|(r, _)| *r == rule)
            .map(|(_, s)| *s)
    }
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
    /// Writes and locking reads scan without gap locks and judge a row by its
    /// newest committed version when the scan meets it: one that waited
    /// halfway through its scan does not revisit rows it passed (InnoDB READ
    /// COMMITTED / READ UNCOMMITTED). `None`: a statement that waited is
    /// judged on one state.
    pub resumed_scan: Option<ResumedScan>,
    /// How the subqueries of locking reads read (InnoDB: "A locking read
    /// clause in an outer statement does not lock the rows of a table in a
    /// nested subquery unless a locking read clause is also specified in the
    /// subquery", MySQL 8.0 Reference Manual 17.7.2.4 "Locking Reads").
    pub locking_read_subqueries: SubqueryRead,
    /// How the subqueries of writes (UPDATE/DELETE ... WHERE ... (SELECT ...),
    /// INSERT ... SELECT) read. InnoDB, MySQL 8.0 Reference Manual 17.7.3
    /// "Locks Set by Different SQL Statements": for `UPDATE t ... WHERE col IN
    /// (SELECT ... FROM s ...)` "InnoDB sets shared next-key locks on rows from
    /// table s", and for INSERT ... SELECT "If the transaction isolation level
    /// is READ COMMITTED, InnoDB does the search on S as a consistent read (no
    /// locks)"; 17.7.2.3: "set the isolation level of the transaction to READ
    /// UNCOMMITTED or READ COMMITTED to avoid setting locks on rows read from
    /// the selected table". So current (locking) at REPEATABLE READ and
    /// SERIALIZABLE, consistent at READ COMMITTED / READ UNCOMMITTED.
    pub write_subqueries: SubqueryRead,
    /// A statement or COMMIT may fail with this error without any conflict
    /// the model can see, aborting the transaction (PostgreSQL SERIALIZABLE:
    /// SSI's serialization failures, false positives included).
    pub aborts_anywhere: Option<ErrorClass>,
    /// Unique keys are checked on the transaction's snapshot (plus its own
    /// writes), and a key that another transaction committed since the
    /// snapshot fails the COMMIT with the `conflict` error (turso MVCC:
    /// first committer wins on index entries). Else (servers, SQLite) an
    /// INSERT's key checks see the newest committed rows and wait for
    /// uncommitted ones.
    pub keys_checked_at_commit: bool,
    /// The transaction's BEGIN takes the database write lock (SQLite and
    /// turso `BEGIN IMMEDIATE | EXCLUSIVE`): it waits (or fails, where
    /// `lock_waits` is false) while another transaction holds it, and holds
    /// it to its end. Set by a [`StartRule`].
    pub write_lock_at_begin: bool,
    /// The transaction is READ ONLY: its writes fail with this error, and
    /// also its locking reads where `read_only_refuses_locking_reads`. Set
    /// from the profile's [`ReadOnlyRule`] for a `Begin { read_only }`.
    pub read_only_error: Option<ErrorClass>,
    /// The locking reads a READ ONLY transaction may not run either.
    pub read_only_refused_locks: &'static [LockMode],
}

/// What a start mode changes in the rules of the levels it applies to
/// (profile `start_rules`), with the documentation that says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartRule {
    pub mode: StartMode,
    /// The levels where it applies (empty: every level; elsewhere the mode
    /// is accepted and changes nothing).
    pub levels: &'static [Isolation],
    /// A rule set of its own, instead of the level's (turso MVCC: a
    /// transaction that is not BEGIN CONCURRENT).
    pub rule: Option<Rule>,
    /// Where the snapshot is taken instead.
    pub snapshot: Option<SnapshotPoint>,
    /// BEGIN takes the database write lock.
    pub write_lock_at_begin: bool,
    pub source: super::Source,
}

/// What a READ ONLY transaction may not do (MariaDB KB "START TRANSACTION":
/// error 1792; PostgreSQL "SET TRANSACTION": SQLSTATE 25006), and which
/// locking reads it refuses (behaviour, shown by tests/start_modes.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOnlyRule {
    pub error: ErrorClass,
    /// Locking reads it refuses too (PostgreSQL: every one; MariaDB:
    /// `FOR UPDATE`, not `LOCK IN SHARE MODE`).
    pub refused_locks: &'static [LockMode],
    pub source: super::Source,
}

impl Rule {
    /// How the subqueries of a statement with this access read.
    pub fn subqueries(&self, access: Access) -> SubqueryRead {
        match access {
            Access::PlainRead => SubqueryRead::AsOuter,
            Access::LockingRead(_) => self.locking_read_subqueries,
            Access::Write => self.write_subqueries,
        }
    }
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
