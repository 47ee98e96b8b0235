//! Reading what an instrumented statement returned: the rows and write lists
//! it reports, turned into an [`Outcome`]. Running it is the engine's
//! ([`crate::engine::run_prepared`]); this module never talks to a server.

use super::prepare::{Prepared, Shape};
use crate::model::{Outcome, RowVersion, RowWrite, StmtKind, Value, WriteList};

/// What the capture query of a statement (`Prepared::capture`, MariaDB
/// UPDATEs) returned.
pub enum Capture {
    /// The statement has no capture query.
    None,
    /// The capture query failed: the rows written are unknown, not "none".
    Failed,
    /// Its rows.
    Rows(Vec<Vec<Value>>),
}

/// The outcome of `p`, from the rows and affected count its SQL returned and
/// what its capture query returned.
pub fn interpret_result(
    p: &Prepared,
    rows: Vec<Vec<Value>>,
    affected: u64,
    capture: Capture,
) -> Outcome {
    let captured = match capture {
        Capture::None => return interpret(p, rows, affected),
        Capture::Failed => {
            let mut out = interpret(p, Vec::new(), affected);
            out.writes_complete = false;
            return out;
        }
        Capture::Rows(rows) => rows,
    };
    let (rows, unchanged) = match parse_capture(captured.first().and_then(|r| r.first()), p.op) {
        Ok(parsed) => parsed,
        Err(e) => {
            tracing::warn!(op = p.op, "unreadable write capture: {e}");
            let mut out = interpret(p, Vec::new(), affected);
            out.writes_complete = false;
            return out;
        }
    };
    let mut out = interpret(p, rows, affected);
    if let Shape::Write { table, .. } = &p.shape {
        out.unchanged = unchanged
            .into_iter()
            .map(|(rid, wl)| RowVersion {
                table: table.clone(),
                rid,
                wl,
            })
            .collect();
        out.unchanged.sort();
    }
    out
}

/// Rows (`rid, wl-after`) and matched-but-unchanged rows (`rid, wl`).
type Captured = (Vec<Vec<Value>>, Vec<(i64, WriteList)>);

/// `rid:wl-before;...` captured by the triggers of an UPDATE (or an
/// upsert's update arm) -> `(rid, wl-after)` rows, the rows it matched but
/// left unchanged (`rid:wl=`), and rows inserted or deleted as they are
/// (`rid:wl!`, MySQL's insert and delete triggers). NULL: no row.
fn parse_capture(v: Option<&Value>, op: u32) -> Result<Captured, String> {
    let list = match v {
        None | Some(Value::Null) => return Ok((Vec::new(), Vec::new())),
        Some(Value::Text(list)) => list,
        Some(other) => return Err(format!("unexpected value {other:?}")),
    };
    let mut rows = Vec::new();
    let mut unchanged = Vec::new();
    for item in list.split(';').filter(|i| !i.is_empty()) {
        let (rid, wl) = item
            .split_once(':')
            .ok_or_else(|| format!("item '{item}' is not rid:wl"))?;
        let rid: i64 = rid
            .parse()
            .map_err(|_| format!("item '{item}': '{rid}' is not a rid"))?;
        if let Some(wl) = wl.strip_suffix('=') {
            unchanged.push((rid, WriteList::parse(wl)?));
        } else if let Some(wl) = wl.strip_suffix('!') {
            rows.push(vec![
                Value::Int(rid),
                Value::Text(WriteList::parse(wl)?.to_string()),
            ]);
        } else {
            rows.push(vec![
                Value::Int(rid),
                Value::Text(WriteList::parse(wl)?.then(op).to_string()),
            ]);
        }
    }
    Ok((rows, unchanged))
}

fn rid(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Text(s) => s.parse().ok(),
        _ => None,
    }
}

