//! Transaction statements and per-session setup.

use super::expr::{expr_list, ident_list, render_expr, render_select};
use super::Dialect;
use crate::model::{
    Assignment, Begin, ConstraintTiming, Delete, Expr, Insert, Isolation, OnConflict, StartMode,
    Stmt, Update, OUTERMOST_SAVEPOINT,
};

/// One statement, without a trailing semicolon.
///
/// `Insert::rids` is not rendered (instrumentation adds `rid`/`wl` elsewhere).
/// Statements [`super::unsupported`] rejects still render to something: on
/// PostgreSQL, `OnConflict::Replace` renders as a plain INSERT.
pub fn render_stmt(d: Dialect, s: &Stmt) -> String {
    match s {
        Stmt::Begin(b) => begin(d, b),
        Stmt::Commit => "COMMIT".to_string(),
        Stmt::Rollback => "ROLLBACK".to_string(),
        Stmt::Savepoint(n) => format!("SAVEPOINT {n}"),
        Stmt::RollbackTo(n) => format!("ROLLBACK TO SAVEPOINT {n}"),
        Stmt::Release(n) => format!("RELEASE SAVEPOINT {n}"),
        Stmt::SetConstraints(t) => set_constraints(d, *t),
        Stmt::Select(sel) => render_select(d, sel),
        Stmt::Insert(ins) => render_insert(d, ins),
        Stmt::Update(upd) => render_update(d, upd),
        Stmt::Delete(del) => render_delete(d, del),
        // Cursor steps are API calls, not SQL: shown as comments in scripts.
        Stmt::Fetch(f) => format!("-- FETCH {} ROWS FROM CURSOR {}", f.rows, f.cursor),
        Stmt::Close(c) => format!("-- CLOSE CURSOR {c}"),
    }
}

/// `SET CONSTRAINTS ALL ...` (PostgreSQL), `PRAGMA defer_foreign_keys`
/// (SQLite; MariaDB has neither: `unsupported` says so).
fn set_constraints(d: Dialect, t: ConstraintTiming) -> String {
    let deferred = t == ConstraintTiming::Deferred;
    match d {
        Dialect::Sqlite => format!(
            "PRAGMA defer_foreign_keys = {}",
            if deferred { "ON" } else { "OFF" }
        ),
        Dialect::Postgres | Dialect::Mysql => format!(
            "SET CONSTRAINTS ALL {}",
            if deferred { "DEFERRED" } else { "IMMEDIATE" }
        ),
    }
}

/// A BEGIN with its options, as the dialect spells them. Options a dialect
/// has no words for render nothing ([`super::unsupported`] refuses them).
fn begin(d: Dialect, b: &Begin) -> String {
    match d {
        Dialect::Sqlite => match b.mode {
            StartMode::Deferred => "BEGIN DEFERRED",
            StartMode::Immediate => "BEGIN IMMEDIATE",
            StartMode::Exclusive => "BEGIN EXCLUSIVE",
            StartMode::Concurrent => "BEGIN CONCURRENT",
            StartMode::Savepoint => return format!("SAVEPOINT {OUTERMOST_SAVEPOINT}"),
            StartMode::Default | StartMode::ConsistentSnapshot => "BEGIN",
        }
        .to_string(),
        // MariaDB KB "START TRANSACTION": START TRANSACTION
        // [transaction_property [, transaction_property] ...], with
        // WITH CONSISTENT SNAPSHOT | READ WRITE | READ ONLY.
        Dialect::Mysql => {
            let mut props = Vec::new();
            if b.mode == StartMode::ConsistentSnapshot {
                props.push("WITH CONSISTENT SNAPSHOT");
            }
            if b.read_only {
                props.push("READ ONLY");
            }
            match props.is_empty() {
                true => "START TRANSACTION".to_string(),
                false => format!("START TRANSACTION {}", props.join(", ")),
            }
        }
        // PostgreSQL "BEGIN": BEGIN [ transaction_mode [, ...] ] with
        // READ WRITE | READ ONLY, [ NOT ] DEFERRABLE (the level is the
        // session's: `session_setup`).
        Dialect::Postgres => {
            let mut s = "BEGIN".to_string();
            if b.read_only {
                s.push_str(" READ ONLY");
            }
            if b.deferrable {
                s.push_str(" DEFERRABLE");
            }
            s
        }
    }
}

