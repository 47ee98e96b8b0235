//! Root cause before verdict: a statement whose result or writes differ from
//! what its view predicts is run again alone, in the scratch session
//! (autocommit, no other transaction), on the same view, with the case's
//! secondary indexes, which the scratch tables otherwise leave out. If that
//! run answers otherwise than the run without the indexes (rows returned;
//! rows written and rows matched without a change), the engine answers one
//! statement on one committed state two ways with no concurrency at all: a
//! **query bug** (finding kind `query-bug`), not an isolation violation;
//! the summary says whether the indexed run gave the engine's answer in the
//! case. The finding carries the statement and its data as a standalone
//! script on plain tables.

use super::*;
use crate::model::{Row, TestCase};
use crate::sql::{self, Layout};
use std::collections::BTreeMap;

/// A `query-bug` finding for statement `r`, if running it alone with the
/// case's indexes explains the difference (`eval`: its evaluation without
/// them; `actual`: what the engine did in the case).
pub(super) fn query_bug(
    ck: &mut Checker,
    r: StmtRef,
    eval: &Evaluation,
    actual: &Outcome,
) -> Result<Option<Finding>, Stop> {
    let Ok(view) = serde_json::from_value::<BTreeMap<String, Vec<Vec<Value>>>>(eval.view.clone())
    else {
        return Ok(None);
    };
    let Some(p) = ck.prepared.get(&r).cloned() else {
        return Ok(None);
    };
    // Schema order: parents before children.
    let tables: Vec<(String, Vec<Vec<Value>>)> = ck
        .case
        .schema
        .tables
        .iter()
        .filter_map(|t| view.get(&t.name).map(|rows| (t.name.clone(), rows.clone())))
        .collect();
    if tables.len() != view.len() {
        return Ok(None);
    }
    let indexed = ck
        .scratch
        .run_indexed(&tables, &p)
        .map_err(|_| undecided(Undecided::ScratchFailed))?;
    let Some(indexed) = indexed else {
        return Ok(None);
    };
    if indexed.error.is_some() || eval.outcome.error.is_some() {
        return Ok(None);
    }
    let is_select = matches!(p.ir, Stmt::Select(_));
    let writes_observed = indexed.writes_complete && eval.outcome.writes_complete;
    if !is_select && !writes_observed {
        // Rows the instrumentation cannot observe (an upsert's inserts,
        // REPLACE's deletes): no comparison.
        return Ok(None);
    }
    // Both sides as the instrumentation reports them: result rows, or the
    // rows written and those matched without a change.
    let unchanged = |o: &Outcome| {
        let mut v: Vec<(String, i64)> = o
            .unchanged
            .iter()
            .map(|u| (u.table.clone(), u.rid))
            .collect();
        v.sort();
        v
    };
    let same = |a: &Outcome, b: &Outcome| {
        if is_select {
            same_bag(&a.rows, &b.rows)
        } else {
            a.writes_complete
                && b.writes_complete
                && sorted_writes(&a.writes) == sorted_writes(&b.writes)
                && unchanged(a) == unchanged(b)
        }
    };
    // A query bug needs the engine to answer the statement alone, on one
    // state, differently with and without the indexes.
    if same(&indexed, &eval.outcome) {
        return Ok(None);
    }
    let as_engine = same(&indexed, actual);
    let what = if is_select { "returns" } else { "writes" };
    let summary = if as_engine {
        format!(
            "{} {what} the same wrong rows alone (autocommit, on the committed state its view predicts, with the case's indexes): a query bug, not an isolation violation; without the secondary indexes it {what} what its view predicts",
            label(ck, r)
        )
    } else {
        format!(
            "{} alone (autocommit, on the committed state its view predicts) {what} other rows with the case's secondary indexes than without them: a query bug (which answer is right, and whether the case also breaks isolation, is not decided)",
            label(ck, r)
        )
    };
    let d = ck.scratch.dialect();
    let script = standalone_script(ck.case, d, &tables, &p.plain);
    let f = Finding::new(
        crate::oracle::OracleKind::View,
        super::super::QUERY_BUG,
        summary,
        json!({
            "stmt": format!("T{}#{}", r.txn, r.index),
            "sql": p.plain,
            "isolation": ck.history.isolation,
            "details": {
                "same_as_engine": as_engine,
                "without_indexes": { "rows": eval.outcome.rows, "writes": eval.writes },
                "with_indexes": { "rows": indexed.rows, "writes": indexed.writes },
                "standalone": script,
            },
            "view": eval.view,
            "expected": { "rows": eval.outcome.rows, "writes": eval.writes },
            "actual": { "rows": actual.rows, "writes": actual.writes, "error": actual.error },
        }),
    )
    .about(vec![r]);
    Ok(Some(f))
}

/// The statement and its data on plain tables (the case's columns, keys and
/// indexes, no hidden columns): what an engine developer runs.
fn standalone_script(
    case: &TestCase,
    d: sql::Dialect,
    tables: &[(String, Vec<Vec<Value>>)],
    plain: &str,
) -> String {
    let mut lines = Vec::new();
    for (name, rows) in tables {
        let Some(t) = case.schema.table(name) else {
            continue;
        };
        lines.extend(sql::create_table_as(d, t, Layout::Plain));
        let rows: Vec<Row> = rows
            .iter()
            .filter(|r| r.len() >= 2)
            .map(|r| Row {
                rid: 0,
                values: r[2..].to_vec(),
            })
            .collect();
        lines.extend(sql::insert_rows_as(d, t, &rows, Layout::Plain));
    }
    lines.push(plain.to_string());
    lines
        .iter()
        .map(|l| format!("{l};"))
        .collect::<Vec<_>>()
        .join("\n")
}
