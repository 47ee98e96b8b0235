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
//!   instrumented `EXPLAIN`s differ runs as written instead, unobserved; so
//!   does one that a secondary index could answer alone, since the plain
//!   statement may take that plan on the live data where it did not at load;
//! - the table: the hidden columns widen the clustered records, and the cost
//!   model then prefers a secondary index for the same statement (for a
//!   locking read, a covering secondary index whose entries alone it then
//!   locks). Each UPDATE, and each SELECT whose plan decides its locks or
//!   visibility, is explained on plain twin tables (TEMPORARY tables of the
//!   same names, which shadow the base tables on the admin connection: the
//!   case's columns, keys and indexes, its initial rows); where the plain
//!   plan's index differs, the judged statement gets an index hint
//!   (`FORCE INDEX`, or `IGNORE INDEX` for a plain full scan), on each
//!   table of a join too; an inner join keeps the plain plan's order
//!   (`SELECT STRAIGHT_JOIN`, the FROM rewritten in that order where it was
//!   written in another). The run's tables and the twins are analyzed once
//!   filled (`analyze_sql`): InnoDB's statistics of fresh tables are
//!   otherwise whatever its background thread last computed. Single-table
//!   DELETE takes no index hint in MariaDB: the hidden columns are stored
//!   so that InnoDB's row estimate hardly moves (`sql::Layout::Instrumented`),
//!   which leaves a few DELETEs in a thousand cases on another plan
//!   (docs/engine-facts.md, "Plans of the instrumented tables").

use super::link::Link;
use super::setup;
use crate::engine::EngineError;
use crate::instrument::Prepared;
use crate::model::{
    ErrorClass, FromItem, Index, Isolation, JoinKind, Stmt, StmtRef, Table, TestCase, Value,
};
use crate::sql::{self, Dialect, Layout};
use std::collections::HashMap;

/// `EXPLAIN` of each of `sqls` on `admin`, without the row estimates, in
/// one round trip (more only where the server refuses one); `None` for a
/// statement the server refuses to explain.
fn explain_all(admin: &mut Link, sqls: &[&str]) -> Result<Vec<Option<Plan>>, EngineError> {
    let steps: Vec<String> = sqls.iter().map(|s| format!("EXPLAIN {s}")).collect();
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    admin
        .query_all(&steps)
        .into_iter()
        .map(|answer| match answer {
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
        })
        .collect()
}

/// `EXPLAIN`'s rows.
type Plan = Vec<Vec<Value>>;

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
    let mut compared = Vec::new();
    for p in prepared.values_mut() {
        if !plan_decides(case, p.stmt, &p.ir) || p.sql == p.plain {
            continue;
        }
        if index_only_possible(case, &p.ir) {
            *p = p.unobserved();
        } else {
            compared.push(p.stmt);
        }
    }
    let texts: Vec<&str> = compared
        .iter()
        .flat_map(|r| [prepared[r].sql.as_str(), prepared[r].plain.as_str()])
        .collect();
    let plans = explain_all(admin, &texts)?;
    for (r, pair) in compared.iter().zip(plans.chunks(2)) {
        if pair[0] != pair[1] {
            let p = prepared.get_mut(r).expect("a compared statement");
            *p = p.unobserved();
        }
    }
    Ok(())
}

/// Whether the statement as written could read a table of its FROM from a
/// secondary index alone: one whose entries (its columns and the clustered
/// key's) hold every column the statement names of that table. Projecting
/// `rid, wl` rules that plan out, and the plain statement may take it on the
/// live data though it did not on the rows at load, where both `EXPLAIN`s
/// agree (case 10258: after another transaction deleted half the rows, the
/// plain join read `t0` through its covering index and share-locked only its
/// entries, the instrumented one scanned the clustered index; an UPDATE then
/// waited in one run only). Such a read runs as written: the table is the
/// same and the plan space is the plain statement's.
fn index_only_possible(case: &TestCase, stmt: &Stmt) -> bool {
    let Stmt::Select(s) = stmt else { return false };
    let refs = crate::model::walk::column_refs(s);
    s.from.iter().any(|f| {
        let Some(t) = case.schema.table(&f.table) else {
            return false;
        };
        // A bare name counts where this table has such a column (the rule
        // then applies less often, never to a read it should not).
        let named: Vec<&str> = refs
            .iter()
            .filter(|(q, n)| match q {
                Some(q) => *q == f.alias,
                None => t.column(n).is_some(),
            })
            .map(|(_, n)| n.as_str())
            .collect();
        let clustered = t.clustered_key().unwrap_or_default();
        secondary_indexes(t).iter().any(|cols| {
            named
                .iter()
                .all(|n| cols.iter().any(|c| c == n) || clustered.iter().any(|c| c == n))
        })
    })
}

