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
    /// `rid` and `wl`. On MariaDB `wl` is `CHAR(255)`: a fixed-size value,
    /// so an UPDATE that appends to it changes no record's size and InnoDB
    /// updates the record in place, as it does the plain row (a record that
    /// grows is moved within its page with its locks, and InnoDB then weighs
    /// transactions differently when it picks a deadlock victim). A case
    /// writes at most a few dozen statements, so a row's write list stays
    /// well under 255 characters.
    ///
    /// Both hidden columns are `CHAR` in `utf8mb4`, which InnoDB stores as
    /// variable-length (N to 4N bytes; N for the ASCII they hold, padded):
    /// a fixed-length column (`BIGINT`, a single-byte `CHAR`) adds its width
    /// to the minimum record length from which InnoDB estimates a table's
    /// rows, and that estimate moves the optimizer's choice between the
    /// primary key and a secondary index (docs/engine-facts.md, "Plans of
    /// the instrumented tables"). Values come back as text and are read as
    /// numbers where they are numbers ([`crate::model::Value::from_db_text`]).
    #[default]
    Instrumented,
    /// `rid` and `wl`, `wl` of unbounded length everywhere (`txfuzz stress`:
    /// one long history, whose write lists grow without bound).
    InstrumentedLong,
    Plain,
}

impl Layout {
    /// The tables carry `rid` and `wl`.
    pub fn instrumented(self) -> bool {
        self != Layout::Plain
    }
}

/// The SQL type of the `wl` column.
fn wl_type(d: Dialect, layout: Layout) -> &'static str {
    match (d, layout) {
        (Dialect::Mysql, Layout::Instrumented) => "CHAR(255) CHARACTER SET utf8mb4",
        _ => "TEXT",
    }
}

/// The SQL type of the `rid` column ([`Layout::Instrumented`] says why
/// MariaDB's is text).
fn rid_type(d: Dialect) -> &'static str {
    match d {
        Dialect::Mysql => "CHAR(20) CHARACTER SET utf8mb4",
        _ => "BIGINT",
    }
}

/// `rid` as a number in ORDER BY (MariaDB's is text, see [`rid_type`]).
fn rid_order(d: Dialect) -> String {
    match d {
        Dialect::Mysql => format!("{RID} + 0"),
        _ => RID.to_string(),
    }
}

/// CREATE TABLE followed by one CREATE [UNIQUE] INDEX per secondary index.
///
/// Columns: the hidden `rid BIGINT NOT NULL, wl ... NOT NULL` first, then the
/// table's columns, then the PRIMARY KEY, UNIQUE, CHECK and FOREIGN KEY table
/// constraints. MySQL tables use InnoDB.
pub fn create_table(d: Dialect, t: &Table) -> Vec<String> {
    create_table_as(d, t, Layout::Instrumented)
}

/// [`create_table`] in the given layout (`Plain`: without `rid` and `wl`).
pub fn create_table_as(d: Dialect, t: &Table, layout: Layout) -> Vec<String> {
    let mut parts = if layout.instrumented() {
        vec![
            format!("{RID} {} NOT NULL", rid_type(d)),
            format!("{WL} {} NOT NULL", wl_type(d, layout)),
        ]
    } else {
        Vec::new()
    };
    parts.extend(t.columns.iter().map(|c| column_def(d, c)));
    parts.extend(constraints(d, t));
    let inline = inline_indexes(d, t);
    parts.extend(
        t.indexes[..inline]
            .iter()
            .map(|i| format!("KEY {} ({})", i.name, ident_list(&i.columns))),
    );
    let mut create = format!("CREATE TABLE {} ({})", t.name, parts.join(", "));
    if d == Dialect::Mysql {
        create.push_str(" ENGINE=InnoDB");
    }
    let mut out = vec![create];
    out.extend(t.indexes[inline..].iter().map(|i| create_index(&t.name, i)));
    out
}

/// How many of `t`'s secondary indexes, from the first, MariaDB's `CREATE
/// TABLE` declares itself (`KEY name (cols)`) instead of a `CREATE INDEX`
/// after it, which is an `ALTER TABLE` of its own (about 1 ms of server time
/// each, a tenth of a case's DDL). Only non-unique indexes, and only up to
/// the first unique one or one that can serve a foreign key: InnoDB checks
/// unique keys in the order it made them (docs/engine-facts.md,
/// "upsert-key-order"), and makes an index of its own for a foreign key no
/// index serves when the table is created; a prefix keeps every index in
/// the order the separate statements make them.
fn inline_indexes(d: Dialect, t: &Table) -> usize {
    if d != Dialect::Mysql {
        return 0;
    }
    t.indexes
        .iter()
        .take_while(|i| {
            !i.unique
                && !t
                    .foreign_keys
                    .iter()
                    .any(|fk| i.columns.starts_with(&fk.columns))
        })
        .count()
}

