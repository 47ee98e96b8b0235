//! MariaDB and MySQL: writes report their rows through user variables
//! ([`super::UpdateCapture::UserVariable`]).
//!
//! MariaDB has RETURNING for INSERT, REPLACE and DELETE but not for UPDATE
//! (nor for the update arm of ON DUPLICATE KEY UPDATE); MySQL has none. The
//! `wl` assignment of an UPDATE appends `rid:old-wl` of each row to a user
//! variable, read back afterwards: no extra table access, so no extra locks.
//! It appends `,k` to `wl` only where an assigned user column changed, so
//! that a no-op stays a no-op for InnoDB (no new row version); unchanged
//! rows are captured with a trailing `=`.
//!
//! In which order are the SET assignments made? Left to right, each on the
//! row as the earlier ones left it, in a plain single-table UPDATE (MariaDB
//! KB "UPDATE": "single-table UPDATE assignments are generally evaluated
//! from left to right", unless `SIMULTANEOUS_ASSIGNMENT`; MySQL 9.7
//! Reference Manual 15.2.17 "UPDATE Statement": "Single-table UPDATE
//! assignments are generally evaluated from left to right. For
//! multiple-table updates, there is no guarantee that assignments are
//! carried out in any particular order"). "Generally": MySQL 9.7 and
//! MariaDB 11.8 run `UPDATE t SET a = a + 1, b = a WHERE id IN (SELECT
//! ...)` as a semi-join, a multiple-table update inside, and make every
//! assignment on the old row. The instrumentation proves the order per row:
//! its first assignment keeps the old values of the assigned columns and
//! marks `wl` with a trailing `~`; its last one, if it sees the mark, came
//! after the user's assignments (the columns hold the new values, compared
//! as stored), and otherwise saw the old row (the new values are the
//! assignments' own expressions, converted to the columns' types as a store
//! converts them). Either way the mark is gone from the stored `wl`.
//!
//! MySQL: INSERT and DELETE rows are recorded by AFTER INSERT and AFTER
//! DELETE triggers (`rid:wl!`) while `@txfuzz_op` is set; an AFTER trigger
//! can change nothing of the row, so the server marks none of its columns
//! written (a BEFORE UPDATE trigger that reads `NEW.k` makes the server
//! treat `k` as written, and an UPDATE scanning an index over `k` then
//! collects its rows before changing any: seen on MySQL 9.7 and MariaDB
//! 11.8, so no UPDATE trigger is used).

use crate::model::{Assignment, ColType, Schema, Update, RID, WL};
use crate::sql::{self, Dialect, CAPTURE_VAR, OP_VAR};

/// The MariaDB user variable that keeps a row's assigned columns before an UPDATE.
const OLD_VAR: &str = "@txfuzz_o";

/// The `pre` of a captured write: the capture variable emptied and, where
/// triggers record rows (no RETURNING), the op they record for (`NULL`:
/// none, an UPDATE's own rows come from its `wl` assignment).
pub(super) fn pre(returning: bool, triggers_record: bool, op: u32) -> String {
    if returning {
        format!("SET {CAPTURE_VAR} = NULL")
    } else if triggers_record {
        format!("SET {CAPTURE_VAR} = NULL, {OP_VAR} = {op}")
    } else {
        format!("SET {CAPTURE_VAR} = NULL, {OP_VAR} = NULL")
    }
}

/// The query that reads what was captured.
pub(super) fn capture_query() -> String {
    format!("SELECT {CAPTURE_VAR}")
}

/// One `rid:wl<suffix>` item appended to the capture variable, as a
/// zero-length string (`q`: the table qualifier, `wl`: the list to report).
fn capture_item(q: &str, wl: &str, suffix: &str) -> String {
    format!("LEFT({CAPTURE_VAR} := CONCAT_WS(';', {CAPTURE_VAR}, CONCAT({q}{RID}, ':', {wl}{suffix})), 0)")
}

/// `CAST(JSON_ARRAY(...) AS BINARY)`: values compared as stored.
fn digest(items: &[String]) -> String {
    format!("CAST(JSON_ARRAY({}) AS BINARY)", items.join(", "))
}