/// Statements to run once on a fresh session before its transaction. SQLite
/// needs none: it is always serializable.
pub fn session_setup(d: Dialect, iso: Isolation) -> Vec<String> {
    match d {
        Dialect::Sqlite => Vec::new(),
        Dialect::Mysql => vec![format!(
            "SET SESSION TRANSACTION ISOLATION LEVEL {}",
            iso.sql()
        )],
        Dialect::Postgres => vec![format!(
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {}",
            iso.sql()
        )],
    }
}

/// The statements that give a session its own values of engine settings
/// (`Txn::settings`; names and values were checked against the profile).
pub fn session_settings(d: Dialect, settings: &crate::model::Settings) -> Vec<String> {
    settings
        .iter()
        .map(|(name, value)| match d {
            Dialect::Sqlite => format!("PRAGMA {name} = {value}"),
            Dialect::Mysql => format!("SET SESSION {name} = {value}"),
            Dialect::Postgres => format!("SET {name} = '{value}'"),
        })
        .collect()
}

fn render_insert(d: Dialect, ins: &Insert) -> String {
    let head = insert_head(d, &ins.on_conflict);
    let source = match &ins.select {
        Some(q) => render_select(d, q),
        None => {
            let rows: Vec<String> = ins
                .rows
                .iter()
                .map(|r| format!("({})", expr_list(d, r)))
                .collect();
            format!("VALUES {}", rows.join(", "))
        }
    };
    let mut sql = format!(
        "{head} {} ({}) {source}",
        ins.table,
        ident_list(&ins.columns),
    );
    sql.push_str(&conflict_tail(d, &ins.table, &ins.on_conflict));
    sql
}

/// `INSERT INTO`, `INSERT OR IGNORE INTO`, `INSERT IGNORE INTO` or `REPLACE INTO`.
fn insert_head(d: Dialect, oc: &OnConflict) -> &'static str {
    match (d, oc) {
        (Dialect::Sqlite, OnConflict::Ignore) => "INSERT OR IGNORE INTO",
        (Dialect::Mysql, OnConflict::Ignore) => "INSERT IGNORE INTO",
        (Dialect::Sqlite | Dialect::Mysql, OnConflict::Replace) => "REPLACE INTO",
        _ => "INSERT INTO",
    }
}

/// The clause after VALUES: `ON CONFLICT ...` or `ON DUPLICATE KEY UPDATE ...`.
fn conflict_tail(d: Dialect, table: &str, oc: &OnConflict) -> String {
    match (d, oc) {
        (Dialect::Postgres, OnConflict::Ignore) => " ON CONFLICT DO NOTHING".to_string(),
        (Dialect::Mysql, OnConflict::Update { assignments, .. }) => {
            format!(" ON DUPLICATE KEY UPDATE {}", set_list(d, assignments))
        }
        (
            Dialect::Sqlite,
            OnConflict::Update {
                target,
                assignments,
            },
        ) => format!(
            " ON CONFLICT{} DO UPDATE SET {}",
            conflict_target(target),
            set_list(d, assignments)
        ),
        (
            Dialect::Postgres,
            OnConflict::Update {
                target,
                assignments,
            },
        ) => {
            let qualified: Vec<Assignment> = assignments
                .iter()
                .map(|a| Assignment {
                    column: a.column.clone(),
                    value: qualify_cols(table, &a.value),
                })
                .collect();
            format!(
                " ON CONFLICT{} DO UPDATE SET {}",
                conflict_target(target),
                set_list(d, &qualified)
            )
        }
        _ => String::new(),
    }
}

fn conflict_target(target: &[String]) -> String {
    if target.is_empty() {
        String::new()
    } else {
        format!(" ({})", ident_list(target))
    }
}

/// Qualifies unqualified column references with `table` (outside subqueries).
/// PostgreSQL needs this in `DO UPDATE SET`: there `excluded`'s columns are in
/// scope too, so a bare `c` is ambiguous.
fn qualify_cols(table: &str, e: &Expr) -> Expr {
    e.map_cols(&|t, name| t.is_none().then(|| Expr::qcol(table, name)))
}

/// `c = e, ...`
fn set_list(d: Dialect, assignments: &[Assignment]) -> String {
    let parts: Vec<String> = assignments
        .iter()
        .map(|a| format!("{} = {}", a.column, render_expr(d, &a.value)))
        .collect();
    parts.join(", ")
}

