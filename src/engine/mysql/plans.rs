//! The judged run keeps the plain statements' plans (`Engine::keep_plans`).
//!
//! InnoDB's plan decides which index records a statement visits, and so
//! which locks it takes, what it sees of writes under way at READ
//! UNCOMMITTED, and which rows a scan resumed after a lock wait meets again.
//! Instrumentation can change the plan two ways:
//! - the statement: projecting `rid, wl` makes a covering secondary index
//!   insufficient, or moves the join order. Each read whose plan decides
//!   locks or visibility (locking reads, every SELECT in a transaction at
//!   SERIALIZABLE, every SELECT at READ UNCOMMITTED) and whose plain and
//!   instrumented `EXPLAIN`s differ runs as written instead, unobserved;
//! - the table: the hidden columns widen the clustered records, and the cost
//!   model then prefers a secondary index for the same statement (for a
//!   locking read, a covering secondary index whose entries alone it then
//!   locks). Each UPDATE, and each SELECT whose plan decides its locks or
//!   visibility, is explained on plain twin tables (TEMPORARY tables of the
//!   same names, which shadow the base tables on the admin connection: the
//!   case's columns, keys and indexes, its initial rows); where the plain
//!   plan's index differs, the judged statement gets an index hint
//!   (`FORCE INDEX`, or `IGNORE INDEX` for a plain full scan). Single-table
//!   DELETE takes no index hint in MariaDB: the hidden columns are stored
//!   so that InnoDB's row estimate hardly moves (`sql::Layout::Instrumented`),
//!   which leaves a few DELETEs in a thousand cases on another plan
//!   (docs/engine-facts.md, "Plans of the instrumented tables").

use super::link::Link;
use super::setup;
use crate::engine::EngineError;
use crate::instrument::Prepared;
use crate::model::{ErrorClass, Index, Isolation, Stmt, StmtRef, Table, TestCase, Value};
use crate::sql::{self, Dialect, Layout};
use std::collections::HashMap;

/// `EXPLAIN sql` on `admin`, without the row estimates; `None` when the
/// server refuses it.
fn explain(admin: &mut Link, sql: &str) -> Result<Option<Vec<Vec<Value>>>, EngineError> {
    match admin.query(&format!("EXPLAIN {sql}")) {
        Ok(r) => Ok(Some(
            r.rows
                .into_iter()
                .map(|mut row| {
                    // `rows` is an estimate, not part of the plan.
                    if row.len() > 8 {
                        row.remove(8);
                    }
                    row
                })
                .collect(),
        )),
        Err(e) if e.class == ErrorClass::ConnectionLost => Err(setup("EXPLAIN", e)),
        Err(_) => Ok(None),
    }
}