/// The instrumentation columns of one table instance in a returned row:
/// `None` for the unmatched side of an outer join (both NULL); an error for
/// anything else that is no `rid, wl` pair.
fn version(
    rid_value: Option<&Value>,
    wl: Option<&Value>,
) -> Result<Option<(i64, WriteList)>, String> {
    match (rid_value, wl) {
        (Some(Value::Null), Some(Value::Null)) => Ok(None),
        (Some(r), Some(w)) => {
            let r = rid(r).ok_or_else(|| format!("rid {r:?} is no row id"))?;
            let w =
                WriteList::from_value(w)?.ok_or_else(|| format!("row {r} has no write list"))?;
            Ok(Some((r, w)))
        }
        _ => Err("the row lacks its rid and wl columns".into()),
    }
}

pub(crate) fn interpret(p: &Prepared, rows: Vec<Vec<Value>>, affected: u64) -> Outcome {
    let mut out = Outcome {
        affected,
        ..Outcome::default()
    };
    match &p.shape {
        Shape::Control => {
            out.reads_complete = true;
        }
        Shape::Plain => {
            out.rows = rows;
        }
        Shape::Select {
            user_cols,
            instances,
            complete,
        } => {
            out.reads_complete = *complete;
            read_rows(p, &mut out, rows, *user_cols, instances);
        }
        Shape::Write { table, complete } => {
            out.reads_complete = false;
            out.writes_complete = *complete;
            written_rows(p, &mut out, rows, table);
        }
    }
    out
}

/// A SELECT's result rows without their instrumentation columns (after
/// `user_cols`), and the row versions those say each table instance read.
fn read_rows(
    p: &Prepared,
    out: &mut Outcome,
    rows: Vec<Vec<Value>>,
    user_cols: usize,
    instances: &[String],
) {
    for mut row in rows {
        let extra = row.split_off(user_cols.min(row.len()));
        for (i, table) in instances.iter().enumerate() {
            let (r, w) = match version(extra.get(2 * i), extra.get(2 * i + 1)) {
                Ok(Some(v)) => v,
                Ok(None) => continue, // the unmatched side of an outer join
                Err(e) => {
                    tracing::warn!(op = p.op, "unreadable instrumentation: {e}");
                    out.reads_complete = false;
                    continue;
                }
            };
            out.reads.push(RowVersion {
                table: table.clone(),
                rid: r,
                wl: w,
            });
        }
        out.rows.push(row);
    }
    out.reads.sort();
    out.reads.dedup();
}

