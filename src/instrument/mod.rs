//! Instrumentation (docs/design.md §2): every generated table carries hidden
//! columns `rid` (row identity) and `wl` (write list, `'0'` for initial rows, and
//! `',k'` appended by write operation `k`). This module rewrites a case statement
//! so that it reports the row versions it read and wrote, and interprets what the
//! engine returned into an [`Outcome`].
//!
//! What is observed and what is not:
//! - SELECT projects `alias.rid, alias.wl` for every table instance in FROM. With
//!   aggregates, GROUP BY or DISTINCT the rows read are not observable (adding
//!   `rid` would change the result), and rows examined by subqueries never are:
//!   `reads_complete` is false then. No read is invented.
//! - UPDATE appends `,k` to `wl` and returns `rid, wl` (RETURNING, PostgreSQL);
//!   the version it overwrote is the returned list without its last entry.
//!   MariaDB has no UPDATE RETURNING, and on SQLite RETURNING changes how the
//!   UPDATE runs: there the `wl` assignment itself records each row it writes
//!   (a user variable; a session function), and on MariaDB appends only where
//!   a user column changed (a no-op UPDATE or upsert arm stays one).
//! - Whatever instrumentation cannot do neutrally runs as written, unobserved
//!   ([`Prepared::unobserved`]; MariaDB locking reads whose plan would change),
//!   and the shadow run ([`crate::oracle::fidelity`], [`Prepared::uninstrumented`])
//!   checks the rest.
//! - DELETE returns `rid, wl` of the rows it removed.
//! - INSERT writes `rid` and `wl = 'k'` literally; the upsert update arm appends
//!   `,k`, so a returned list other than `k` is an update of an existing row.
//! - REPLACE on SQLite: rows it deletes are not observed (a pre-image read would
//!   start a read transaction and turn a lock wait into SQLITE_BUSY, changing the
//!   behaviour under test), so `writes_complete` is false for it.

mod interpret;
mod prepare;
mod user_variable;

pub use interpret::{interpret_result, Capture};
pub use prepare::{
    prepare, prepare_case, reports_affected, CursorStep, Prepared, Shape, Target, UpdateCapture,
    CAPTURE_VAR, OP_VAR, SQLITE_CAPTURE, SQLITE_TAKE,
};
