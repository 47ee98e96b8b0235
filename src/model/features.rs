//! The SQL features an engine supports, which the generator may use (part of
//! the engine profile).

use super::begin::StartMode;

/// What an engine's SQL supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// `REPLACE INTO` (SQLite, MySQL/MariaDB).
    pub replace: bool,
    /// `SELECT ... FOR UPDATE / FOR SHARE` (MySQL/MariaDB, PostgreSQL).
    pub locking_reads: bool,
    pub savepoints: bool,
    /// `ON CONFLICT DO UPDATE` / `ON DUPLICATE KEY UPDATE`.
    pub upsert: bool,
    pub foreign_keys: bool,
    /// `ON DELETE` / `ON UPDATE` actions (`RESTRICT`, `CASCADE`, `SET NULL`).
    pub fk_actions: bool,
    /// A column of a CHECK constraint may be written by a foreign key's
    /// CASCADE or SET NULL action (MariaDB refuses such a table: error 1901,
    /// MariaDB KB "CONSTRAINT": "Function or expression ... cannot be used
    /// in the CHECK clause").
    pub fk_actions_on_checked_columns: bool,
    /// `DEFERRABLE INITIALLY DEFERRED | IMMEDIATE` foreign keys (PostgreSQL,
    /// SQLite; InnoDB checks every foreign key immediately and has no
    /// DEFERRABLE clause: MariaDB KB "Foreign Keys").
    pub deferrable_fks: bool,
    /// A transaction changes when foreign keys are checked
    /// ([`super::stmt::ConstraintTiming`]): PostgreSQL `SET CONSTRAINTS`
    /// (manual, "SET CONSTRAINTS"), SQLite `PRAGMA defer_foreign_keys`
    /// (sqlite.org/pragma.html#pragma_defer_foreign_keys). turso 0.8.3
    /// has neither pragma; MariaDB neither statement.
    pub set_constraints: bool,
    /// The start modes a BEGIN may name, the one format-1 case files meant
    /// by a plain BEGIN first ([`super::TestCase::upgrade`]).
    pub start_modes: &'static [StartMode],
    /// `READ ONLY` transactions (MariaDB `START TRANSACTION READ ONLY`,
    /// PostgreSQL `BEGIN READ ONLY`).
    pub read_only: bool,
    /// PostgreSQL `BEGIN ... DEFERRABLE`.
    pub deferrable: bool,
    /// Open cursors: a SELECT stepped part-way while its session runs other
    /// statements ([`super::stmt::Select::cursor`]; the engine's session
    /// implements `Session::open_cursor`).
    pub cursors: bool,
    /// A cursor does not see its own transaction's changes made after it
    /// opened (PostgreSQL "DECLARE": "In PostgreSQL, all cursors are
    /// insensitive"), so rows stepped after such a write are judged too;
    /// false where that is undefined (SQLite, turso).
    pub cursors_insensitive: bool,
    /// A case may ask for a checkpoint after its set-up
    /// ([`super::TestCase::checkpoint`]: SQLite and turso, `PRAGMA
    /// wal_checkpoint(TRUNCATE)`).
    pub checkpoints: bool,
    /// An UPDATE may repeat another transaction's UPDATE of constants
    /// (`gen::echo`): the second of two equal writes leaves the row
    /// unchanged, which InnoDB treats apart from a change (MariaDB).
    pub echo_updates: bool,
    /// A locking read, or an autocommit SELECT that then locks, may get a
    /// subquery conjunct (`gen::locking`): InnoDB does not lock, nor read
    /// current, a locking read's subquery (MariaDB).
    pub subquery_locking_reads: bool,
    /// A transaction that locks a row by its key may later move that key
    /// down (`gen::moves`): a scan that waited for the lock and resumed
    /// misses the row at its new key on InnoDB at READ COMMITTED (MariaDB).
    pub key_moves: bool,
    /// A transaction at REPEATABLE READ may write, at its new key, a row
    /// another transaction moved and committed after its read view, then
    /// read the table again (`gen::phantom`): InnoDB shows it the old record
    /// beside its write (MariaDB).
    pub key_change_phantoms: bool,
    /// Where a key moves, another transaction at READ COMMITTED or READ
    /// UNCOMMITTED may scan the table with a locking read between the lock
    /// and the move (`gen::scans`): the resumed scan misses the moved row
    /// on InnoDB (MariaDB).
    pub moved_row_scans: bool,
    /// An autocommit locking read at SERIALIZABLE may wait for a
    /// transaction that changes a column its subquery compares
    /// (`gen::subquery_view`): InnoDB evaluates the subquery in the read
    /// view from before the wait (MariaDB).
    pub subquery_read_views: bool,
    /// A transaction may leave a child row of a DEFERRABLE INITIALLY
    /// DEFERRED key without its parent and then write parents so that a
    /// foreign-key action writes other children, or delete two parents with
    /// children and insert one again (`gen::deferred`): turso forgets the
    /// violation at COMMIT.
    pub deferred_key_shapes: bool,
    /// A REPLACE into a parent table may conflict on a UNIQUE key with a
    /// parent that has children of an immediate foreign key
    /// (`gen::replace_parent`): turso commits the orphan.
    pub parent_replaces: bool,
    /// A plain SELECT may become a LEFT JOIN that null-extends rows, with a
    /// correlated EXISTS on the joined table's key (`gen::outer_join`):
    /// turso panics on the null-extended row.
    pub null_side_subqueries: bool,
    /// A transaction whose session sets `innodb_snapshot_isolation=ON` may
    /// take a read view, then lock-read a table through a secondary index
    /// while another transaction holds a changed row of it
    /// (`gen::snapshot_reads`): InnoDB returns the row changed after the
    /// read view instead of failing (MariaDB).
    pub snapshot_index_reads: bool,
}