/// Each table's index in a plan, by `EXPLAIN`'s `table` (a SELECT's alias):
/// the index used (`key`; `None`: a full scan) and the indexes it could use
/// (`possible_keys`).
fn keys_of(plan: &[Vec<Value>]) -> HashMap<String, (Option<String>, Vec<String>)> {
    let text = |v: Option<&Value>| match v {
        Some(Value::Text(s)) => Some(s.clone()),
        _ => None,
    };
    plan.iter()
        .filter_map(|row| {
            let possible = text(row.get(4))
                .map(|s| s.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            Some((text(row.get(2))?, (text(row.get(5)), possible)))
        })
        .collect()
}

pub(super) fn keep_plans(
    admin: &mut Link,
    case: &TestCase,
    prepared: &mut HashMap<StmtRef, Prepared>,
) -> Result<(), EngineError> {
    run_reads_as_written(admin, case, prepared)?;
    hint_plans(admin, case, prepared)
}

/// Whether `stmt`'s plan decides the locks it takes or what it sees of
/// writes under way (a SELECT): locking reads, every SELECT in a
/// transaction at SERIALIZABLE, every SELECT at READ UNCOMMITTED.
fn plan_decides(case: &TestCase, r: StmtRef, stmt: &Stmt) -> bool {
    let Stmt::Select(s) = stmt else { return false };
    // At SERIALIZABLE InnoDB turns plain SELECTs into locking reads,
    // except with autocommit (consistent reads then).
    let in_txn = case.txn(r.txn).is_some_and(|t| !t.autocommit);
    let locking = s.lock.is_some() || (case.isolation == Isolation::Serializable && in_txn);
    locking || case.isolation == Isolation::ReadUncommitted
}

fn run_reads_as_written(
    admin: &mut Link,
    case: &TestCase,
    prepared: &mut HashMap<StmtRef, Prepared>,
) -> Result<(), EngineError> {
    for p in prepared.values_mut() {
        if !plan_decides(case, p.stmt, &p.ir) || p.sql == p.plain {
            continue;
        }
        if explain(admin, &p.sql)? != explain(admin, &p.plain)? {
            *p = p.unobserved();
        }
    }
    Ok(())
}

/// The plain twin of `t`: no foreign keys (MariaDB's temporary tables have
/// none), an index on each foreign key's columns instead (InnoDB makes one
/// where no key starts with them), named after its first column as InnoDB
/// names it.
fn twin(t: &Table) -> Table {
    let mut twin = t.clone();
    for fk in &t.foreign_keys {
        let covered = t.primary_key.starts_with(&fk.columns)
            || t.unique_keys().iter().any(|k| k.starts_with(&fk.columns))
            || t.indexes.iter().any(|i| i.columns.starts_with(&fk.columns));
        if !covered {
            twin.indexes.push(Index {
                name: fk.columns[0].clone(),
                columns: fk.columns.clone(),
                unique: false,
            });
        }
    }
    twin.foreign_keys.clear();
    twin
}

/// The tables of a statement that can take an index hint, each with
/// `EXPLAIN`'s name for it and the text the hint goes after: an UPDATE's
/// table (`UPDATE t `), and the table of each single-table SELECT in a
/// SELECT, the statement's and its subqueries' (`FROM t AS a`).
fn hint_anchors(stmt: &Stmt) -> Vec<(String, String)> {
    match stmt {
        Stmt::Update(u) => vec![(u.table.clone(), format!("UPDATE {} ", u.table))],
        Stmt::Select(_) => sql::selects_of(stmt)
            .into_iter()
            .filter_map(|q| match q.from.as_slice() {
                [f] => Some((f.alias.clone(), format!("FROM {} AS {}", f.table, f.alias))),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A table of a statement that may take an index hint: `EXPLAIN`'s name
/// for it, the text the hint goes after, and the instrumented plan's index
/// and possible indexes.
struct Hintable {
    stmt: StmtRef,
    name: String,
    anchor: String,
    key: Option<String>,
    possible: Vec<String>,
}

/// Explains each UPDATE, and each SELECT whose plan decides its locks
/// ([`plan_decides`]), on plain twin tables, and hints the judged statement
/// where the plain plan uses another index for one of its tables
/// ([`hint_anchors`]): the hidden columns widen the clustered records, and
/// InnoDB may then scan a covering secondary index, whose records alone it
/// locks.
fn hint_plans(
    admin: &mut Link,
    case: &TestCase,
    prepared: &mut HashMap<StmtRef, Prepared>,
) -> Result<(), EngineError> {
    let mut hinted: Vec<Hintable> = Vec::new();
    for (r, p) in prepared.iter() {
        let candidate = matches!(p.ir, Stmt::Update(_)) || plan_decides(case, *r, &p.ir);
        let anchors = hint_anchors(&p.ir);
        if !candidate || anchors.is_empty() {
            continue;
        }
        let Some(plan) = explain(admin, &p.sql)? else {
            continue;
        };
        let keys = keys_of(&plan);
        for (name, anchor) in anchors {
            // One anchor per hint: an alias met twice is left alone.
            if p.sql.matches(&anchor).count() != 1 {
                continue;
            }
            let Some((key, possible)) = keys.get(&name).cloned() else {
                continue;
            };
            // A scan with no usable index (no WHERE on an index) can still
            // use a covering one: only a SELECT is hinted then.
            if !possible.is_empty() || matches!(p.ir, Stmt::Select(_)) {
                hinted.push(Hintable {
                    stmt: *r,
                    name,
                    anchor,
                    key,
                    possible,
                });
            }
        }
    }
    if hinted.is_empty() {
        return Ok(());
    }
    let mut created = Vec::new();
    let mut twins_ok = true;
    for t in &case.schema.tables {
        let ddl = sql::create_table_as(Dialect::Mysql, &twin(t), Layout::Plain);
        let mut statements: Vec<String> = ddl
            .iter()
            .enumerate()
            .map(|(i, s)| match (i, s.strip_prefix("CREATE TABLE ")) {
                (0, Some(rest)) => format!("CREATE TEMPORARY TABLE {rest}"),
                _ => s.clone(),
            })
            .collect();
        if let Some(rows) = case.data.iter().find(|d| d.table == t.name) {
            statements.extend(sql::insert_rows_as(
                Dialect::Mysql,
                t,
                &rows.rows,
                Layout::Plain,
            ));
        }
        for (i, s) in statements.iter().enumerate() {
            match admin.query(s) {
                Ok(_) => {
                    if i == 0 {
                        created.push(t.name.clone());
                    }
                }
                Err(e) if e.class == ErrorClass::ConnectionLost => {
                    return Err(setup("plain twin tables", e))
                }
                Err(_) => twins_ok = false,
            }
        }
    }
    let mut plain_keys = HashMap::new();
    if twins_ok {
        for h in &hinted {
            if plain_keys.contains_key(&h.stmt) {
                continue;
            }
            let plan = explain(admin, &prepared[&h.stmt].plain)?;
            plain_keys.insert(h.stmt, plan.as_deref().map(keys_of).unwrap_or_default());
        }
    }
    for name in created {
        admin
            .query(&format!("DROP TEMPORARY TABLE {name}"))
            .map_err(|e| setup("plain twin tables", e))?;
    }
    for Hintable {
        stmt: r,
        name,
        anchor,
        key,
        possible,
    } in hinted
    {
        let Some((plain, _)) = plain_keys.get(&r).and_then(|k| k.get(&name)) else {
            continue;
        };
        let hint = match (plain, &key) {
            (a, b) if a == b => continue,
            (Some(k), _) if possible.contains(k) || possible.is_empty() => {
                format!("FORCE INDEX ({k})")
            }
            (None, Some(k)) => format!("IGNORE INDEX ({k})"),
            _ => continue,
        };
        let p = prepared.get_mut(&r).expect("an explained statement");
        if let Some(at) = p.sql.find(&anchor) {
            let end = at + anchor.len();
            let sep = if anchor.ends_with(' ') { "" } else { " " };
            p.sql = format!("{}{sep}{hint} {}", &p.sql[..end], p.sql[end..].trim_start());
        }
    }
    Ok(())
}