/// `expr` converted as storing it into a column of type `ty` converts it.
fn stored_as(ty: Option<ColType>, expr: String) -> String {
    match ty {
        Some(ColType::Int | ColType::BigInt | ColType::Bool) => format!("CAST({expr} AS SIGNED)"),
        Some(ColType::Decimal) => format!("CAST({expr} AS DECIMAL(10,2))"),
        Some(ColType::Varchar(_) | ColType::Text) => format!("CAST({expr} AS CHAR)"),
        None => expr,
    }
}

/// The instrumented UPDATE `sql` (its `wl` append `wl = CONCAT(wl, ',op')`
/// last) with a `wl` assignment that appends only where a value changed,
/// whatever order the engine makes the assignments in (module comment);
/// `None` if the append is not there.
pub(super) fn update_sql(sql: &str, u: &Update, schema: &Schema, op: u32) -> Option<String> {
    let columns: Vec<String> = u.assignments.iter().map(|a| a.column.clone()).collect();
    let table = schema.table(&u.table);
    let expressions: Vec<String> = u
        .assignments
        .iter()
        .map(|a| {
            let ty = table.and_then(|t| t.column(&a.column)).map(|c| c.ty);
            stored_as(ty, sql::render_expr(Dialect::Mysql, &a.value))
        })
        .collect();
    let marked = format!("RIGHT({WL}, 1) = '~'");
    let base = format!("IF({marked}, LEFT({WL}, CHAR_LENGTH({WL}) - 1), {WL})");
    let new = format!(
        "IF({marked}, {}, {})",
        digest(&columns),
        digest(&expressions)
    );
    let keep_old = format!(
        "{WL} = CONCAT(LEFT({OLD_VAR} := {}, 0), {WL}, '~'), ",
        digest(&columns)
    );
    let last = format!(
        "{WL} = IF({new} <=> {OLD_VAR}, CONCAT({base}, {same}), CONCAT({base}, ',{op}', {changed}))",
        same = capture_item("", &base, ", '='"),
        changed = capture_item("", &base, ""),
    );
    let marker = format!("{WL} = CONCAT({WL}, ',{op}')");
    replace_marker(sql, " SET ", &keep_old, &marker, &last)
}

/// The instrumented upsert `sql` with its update arm's `wl` append made
/// only where a value changed, like an UPDATE's: a no-op arm stays one
/// (InnoDB then counts the row as unaffected). The arm's assignments are
/// made on the existing row, left to right (MySQL 9.7 Reference Manual
/// 15.2.7.2 "INSERT ... ON DUPLICATE KEY UPDATE"; txfuzz has seen no other
/// order there).
pub(super) fn upsert_arm_sql(
    sql: &str,
    table: &str,
    assignments: &[Assignment],
    op: u32,
) -> Option<String> {
    let q = format!("{table}.");
    let targets: Vec<String> = assignments
        .iter()
        .map(|a| format!("{q}{}", a.column))
        .collect();
    let d = digest(&targets);
    let keep_old = format!("{WL} = CONCAT(LEFT({OLD_VAR} := {d}, 0), {q}{WL}), ");
    let last = format!(
        "{WL} = IF({d} <=> {OLD_VAR}, CONCAT({q}{WL}, {same}), CONCAT({q}{WL}, ',{op}', {changed}))",
        same = capture_item(&q, &format!("{q}{WL}"), ", '='"),
        changed = capture_item(&q, &format!("{q}{WL}"), ""),
    );
    let marker = format!("{WL} = CONCAT({q}{WL}, ',{op}')");
    replace_marker(sql, " ON DUPLICATE KEY UPDATE ", &keep_old, &marker, &last)
}

/// `sql` without RETURNING, with `keep_old` first in the assignments after
/// `clause` and `last` in place of txfuzz's own `wl` append (`marker`).
fn replace_marker(
    sql: &str,
    clause: &str,
    keep_old: &str,
    marker: &str,
    last: &str,
) -> Option<String> {
    let base = without_returning(sql);
    let at = base.rfind(marker)?;
    let sql = format!("{}{}{}", &base[..at], last, &base[at + marker.len()..]);
    Some(sql.replacen(clause, &format!("{clause}{keep_old}"), 1))
}

/// `sql` without txfuzz's `RETURNING rid, wl`.
pub(super) fn without_returning(sql: &str) -> &str {
    sql.strip_suffix(&format!(" RETURNING {RID}, {WL}"))
        .unwrap_or(sql)
}