/// SQLite's and turso's start modes ("BEGIN TRANSACTION"; turso's
/// "Transactions" page: DEFERRED, IMMEDIATE, EXCLUSIVE).
pub const SQLITE_START_MODES: &[StartMode] = &[
    StartMode::Default,
    StartMode::Deferred,
    StartMode::Immediate,
    StartMode::Exclusive,
    StartMode::Savepoint,
];

impl Features {
    pub fn sqlite() -> Self {
        Features {
            replace: true,
            locking_reads: false,
            savepoints: true,
            upsert: true,
            foreign_keys: true,
            fk_actions: true,
            fk_actions_on_checked_columns: true,
            deferrable_fks: true,
            set_constraints: true,
            start_modes: SQLITE_START_MODES,
            read_only: false,
            deferrable: false,
            cursors: true,
            cursors_insensitive: false,
            checkpoints: true,
            echo_updates: false,
            subquery_locking_reads: false,
            key_moves: false,
            key_change_phantoms: false,
            moved_row_scans: false,
            subquery_read_views: false,
            deferred_key_shapes: false,
            parent_replaces: false,
            null_side_subqueries: false,
            snapshot_index_reads: false,
        }
    }
    pub fn mysql() -> Self {
        Features {
            replace: true,
            locking_reads: true,
            savepoints: true,
            upsert: true,
            foreign_keys: true,
            fk_actions: true,
            fk_actions_on_checked_columns: false,
            deferrable_fks: false,
            set_constraints: false,
            start_modes: &[StartMode::Default, StartMode::ConsistentSnapshot],
            read_only: true,
            deferrable: false,
            cursors: false,
            cursors_insensitive: false,
            checkpoints: false,
            echo_updates: true,
            subquery_locking_reads: true,
            key_moves: true,
            key_change_phantoms: true,
            moved_row_scans: true,
            subquery_read_views: true,
            deferred_key_shapes: false,
            parent_replaces: false,
            null_side_subqueries: false,
            snapshot_index_reads: true,
        }
    }
    pub fn postgres() -> Self {
        Features {
            replace: false,
            locking_reads: true,
            savepoints: true,
            upsert: true,
            foreign_keys: true,
            fk_actions: true,
            fk_actions_on_checked_columns: true,
            deferrable_fks: true,
            set_constraints: true,
            start_modes: &[StartMode::Default],
            read_only: true,
            deferrable: true,
            // SQL cursors (DECLARE / FETCH / CLOSE) inside a transaction.
            cursors: true,
            cursors_insensitive: true,
            checkpoints: false,
            echo_updates: false,
            subquery_locking_reads: false,
            key_moves: false,
            key_change_phantoms: false,
            moved_row_scans: false,
            subquery_read_views: false,
            deferred_key_shapes: false,
            parent_replaces: false,
            null_side_subqueries: false,
            snapshot_index_reads: false,
        }
    }
}