fn render_update(d: Dialect, upd: &Update) -> String {
    let mut sql = format!("UPDATE {} SET {}", upd.table, set_list(d, &upd.assignments));
    push_where(d, &mut sql, upd.where_.as_ref());
    sql
}

fn render_delete(d: Dialect, del: &Delete) -> String {
    let mut sql = format!("DELETE FROM {}", del.table);
    push_where(d, &mut sql, del.where_.as_ref());
    sql
}

fn push_where(d: Dialect, sql: &mut String, w: Option<&Expr>) {
    if let Some(w) = w {
        sql.push_str(" WHERE ");
        sql.push_str(&render_expr(d, w));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Value;
    use crate::sql::{create_table, fixtures, insert_rows, unsupported};

    fn render_all(d: Dialect, stmts: &[Stmt]) -> String {
        let lines: Vec<String> = stmts.iter().map(|s| render_stmt(d, s)).collect();
        lines.join(";\n")
    }

    #[test]
    fn snapshot_selects() {
        for d in Dialect::ALL {
            insta::assert_snapshot!(format!("selects_{d}"), render_all(d, &fixtures::selects()));
        }
    }

    #[test]
    fn snapshot_inserts() {
        for d in Dialect::ALL {
            insta::assert_snapshot!(format!("inserts_{d}"), render_all(d, &fixtures::inserts()));
        }
    }

    #[test]
    fn snapshot_updates_deletes() {
        for d in Dialect::ALL {
            insta::assert_snapshot!(
                format!("updates_deletes_{d}"),
                render_all(d, &fixtures::updates_deletes())
            );
        }
    }

    #[test]
    fn snapshot_control() {
        for d in Dialect::ALL {
            let mut text = render_all(d, &fixtures::control());
            for iso in Isolation::ALL {
                for s in session_setup(d, iso) {
                    text.push_str(";\n");
                    text.push_str(&s);
                }
            }
            insta::assert_snapshot!(format!("control_{d}"), text);
        }
    }

    #[test]
    fn sqlite_has_no_session_setup() {
        for iso in Isolation::ALL {
            assert!(session_setup(Dialect::Sqlite, iso).is_empty());
        }
    }

    #[test]
    fn rids_are_not_rendered() {
        let d = Dialect::Sqlite;
        for s in fixtures::inserts() {
            assert!(
                !render_stmt(d, &s).contains("rid"),
                "{}",
                render_stmt(d, &s)
            );
        }
    }

    /// Every statement of the representative set, rendered for SQLite, is
    /// accepted by a real SQLite.
    #[test]
    fn sqlite_accepts_every_rendered_statement() -> rusqlite::Result<()> {
        let d = Dialect::Sqlite;
        let conn = rusqlite::Connection::open_in_memory()?;
        conn.execute_batch("PRAGMA foreign_keys = ON")?;
        for (t, rows) in fixtures::schema_with_rows() {
            for sql in create_table(d, &t) {
                conn.execute_batch(&sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            if let Some(sql) = insert_rows(d, &t, &rows) {
                conn.execute_batch(&sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        }
        let mut stmts = vec![Stmt::begin()];
        stmts.extend(fixtures::selects());
        stmts.extend(fixtures::inserts());
        stmts.extend(fixtures::updates_deletes());
        stmts.push(Stmt::Commit);
        stmts.extend(fixtures::control());
        for s in &stmts {
            assert_eq!(unsupported(d, s), None, "{s:?}");
            let sql = render_stmt(d, &with_hidden_columns(s));
            run_one(&conn, &sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        Ok(())
    }

    /// What instrumentation does before running an INSERT: adds the hidden
    /// `rid` and `wl` columns (NOT NULL, so the INSERT fails without them).
    fn with_hidden_columns(s: &Stmt) -> Stmt {
        let Stmt::Insert(ins) = s else {
            return s.clone();
        };
        let mut ins = ins.clone();
        ins.columns
            .splice(0..0, ["rid".to_string(), "wl".to_string()]);
        for (row, rid) in ins.rows.iter_mut().zip(&ins.rids) {
            let hidden = [Value::Int(*rid), Value::Text("0".into())].map(Expr::Lit);
            row.splice(0..0, hidden);
        }
        Stmt::Insert(ins)
    }

    /// Runs one statement, stepping through every result row of a query.
    fn run_one(conn: &rusqlite::Connection, sql: &str) -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(sql)?;
        let mut rows = stmt.raw_query();
        while rows.next()?.is_some() {}
        Ok(())
    }
}