/// The columns of each secondary index InnoDB keeps for `t`: its indexes,
/// its unique keys other than the clustered one, and the index a foreign
/// key gets where no key starts with its columns.
fn secondary_indexes(t: &Table) -> Vec<Vec<String>> {
    let clustered = t.clustered_key().map(<[String]>::to_vec);
    let twin = twin(t);
    let mut out: Vec<Vec<String>> = t
        .unique_keys()
        .into_iter()
        .map(<[String]>::to_vec)
        .filter(|k| Some(k) != clustered.as_ref())
        .collect();
    out.extend(
        twin.indexes
            .iter()
            .filter(|i| !i.unique)
            .map(|i| i.columns.clone()),
    );
    out
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
/// table (`UPDATE t `), and each table of each SELECT in a SELECT, the
/// statement's and its subqueries', joined ones too (`t AS a`).
fn hint_anchors(stmt: &Stmt) -> Vec<(String, String)> {
    match stmt {
        Stmt::Update(u) => vec![(u.table.clone(), format!("UPDATE {} ", u.table))],
        Stmt::Select(_) => sql::selects_of(stmt)
            .into_iter()
            .flat_map(|q| &q.from)
            .filter(|f| f.alias != f.table && !f.alias.is_empty())
            .map(|f| (f.alias.clone(), format!("{} AS {}", f.table, f.alias)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The aliases of a SELECT's inner join in the order `plan` reads them,
/// when the statement's own FROM lists more than one table and joins them
/// all with inner joins (`STRAIGHT_JOIN` then keeps the FROM order).
fn join_order(stmt: &Stmt, plan: &[Vec<Value>]) -> Option<Vec<String>> {
    let Stmt::Select(s) = stmt else { return None };
    let inner = s.from.len() > 1
        && s.from
            .iter()
            .all(|f| f.join.as_ref().is_none_or(|j| j.kind == JoinKind::Inner));
    if !inner {
        return None;
    }
    let aliases: Vec<&str> = s.from.iter().map(|f| f.alias.as_str()).collect();
    Some(
        plan.iter()
            .filter_map(|row| match row.get(2) {
                Some(Value::Text(t)) if aliases.contains(&t.as_str()) => Some(t.clone()),
                _ => None,
            })
            .collect(),
    )
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
    // Inner joins and the order their instrumented plan reads the tables.
    let mut joins: Vec<(StmtRef, Vec<String>)> = Vec::new();
    let candidates: Vec<(&StmtRef, &Prepared)> = prepared
        .iter()
        .filter(|(r, p)| {
            let candidate = matches!(p.ir, Stmt::Update(_)) || plan_decides(case, **r, &p.ir);
            candidate && !hint_anchors(&p.ir).is_empty()
        })
        .collect();
    let texts: Vec<&str> = candidates.iter().map(|(_, p)| p.sql.as_str()).collect();
    let plans = explain_all(admin, &texts)?;
    for ((r, p), plan) in candidates.into_iter().zip(plans) {
        let anchors = hint_anchors(&p.ir);
        let Some(plan) = plan else {
            continue;
        };
        if let Some(order) = join_order(&p.ir, &plan) {
            joins.push((*r, order));
        }
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
    if hinted.is_empty() && joins.is_empty() {
        return Ok(());
    }
    // Every twin's statements, then their `ANALYZE TABLE` (the statistics
    // the plain tables of a run get: `analyze_sql`), in one round trip. The
    // server stops at a failed step; the later twin steps then run as they
    // would alone, and the twins are not analyzed (a name whose twin is
    // missing is the run's table). `creates`: the table of each CREATE step.
    let mut steps: Vec<String> = Vec::new();
    let mut creates: HashMap<usize, String> = HashMap::new();
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
        creates.insert(steps.len(), t.name.clone());
        steps.extend(statements);
    }
    let analyze = super::analyze_sql(&case.schema);
    let mut texts: Vec<&str> = steps.iter().map(String::as_str).collect();
    texts.push(&analyze);
    let mut answers = admin.query_each(&texts);
    let analyzed = answers.len() == texts.len() && answers.iter().all(Result::is_ok);
    if analyzed {
        answers.pop();
    } else if answers.len() < steps.len() {
        let rest = admin.query_all(&texts[answers.len()..steps.len()]);
        answers.extend(rest);
    }
    let mut created = Vec::new();
    let mut twins_ok = analyzed;
    for (i, answer) in answers.into_iter().enumerate() {
        match answer {
            Ok(_) => created.extend(creates.remove(&i)),
            Err(e) if e.class == ErrorClass::ConnectionLost => {
                return Err(setup("plain twin tables", e))
            }
            Err(_) => twins_ok = false,
        }
    }
    let mut plain_plans = HashMap::new();
    if twins_ok {
        let mut stmts: Vec<StmtRef> = Vec::new();
        for r in hinted
            .iter()
            .map(|h| h.stmt)
            .chain(joins.iter().map(|j| j.0))
        {
            if !stmts.contains(&r) {
                stmts.push(r);
            }
        }
        let texts: Vec<&str> = stmts.iter().map(|r| prepared[r].plain.as_str()).collect();
        for (r, plan) in stmts.into_iter().zip(explain_all(admin, &texts)?) {
            plain_plans.insert(r, plan.unwrap_or_default());
        }
    }
    let plain_keys: HashMap<StmtRef, _> = plain_plans
        .iter()
        .map(|(r, plan)| (*r, keys_of(plan)))
        .collect();
    if !created.is_empty() {
        admin
            .query(&format!("DROP TEMPORARY TABLE {}", created.join(", ")))
            .map_err(|e| setup("plain twin tables", e))?;
    }
    // The hints, decided before any is written: a join that gets one also
    // keeps its plain order (a hint can move the optimizer's order).
    let mut hints: Vec<(StmtRef, String, String)> = Vec::new();
    for h in hinted {
        let Some((plain, _)) = plain_keys.get(&h.stmt).and_then(|k| k.get(&h.name)) else {
            continue;
        };
        let hint = match (plain, &h.key) {
            (a, b) if a == b => continue,
            // The primary key is the clustered index: forcing it scans
            // the records themselves, as the plain plan does.
            (Some(k), _) if h.possible.contains(k) || h.possible.is_empty() || k == "PRIMARY" => {
                format!("FORCE INDEX ({k})")
            }
            (None, Some(k)) => format!("IGNORE INDEX ({k})"),
            _ => continue,
        };
        hints.push((h.stmt, h.anchor, hint));
    }
    for (r, order) in joins {
        let p = prepared.get_mut(&r).expect("an explained statement");
        let Some(plain) = plain_plans.get(&r).and_then(|plan| join_order(&p.ir, plan)) else {
            continue;
        };
        // STRAIGHT_JOIN also turns off semi-join flattening of subqueries:
        // a read with one keeps its plan unless the order itself differs.
        let subquery = sql::selects_of(&p.ir).len() > 1;
        if plain == order && (subquery || !hints.iter().any(|h| h.0 == r)) {
            continue;
        }
        keep_join_order(p, &plain);
    }
    for (r, anchor, hint) in hints {
        let p = prepared.get_mut(&r).expect("an explained statement");
        if let Some(at) = p.sql.find(&anchor) {
            let end = at + anchor.len();
            let sep = if anchor.ends_with(' ') { "" } else { " " };
            p.sql = format!("{}{sep}{hint} {}", &p.sql[..end], p.sql[end..].trim_start());
        }
    }
    Ok(())
}

/// Makes the judged inner join read its tables in `order`, the plain
/// plan's: `SELECT STRAIGHT_JOIN` keeps the FROM order, and a FROM written
/// in another order is rewritten in `order` where that keeps each ON
/// condition after the tables it names (comma joins, or two tables).
fn keep_join_order(p: &mut Prepared, order: &[String]) {
    let Stmt::Select(s) = &p.ir else { return };
    let written: Vec<&String> = s.from.iter().map(|f| &f.alias).collect();
    if written != order.iter().collect::<Vec<_>>() {
        let comma = s.from.iter().all(|f| f.join.is_none());
        if order.len() != s.from.len() || !(comma || s.from.len() == 2) {
            return;
        }
        let Some(mut items) = order
            .iter()
            .map(|a| s.from.iter().find(|f| &f.alias == a).cloned())
            .collect::<Option<Vec<FromItem>>>()
        else {
            return;
        };
        if !comma {
            items[1].join = s.from[1].join.clone();
            items[0].join = None;
        }
        let from = format!("FROM {}", sql::from_clause(Dialect::Mysql, &s.from));
        if p.sql.matches(&from).count() != 1 {
            return;
        }
        let reordered = format!("FROM {}", sql::from_clause(Dialect::Mysql, &items));
        p.sql = p.sql.replacen(&from, &reordered, 1);
    }
    if let Some(rest) = p.sql.strip_prefix("SELECT ") {
        p.sql = format!("SELECT STRAIGHT_JOIN {rest}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instrument::prepare_case;

    /// Case 337's `SELECT a1.c0 FROM t0 AS a0 INNER JOIN t0 AS a1 ON ...`.
    fn join() -> Prepared {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/replays/serializable-case337-join-plan.json");
        let file = crate::finding::load_case_file(&path).unwrap();
        let r = StmtRef { txn: 1, index: 1 };
        prepare_case(Dialect::Mysql, file.case())
            .remove(&r)
            .unwrap()
    }

    #[test]
    fn a_join_keeps_the_plain_order_as_written_or_reordered() {
        let order = |o: [&str; 2]| {
            let mut p = join();
            keep_join_order(&mut p, &o.map(String::from));
            p.sql
        };
        let written = order(["a0", "a1"]);
        assert!(
            written.starts_with("SELECT STRAIGHT_JOIN a1.c0, "),
            "{written}"
        );
        assert!(
            written.contains(" FROM t0 AS a0 INNER JOIN t0 AS a1 ON (a0.c1 = a1.c1)"),
            "{written}"
        );
        let reordered = order(["a1", "a0"]);
        assert!(
            reordered.starts_with("SELECT STRAIGHT_JOIN a1.c0, "),
            "{reordered}"
        );
        assert!(
            reordered.contains(" FROM t0 AS a1 INNER JOIN t0 AS a0 ON (a0.c1 = a1.c1)"),
            "{reordered}"
        );
        // The instrumented columns keep their places: the result reads the same.
        let items = |s: &str| s[..s.find(" FROM ").unwrap()].to_string();
        assert_eq!(items(&written), items(&reordered));
    }

    /// Case 10258: `t0(c0, c1 PRIMARY KEY)` with a UNIQUE index on `(c1,
    /// c0)`, `t1` without indexes; the join names `a0.c0, a0.c1`, which the
    /// unique index holds.
    #[test]
    fn a_read_a_secondary_index_could_answer_alone_is_found() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "tests/fixtures/replays/repeatable-read-case10258-fidelity-wait-index-only-join.json",
        );
        let file = crate::finding::load_case_file(&path).unwrap();
        let case = file.case();
        let join = &case.stmt(StmtRef { txn: 3, index: 1 }).unwrap().stmt;
        assert!(index_only_possible(case, join), "{join:?}");
        // Not once the index lacks a named column.
        let mut narrower = case.clone();
        let t0 = &mut narrower.schema.tables[0];
        assert_eq!(
            (t0.name.as_str(), &t0.primary_key[..]),
            ("t0", &["c1".to_string()][..])
        );
        t0.indexes[0].columns = vec!["c1".into()];
        assert!(!index_only_possible(&narrower, join));
        // `t1` has one index, on `c1`, and no primary key: the other join
        // names `a0.c2` and `a1.c0` beside it.
        let other = &case.stmt(StmtRef { txn: 1, index: 1 }).unwrap().stmt;
        assert!(!index_only_possible(case, other), "{other:?}");
    }
}