fn column_def(d: Dialect, c: &Column) -> String {
    let mut def = match (d, c.auto_key) {
        // With the table's `PRIMARY KEY (c)`: an alias of the rowid.
        (Dialect::Sqlite, true) => format!("{} INTEGER", c.name),
        _ => format!("{} {}", c.name, col_type(c.ty)),
    };
    if c.not_null {
        def.push_str(" NOT NULL");
    }
    match (d, c.auto_key) {
        (Dialect::Mysql, true) => def.push_str(" AUTO_INCREMENT"),
        (Dialect::Postgres, true) => def.push_str(" GENERATED BY DEFAULT AS IDENTITY"),
        _ => {}
    }
    if let Some(v) = &c.default {
        def.push_str(" DEFAULT ");
        def.push_str(&render_value(d, v));
    }
    def
}

/// The same spelling in every dialect. `INT`, not `INTEGER`: in SQLite an
/// `INTEGER PRIMARY KEY` column becomes an alias of the rowid (only a
/// column declared [`Column::auto_key`] is one).
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

/// The non-unique secondary indexes of `t` created on its TEMPORARY twin
/// (a scratch table of the same name, which shadows `t`), named `name`
/// (SQLite: in the `temp` schema, where the table is).
pub fn create_temporary_index(d: Dialect, t: &Table, i: &Index, name: &str) -> String {
    let name = match d {
        Dialect::Sqlite => format!("temp.{name}"),
        Dialect::Mysql | Dialect::Postgres => name.to_string(),
    };
    format!(
        "CREATE INDEX {name} ON {} ({})",
        t.name,
        ident_list(&i.columns)
    )
}

/// Drops index `name` of `t`'s TEMPORARY twin ([`create_temporary_index`]).
pub fn drop_temporary_index(d: Dialect, t: &Table, name: &str) -> String {
    match d {
        Dialect::Sqlite => format!("DROP INDEX temp.{name}"),
        Dialect::Postgres => format!("DROP INDEX pg_temp.{name}"),
        Dialect::Mysql => format!("DROP INDEX {name} ON {}", t.name),
    }
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
            let mut vals = if layout.instrumented() {
                vec![r.rid.to_string(), initial_wl.clone()]
            } else {
                Vec::new()
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
pub fn select_state_as(d: Dialect, t: &Table, layout: Layout) -> String {
    if layout.instrumented() {
        format!(
            "SELECT {} FROM {} ORDER BY {}",
            columns(t, layout),
            t.name,
            rid_order(d)
        )
    } else {
        format!("SELECT {} FROM {}", columns(t, layout), t.name)
    }
}

/// `rid, wl, c...` (instrumented) or `c...` (plain).
fn columns(t: &Table, layout: Layout) -> String {
    let mut names = if layout.instrumented() {
        vec![RID.to_string(), WL.to_string()]
    } else {
        Vec::new()
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

    #[test]
    fn mariadb_write_lists_are_fixed_size_except_in_long_histories() {
        let t = crate::testkit::kv_table("t");
        let ddl = |d, l| create_table_as(d, &t, l)[0].clone();
        assert!(ddl(Dialect::Mysql, Layout::Instrumented)
            .contains("wl CHAR(255) CHARACTER SET utf8mb4 NOT NULL"));
        assert!(ddl(Dialect::Mysql, Layout::Instrumented)
            .contains("rid CHAR(20) CHARACTER SET utf8mb4 NOT NULL"));
        assert!(ddl(Dialect::Postgres, Layout::Instrumented).contains("rid BIGINT NOT NULL"));
        assert!(ddl(Dialect::Mysql, Layout::InstrumentedLong).contains("wl TEXT NOT NULL"));
        assert!(ddl(Dialect::Postgres, Layout::Instrumented).contains("wl TEXT NOT NULL"));
        assert!(ddl(Dialect::Sqlite, Layout::Instrumented).contains("wl TEXT NOT NULL"));
        assert!(!ddl(Dialect::Mysql, Layout::Plain).contains("wl"));
    }
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

    /// MariaDB declares the leading non-unique indexes in `CREATE TABLE`;
    /// from the first unique one, or one that can serve a foreign key, on
    /// they stay statements of their own, in their order.
    #[test]
    fn mariadb_declares_the_leading_plain_indexes_in_the_table() {
        let index = |name: &str, column: &str, unique| Index {
            name: name.into(),
            columns: vec![column.into()],
            unique,
        };
        let mut t = crate::testkit::kv_table("t");
        t.indexes = vec![
            index("a", "v", false),
            index("b", "k", true),
            index("c", "v", false),
        ];
        let ddl = create_table_as(Dialect::Mysql, &t, Layout::Plain);
        assert!(ddl[0].contains(", KEY a (v))"), "{ddl:?}");
        assert_eq!(
            &ddl[1..],
            ["CREATE UNIQUE INDEX b ON t (k)", "CREATE INDEX c ON t (v)"]
        );
        let sqlite = create_table_as(Dialect::Sqlite, &t, Layout::Plain);
        assert_eq!(sqlite.len(), 4, "{sqlite:?}");

        t.foreign_keys = vec![ForeignKey {
            columns: vec!["v".into()],
            ref_table: "p".into(),
            ref_columns: vec!["k".into()],
            ..ForeignKey::default()
        }];
        let ddl = create_table_as(Dialect::Mysql, &t, Layout::Plain);
        assert!(!ddl[0].contains("KEY a"), "{ddl:?}");
        assert_eq!(ddl.len(), 4, "{ddl:?}");
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
