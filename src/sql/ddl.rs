//! Schema setup, initial data and state read-back, with the hidden columns
//! `rid` (row id) and `wl` (write list).

use super::expr::{ident_list, render_expr, render_value};
use super::Dialect;
use crate::model::{ColType, Column, Deferral, FkAction, ForeignKey, Index, Row, Table, RID, WL};

/// Whether tables carry the hidden instrumentation columns `rid` and `wl`
/// (every run txfuzz checks) or only the case's own columns (the shadow run,
/// which executes the case as a user would and compares what users see).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    #[default]
    Instrumented,
    Plain,
}

/// CREATE TABLE followed by one CREATE [UNIQUE] INDEX per secondary index.
///
/// Columns: the hidden `rid BIGINT NOT NULL, wl TEXT NOT NULL` first, then the
/// table's columns, then the PRIMARY KEY, UNIQUE, CHECK and FOREIGN KEY table
/// constraints. MySQL tables use InnoDB.
pub fn create_table(d: Dialect, t: &Table) -> Vec<String> {
    create_table_as(d, t, Layout::Instrumented)
}

/// [`create_table`] in the given layout (`Plain`: without `rid` and `wl`).
pub fn create_table_as(d: Dialect, t: &Table, layout: Layout) -> Vec<String> {
    let mut parts = match layout {
        Layout::Instrumented => vec![
            format!("{RID} BIGINT NOT NULL"),
            format!("{WL} TEXT NOT NULL"),
        ],
        Layout::Plain => Vec::new(),
    };
    parts.extend(t.columns.iter().map(|c| column_def(d, c)));
    parts.extend(constraints(d, t));
    let mut create = format!("CREATE TABLE {} ({})", t.name, parts.join(", "));
    if d == Dialect::Mysql {
        create.push_str(" ENGINE=InnoDB");
    }
    let mut out = vec![create];
    out.extend(t.indexes.iter().map(|i| create_index(&t.name, i)));
    out
}

fn column_def(d: Dialect, c: &Column) -> String {
    let mut def = format!("{} {}", c.name, col_type(c.ty));
    if c.not_null {
        def.push_str(" NOT NULL");
    }
    if let Some(v) = &c.default {
        def.push_str(" DEFAULT ");
        def.push_str(&render_value(d, v));
    }
    def
}

/// The same spelling in every dialect. `INT`, not `INTEGER`: in SQLite an
/// `INTEGER PRIMARY KEY` column becomes an alias of the rowid.
fn col_type(ty: ColType) -> String {
    match ty {
        ColType::Int => "INT".to_string(),
        ColType::BigInt => "BIGINT".to_string(),
        ColType::Decimal => "DECIMAL(10,2)".to_string(),
        ColType::Varchar(n) => format!("VARCHAR({n})"),
        ColType::Text => "TEXT".to_string(),
        ColType::Bool => "BOOLEAN".to_string(),
    }
}

fn constraints(d: Dialect, t: &Table) -> Vec<String> {
    let mut out = Vec::new();
    if !t.primary_key.is_empty() {
        out.push(format!("PRIMARY KEY ({})", ident_list(&t.primary_key)));
    }
    out.extend(
        t.uniques
            .iter()
            .filter(|u| !u.is_empty())
            .map(|u| format!("UNIQUE ({})", ident_list(u))),
    );
    out.extend(
        t.checks
            .iter()
            .map(|c| format!("CHECK ({})", render_expr(d, c))),
    );
    out.extend(t.foreign_keys.iter().map(foreign_key));
    out
}

/// `FOREIGN KEY (..) REFERENCES p (..)` with its actions (NO ACTION, the
/// default, is left out) and deferral. The generator draws only what the
/// engine's `Features` list; a case file with more (DEFERRABLE on MariaDB)
/// is refused by the engine when the case is loaded (a setup error).
fn foreign_key(fk: &ForeignKey) -> String {
    let mut out = format!(
        "FOREIGN KEY ({}) REFERENCES {} ({})",
        ident_list(&fk.columns),
        fk.ref_table,
        ident_list(&fk.ref_columns)
    );
    if fk.on_delete != FkAction::NoAction {
        out.push_str(&format!(" ON DELETE {}", fk.on_delete.sql()));
    }
    if fk.on_update != FkAction::NoAction {
        out.push_str(&format!(" ON UPDATE {}", fk.on_update.sql()));
    }
    match fk.deferrable {
        None => {}
        Some(Deferral::InitiallyImmediate) => out.push_str(" DEFERRABLE INITIALLY IMMEDIATE"),
        Some(Deferral::InitiallyDeferred) => out.push_str(" DEFERRABLE INITIALLY DEFERRED"),
    }
    out
}

fn create_index(table: &str, i: &Index) -> String {
    let unique = if i.unique { "UNIQUE " } else { "" };
    format!(
        "CREATE {unique}INDEX {} ON {table} ({})",
        i.name,
        ident_list(&i.columns)
    )
}

/// `DROP TABLE IF EXISTS t` (PostgreSQL: with `CASCADE`, dropping dependent
/// foreign keys).
pub fn drop_table(d: Dialect, name: &str) -> String {
    match d {
        Dialect::Postgres => format!("DROP TABLE IF EXISTS {name} CASCADE"),
        Dialect::Sqlite | Dialect::Mysql => format!("DROP TABLE IF EXISTS {name}"),
    }
}

/// One multi-row INSERT of initial rows, columns `(rid, wl, c...)`, every row
/// with write list `'0'`. `None` when `rows` is empty.
pub fn insert_rows(d: Dialect, t: &Table, rows: &[Row]) -> Option<String> {
    insert_rows_as(d, t, rows, Layout::Instrumented)
}