/// A write's returned rows (`rid, wl`) of `table`: the row writes, the
/// versions they overwrote (as reads), and matched rows it left unchanged.
fn written_rows(p: &Prepared, out: &mut Outcome, rows: Vec<Vec<Value>>, table: &str) {
    let own = WriteList::of(p.op);
    for row in rows {
        let (r, w) = match version(row.first(), row.get(1)) {
            Ok(Some(v)) => v,
            Ok(None) | Err(_) => {
                tracing::warn!(op = p.op, "a written row without its rid and wl: {row:?}");
                out.writes_complete = false;
                continue;
            }
        };
        // Matched but unchanged: `wl` is appended to only where a
        // value changes (`UpdateCapture::ReturningWhereChanged`, and an
        // upsert's update arm in SQLite's dialect); every row an INSERT
        // writes ends with its op.
        // An upsert whose update arm meets a row it already wrote in this
        // statement and leaves it as it is returns the row again at the
        // same version: matched, unchanged.
        let again = p.kind == StmtKind::Insert
            && out
                .writes
                .iter()
                .any(|x| x.rid == r && x.table == table && x.after.as_ref() == Some(&w));
        if again || (matches!(p.kind, StmtKind::Update | StmtKind::Insert) && w.last() != p.op) {
            out.unchanged.push(RowVersion {
                table: table.to_string(),
                rid: r,
                wl: w,
            });
            continue;
        }
        let (before, after) = match p.kind {
            StmtKind::Delete => (Some(w), None),
            _ if w == own => (None, Some(w)),
            _ => (w.previous(), Some(w)),
        };
        let write = RowWrite {
            table: table.to_string(),
            rid: r,
            before,
            after,
        };
        if let Some(before) = &write.before {
            out.reads.push(RowVersion {
                table: table.to_string(),
                rid: r,
                wl: before.clone(),
            });
        }
        out.writes.push(write);
    }
    out.writes.sort();
    out.unchanged.sort();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instrument::{prepare, reports_affected};
    use crate::model::{CaseStmt, Schema, StmtRef};
    use crate::model::{OnConflict, Stmt};
    use crate::sql::Dialect;
    use crate::testkit::{delete, insert, kv_table, select, set};

    #[test]
    fn a_mariadb_capture_separates_changed_and_unchanged_rows() {
        let (rows, unchanged) =
            parse_capture(Some(&Value::Text("1:0;2:0,4=;3:0,5".into())), 9).unwrap();
        assert_eq!(
            rows,
            vec![
                vec![Value::Int(1), Value::Text("0,9".into())],
                vec![Value::Int(3), Value::Text("0,5,9".into())],
            ]
        );
        assert_eq!(unchanged, vec![(2, "0,4".parse().unwrap())]);
        // A malformed capture is an error, never silently no rows.
        assert!(parse_capture(Some(&Value::Text("1:0;x:0".into())), 9).is_err());
        assert!(parse_capture(Some(&Value::Text("1:0,a".into())), 9).is_err());
        assert_eq!(
            parse_capture(Some(&Value::Null), 9),
            Ok((Vec::new(), Vec::new()))
        );
    }

    #[test]
    fn a_trigger_capture_reads_inserted_and_deleted_rows_as_they_are() {
        let (rows, unchanged) =
            parse_capture(Some(&Value::Text("4:9!;1:0,3!;2:0".into())), 9).unwrap();
        assert_eq!(
            rows,
            vec![
                vec![Value::Int(4), Value::Text("9".into())],
                vec![Value::Int(1), Value::Text("0,3".into())],
                vec![Value::Int(2), Value::Text("0,9".into())],
            ]
        );
        assert!(unchanged.is_empty());
    }

    fn mysql_target(returning: bool) -> crate::instrument::Target {
        crate::instrument::Target {
            dialect: Dialect::Mysql,
            update_capture: crate::instrument::UpdateCapture::UserVariable { returning },
        }
    }

    /// MariaDB and MySQL: the old values are kept first (and `wl` marked),
    /// the user's assignments follow, the conditional append comes last and
    /// reads the new values from the columns when it sees the mark, from the
    /// assignments' own expressions when it does not (module
    /// `user_variable`).
    #[test]
    fn a_mysql_family_update_appends_to_wl_only_where_a_value_changed() {
        for returning in [true, false] {
            let p = prepared(mysql_target(returning), set("t", 1, 5));
            let keep = p.sql.find("@txfuzz_o :=").unwrap();
            let assign = p.sql.find("v = 5").unwrap();
            let append = p
                .sql
                .find("IF(RIGHT(wl, 1) = '~', CAST(JSON_ARRAY(v) AS BINARY), CAST(JSON_ARRAY(CAST(5 AS SIGNED)) AS BINARY)) <=> @txfuzz_o")
                .unwrap_or_else(|| panic!("{}", p.sql));
            assert!(keep < assign && assign < append, "{}", p.sql);
            assert!(p.sql.contains("wl, '~'), v = 5"), "{}", p.sql);
            assert!(!p.sql.contains("RETURNING"), "{}", p.sql);
            assert_eq!(p.capture.as_deref(), Some("SELECT @txfuzz_w"));
            let pre = if returning {
                "SET @txfuzz_w = NULL"
            } else {
                "SET @txfuzz_w = NULL, @txfuzz_op = NULL"
            };
            assert_eq!(p.pre.as_deref(), Some(pre));
        }
    }

    /// MySQL has no RETURNING: an INSERT and a DELETE are reported by the
    /// triggers, for the op set first; MariaDB keeps RETURNING for them.
    #[test]
    fn inserts_and_deletes_use_returning_only_where_the_engine_has_it() {
        for returning in [true, false] {
            for stmt in [insert("t", 7, 1, 2), delete("t", 1)] {
                let p = prepared(mysql_target(returning), stmt);
                assert_eq!(p.sql.contains("RETURNING"), returning, "{}", p.sql);
                assert_eq!(p.capture.is_some(), !returning, "{}", p.sql);
                let pre = (!returning).then(|| "SET @txfuzz_w = NULL, @txfuzz_op = 9".to_string());
                assert_eq!(p.pre, pre);
            }
        }
    }

    fn prepared(d: impl Into<crate::instrument::Target>, stmt: Stmt) -> Prepared {
        let schema = Schema {
            tables: vec![kv_table("t")],
        };
        let cs = CaseStmt { op: 9, stmt };
        prepare(d, &schema, StmtRef { txn: 1, index: 0 }, &cs)
    }

    /// SQLite's dialect: an upsert's update arm appends to `wl` only where a
    /// value changes, so a row it meets again in the same statement and
    /// leaves as it is comes back at the version the statement wrote, and
    /// a row it leaves as it was comes back at its old version: both
    /// matched, unchanged; only the first touch is a write.
    #[test]
    fn an_upsert_arm_that_changes_nothing_is_no_write() {
        use crate::model::{Assignment, Expr};
        let upsert = with_conflict(
            insert("t", 7, 1, 5),
            OnConflict::Update {
                target: vec!["k".into()],
                assignments: vec![Assignment {
                    column: "v".into(),
                    value: Expr::Lit(Value::Int(5)),
                }],
            },
        );
        let p = prepared(Dialect::Sqlite, upsert);
        assert!(
            p.sql.contains("CASE WHEN (v IS 5) THEN t.wl ELSE"),
            "{}",
            p.sql
        );
        let row = |rid: i64, wl: &str| vec![Value::Int(rid), Value::Text(wl.into())];
        let out = interpret_result(
            &p,
            vec![row(3, "0,9"), row(3, "0,9"), row(4, "0,2")],
            3,
            Capture::None,
        );
        assert_eq!(out.writes.len(), 1, "{out:?}");
        assert_eq!(out.writes[0].rid, 3);
        let unchanged: Vec<i64> = out.unchanged.iter().map(|u| u.rid).collect();
        assert_eq!(unchanged, vec![3, 4], "{out:?}");
    }

    fn with_conflict(mut stmt: Stmt, c: OnConflict) -> Stmt {
        if let Stmt::Insert(i) = &mut stmt {
            i.on_conflict = c;
        }
        stmt
    }

    #[test]
    fn a_sqlite_update_records_its_rows_through_the_session_function_not_returning() {
        let p = prepared(Dialect::Sqlite, set("t", 1, 5));
        // The append only where an assigned column changes.
        assert!(
            p.sql
                .contains("wl = txfuzz_w(rid, wl, ',9', NOT ((v IS 5)))"),
            "{}",
            p.sql
        );
        assert!(!p.sql.contains("RETURNING"), "{}", p.sql);
        assert_eq!(p.capture.as_deref(), Some("SELECT txfuzz_take()"));
        // Deletes keep RETURNING (the shadow run found no difference there).
        assert!(prepared(Dialect::Sqlite, delete("t", 1))
            .sql
            .contains("RETURNING"));
    }

    #[test]
    fn a_mysql_family_upsert_arm_appends_to_wl_only_where_a_value_changed() {
        let set_v = crate::model::Assignment {
            column: "v".into(),
            value: crate::model::Expr::Lit(Value::Int(5)),
        };
        let upsert = with_conflict(
            insert("t", 7, 1, 2),
            OnConflict::Update {
                target: vec!["k".into()],
                assignments: vec![set_v],
            },
        );
        for returning in [true, false] {
            let p = prepared(mysql_target(returning), upsert.clone());
            let keep = p
                .sql
                .find("ON DUPLICATE KEY UPDATE wl = CONCAT(LEFT(@txfuzz_o :=")
                .unwrap_or_else(|| panic!("{}", p.sql));
            let assign = p.sql.find("v = 5").unwrap();
            let append = p
                .sql
                .find("IF(CAST(JSON_ARRAY(t.v) AS BINARY) <=> @txfuzz_o")
                .unwrap();
            assert!(keep < assign && assign < append, "{}", p.sql);
            // MySQL: the insert trigger reports the rows it inserted.
            assert!(
                matches!(p.shape, Shape::Write { complete, .. } if complete != returning),
                "{:?}",
                p.shape
            );
        }
    }

    /// A MariaDB REPLACE into a table with one unique key and no foreign key
    /// referring to it is an update in place for InnoDB: instrumented as an
    /// upsert of every column that keeps `rid` and `wl` where the values stay,
    /// a row it leaves as it is comes back at its old version (matched,
    /// unchanged), a replaced row at its new one (written).
    #[test]
    fn a_mariadb_replace_of_identical_values_is_no_write() {
        let replace = with_conflict(insert("t", 7, 1, 2), OnConflict::Replace);
        let p = prepared(Dialect::Mysql, replace.clone());
        assert!(
            p.sql.starts_with("INSERT INTO t (rid, wl, k, v) VALUES (7, '9', 1, 2) ON DUPLICATE KEY UPDATE wl = IF(CAST(JSON_ARRAY(t.k, t.v) AS BINARY) <=> CAST(JSON_ARRAY(VALUES(k), VALUES(v)) AS BINARY), t.wl, VALUES(wl)), rid = IF("),
            "{}",
            p.sql
        );
        assert!(
            p.sql
                .ends_with("k = VALUES(k), v = VALUES(v) RETURNING rid, wl"),
            "{}",
            p.sql
        );
        assert!(p.plain.starts_with("REPLACE INTO t"), "{}", p.plain);
        let row = |rid: i64, wl: &str| vec![Value::Int(rid), Value::Text(wl.into())];
        let out = interpret_result(&p, vec![row(7, "9"), row(3, "0,4")], 2, Capture::None);
        assert_eq!(out.writes.len(), 1, "{out:?}");
        assert_eq!((out.writes[0].rid, out.writes[0].before.clone()), (7, None));
        assert_eq!(out.unchanged.len(), 1, "{out:?}");
        assert_eq!(out.unchanged[0].rid, 3);
        assert!(
            !out.writes_complete,
            "the rows it replaced are not observed"
        );

        // A second unique key, a foreign key referring to the table, or
        // another engine: the REPLACE as it is.
        let mut two_keys = kv_table("t");
        two_keys.uniques.push(vec!["v".into()]);
        let mut parent = kv_table("t");
        parent.foreign_keys.push(crate::model::ForeignKey {
            columns: vec!["v".into()],
            ref_table: "t".into(),
            ref_columns: vec!["k".into()],
            on_delete: Default::default(),
            on_update: Default::default(),
            deferrable: None,
        });
        for t in [two_keys, parent] {
            let schema = Schema { tables: vec![t] };
            let cs = CaseStmt {
                op: 9,
                stmt: replace.clone(),
            };
            let p = prepare(Dialect::Mysql, &schema, StmtRef { txn: 1, index: 0 }, &cs);
            assert!(p.sql.starts_with("REPLACE INTO t"), "{}", p.sql);
        }
        assert!(prepared(Dialect::Sqlite, replace.clone())
            .sql
            .starts_with("REPLACE INTO t"));

        // REPLACE ... SELECT: the upsert too where the SELECT names the
        // table by another alias; as it is where a bare column name could be
        // the SELECT's.
        let from_select = |alias: &str| {
            let Stmt::Select(mut q) = select("t", None) else {
                unreachable!()
            };
            q.from[0].alias = alias.into();
            let mut s = replace.clone();
            if let Stmt::Insert(i) = &mut s {
                i.rows.clear();
                i.select = Some(Box::new(q));
            }
            prepared(Dialect::Mysql, s).sql
        };
        let aliased = from_select("a0");
        assert!(
            aliased.starts_with("INSERT INTO t (rid, wl, k, v) SELECT 7, '9', k, v FROM t AS a0 ON DUPLICATE KEY UPDATE"),
            "{aliased}"
        );
        assert!(from_select("t").starts_with("REPLACE INTO t"));
    }

    #[test]
    fn the_affected_count_of_mariadb_replace_is_not_the_engines() {
        let replace = with_conflict(insert("t", 7, 1, 2), OnConflict::Replace);
        assert!(!reports_affected(Dialect::Mysql, &replace));
        assert!(reports_affected(Dialect::Sqlite, &replace));
        assert!(reports_affected(Dialect::Mysql, &insert("t", 7, 1, 2)));
    }
}
