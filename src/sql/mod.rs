//! SQL rendering: one renderer per dialect over the statement IR.
//!
//! Everything here is a pure function from the IR in [`crate::model`] to SQL
//! text; nothing talks to an engine.
//!
//! - [`render_value`], [`render_expr`], [`render_select`] (module `expr`):
//!   literals, expressions and queries. Binary operators are always fully
//!   parenthesised, so operator precedence never depends on the dialect.
//! - [`render_stmt`], [`session_setup`] (module `render`): one statement of a
//!   transaction, without a trailing semicolon, and the per-session setup.
//! - [`unsupported`] (module `check`): why a statement cannot run on a dialect
//!   (e.g. `REPLACE` on PostgreSQL). Things a dialect simply lacks but that do
//!   not change what a statement means are omitted instead: a locking clause on
//!   SQLite (which has no row locks) is dropped, not reported.
//! - [`create_table`], [`drop_table`], [`insert_rows`], [`select_state`]
//!   (module `ddl`): schema setup, initial data and state read-back, including
//!   the hidden instrumentation columns [`crate::model::RID`] and
//!   [`crate::model::WL`].
//!
//! Identifiers are generated simple lowercase names and are never quoted.

mod check;
mod ddl;
mod expr;
mod render;
mod triggers;

#[cfg(test)]
mod fixtures;

pub use check::{nul_problem, selects_of, unsupported};
pub use ddl::{
    create_table, create_table_as, create_temporary_index, drop_table, drop_temporary_index,
    empty_table, foreign_key_switch, insert_rows, insert_rows_as, select_state, select_state_as,
    Layout,
};
pub use expr::{from_clause, render_expr, render_select, render_value};
pub use render::{render_stmt, session_settings, session_setup};
pub use triggers::{capture_triggers, CAPTURE_VAR, OP_VAR};

use serde::{Deserialize, Serialize};
use std::fmt;

/// SQLite's and turso's checkpoint of a case that asks for one
/// ([`crate::model::TestCase::checkpoint`]): every frame of the log moved
/// into the database file, and the log emptied.
pub const CHECKPOINT: &str = "PRAGMA wal_checkpoint(TRUNCATE)";

/// A SQL dialect txfuzz can render for. `Mysql` targets MySQL/MariaDB (10.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    Sqlite,
    Mysql,
    Postgres,
}

impl Dialect {
    /// Every dialect, in a fixed order.
    pub const ALL: [Dialect; 3] = [Dialect::Sqlite, Dialect::Mysql, Dialect::Postgres];

    /// Lowercase name, as in the serialized form.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Mysql => "mysql",
            Dialect::Postgres => "postgres",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