/// [`insert_rows`] in the given layout (`Plain`: the case's columns only).
pub fn insert_rows_as(d: Dialect, t: &Table, rows: &[Row], layout: Layout) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let initial_wl = render_value(d, &crate::model::Value::Text("0".to_string()));
    let tuples: Vec<String> = rows
        .iter()
        .map(|r| {
            let mut vals = match layout {
                Layout::Instrumented => vec![r.rid.to_string(), initial_wl.clone()],
                Layout::Plain => Vec::new(),
            };
            vals.extend(r.values.iter().map(|v| render_value(d, v)));
            format!("({})", vals.join(", "))
        })
        .collect();
    Some(format!(
        "INSERT INTO {} ({}) VALUES {}",
        t.name,
        columns(t, layout),
        tuples.join(", ")
    ))
}

/// `SELECT rid, wl, <cols> FROM t ORDER BY rid`: a table's full state.
pub fn select_state(d: Dialect, t: &Table) -> String {
    select_state_as(d, t, Layout::Instrumented)
}

/// [`select_state`] in the given layout (`Plain`: the case's columns, no
/// order: callers sort).
pub fn select_state_as(_d: Dialect, t: &Table, layout: Layout) -> String {
    match layout {
        Layout::Instrumented => format!(
            "SELECT {} FROM {} ORDER BY {RID}",
            columns(t, layout),
            t.name
        ),
        Layout::Plain => format!("SELECT {} FROM {}", columns(t, layout), t.name),
    }
}

/// `rid, wl, c...` (instrumented) or `c...` (plain).
fn columns(t: &Table, layout: Layout) -> String {
    let mut names = match layout {
        Layout::Instrumented => vec![RID.to_string(), WL.to_string()],
        Layout::Plain => Vec::new(),
    };
    names.extend(t.columns.iter().map(|c| c.name.clone()));
    ident_list(&names)
}

/// Statements that turn foreign-key enforcement off and on again for the
/// session, where the dialect has them (SQLite's PRAGMA); `None` elsewhere.
pub fn foreign_key_switch(d: Dialect) -> Option<(&'static str, &'static str)> {
    (d == Dialect::Sqlite).then_some(("PRAGMA foreign_keys=OFF", "PRAGMA foreign_keys=ON"))
}

/// The statement that empties table `name`, and whether it also empties the
/// tables that reference it (PostgreSQL: `TRUNCATE ... CASCADE`, since a
/// referenced table cannot be emptied alone).
pub fn empty_table(d: Dialect, name: &str) -> (String, bool) {
    match d {
        Dialect::Postgres => (format!("TRUNCATE {name} CASCADE"), true),
        _ => (format!("DELETE FROM {name}"), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::fixtures;

    fn ddl_text(d: Dialect) -> String {
        let mut lines = Vec::new();
        for (t, rows) in fixtures::schema_with_rows() {
            lines.push(drop_table(d, &t.name));
            lines.extend(create_table(d, &t));
            lines.extend(insert_rows(d, &t, &rows));
            lines.push(select_state(d, &t));
        }
        lines.join(";\n")
    }

    #[test]
    fn snapshot_ddl() {
        for d in Dialect::ALL {
            insta::assert_snapshot!(format!("ddl_{d}"), ddl_text(d));
        }
    }

    #[test]
    fn foreign_keys_render_their_actions_and_deferral() {
        let mut fk = ForeignKey {
            columns: vec!["pk".into()],
            ref_table: "p".into(),
            ref_columns: vec!["k".into()],
            ..ForeignKey::default()
        };
        assert_eq!(foreign_key(&fk), "FOREIGN KEY (pk) REFERENCES p (k)");
        fk.on_delete = FkAction::Cascade;
        fk.on_update = FkAction::SetNull;
        fk.deferrable = Some(Deferral::InitiallyDeferred);
        assert_eq!(
            foreign_key(&fk),
            "FOREIGN KEY (pk) REFERENCES p (k) ON DELETE CASCADE ON UPDATE SET NULL \
             DEFERRABLE INITIALLY DEFERRED"
        );
        fk.on_delete = FkAction::Restrict;
        fk.on_update = FkAction::NoAction;
        fk.deferrable = Some(Deferral::InitiallyImmediate);
        assert_eq!(
            foreign_key(&fk),
            "FOREIGN KEY (pk) REFERENCES p (k) ON DELETE RESTRICT DEFERRABLE INITIALLY IMMEDIATE"
        );
    }

    #[test]
    fn no_insert_without_rows() {
        let (t, _) = &fixtures::schema_with_rows()[0];
        for d in Dialect::ALL {
            assert_eq!(insert_rows(d, t, &[]), None);
        }
    }

    #[test]
    fn sqlite_runs_ddl_and_reads_state_back() -> rusqlite::Result<()> {
        let d = Dialect::Sqlite;
        let conn = rusqlite::Connection::open_in_memory()?;
        for (t, rows) in fixtures::schema_with_rows() {
            conn.execute_batch(&drop_table(d, &t.name))?;
            for sql in create_table(d, &t) {
                conn.execute_batch(&sql)?;
            }
            if let Some(sql) = insert_rows(d, &t, &rows) {
                conn.execute_batch(&sql)?;
            }
            let mut stmt = conn.prepare(&select_state(d, &t))?;
            let rids: Vec<i64> = stmt
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let expected: Vec<i64> = rows.iter().map(|r| r.rid).collect();
            assert_eq!(rids, expected);
        }
        Ok(())
    }
}
