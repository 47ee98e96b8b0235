//! The SQL features an engine supports, which the generator may use (part of
//! the engine profile).

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
}

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
        }
    }
}
