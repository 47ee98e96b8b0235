//! CHECK constraints, evaluated by the engine itself: each row's values are
//! put in place of the columns, and the engine says whether the expression is
//! false (NULL passes, as a CHECK does). One query per table, no table read,
//! so the engine's state does not matter.

use super::keys::{row_evidence, state_text};
use super::provenance::Provenance;
use super::state::Rows;
use super::{Broken, Evidence, StateRef};
use crate::engine::{Engine, EngineError};
use crate::model::{Expr, Table, TestCase, Value};
use crate::sql::render_expr;

/// Rows evaluated per query (a select list of one column per row).
const ROWS_PER_QUERY: usize = 200;

/// `check`: final-state rows for which a CHECK expression is false.
pub(super) fn check_constraints(
    engine: &mut dyn Engine,
    case: &TestCase,
    rows: &Rows,
    prov: &Provenance,
) -> Result<Vec<Broken>, EngineError> {
    let work: Vec<(&Table, &Expr)> = case
        .schema
        .tables
        .iter()
        .filter(|t| rows.get(&t.name).is_some_and(|r| !r.is_empty()))
        .flat_map(|t| t.checks.iter().map(move |c| (t, c)))
        .collect();
    if work.is_empty() {
        return Ok(Vec::new());
    }
    let dialect = engine.dialect();
    let mut session = engine.open_bounded_session(case.isolation)?;
    let mut out = Vec::new();
    for (table, check) in work {
        let trows = &rows[&table.name];
        let mut failing = Vec::new();
        for chunk in trows.chunks(ROWS_PER_QUERY) {
            let items: Vec<String> = chunk
                .iter()
                .map(|r| {
                    let e = Expr::Not(Box::new(substitute(check, table, &r.values)));
                    render_expr(dialect, &e)
                })
                .collect();
            let sql = format!("SELECT {}", items.join(", "));
            let res = session.query(&sql).map_err(|e| {
                crate::engine::admin_error(&format!("evaluating CHECK of {}", table.name), e)
            })?;
            let Some(row) = res.rows.first() else {
                return Err(EngineError::Setup(format!(
                    "evaluating CHECK of {}: no row returned",
                    table.name
                )));
            };
            for (r, v) in chunk.iter().zip(row) {
                if is_true(v) {
                    failing.push(r);
                }
            }
        }
        if failing.is_empty() {
            continue;
        }
        let cols: Vec<usize> = (0..table.columns.len()).collect();
        let bad: Vec<_> = failing
            .iter()
            .map(|r| row_evidence(table, r, &cols, prov))
            .collect();
        let text = render_expr(dialect, check);
        out.push(Broken {
            kind: "check",
            summary: format!(
                "{}: {} row(s) of {} break CHECK {text}",
                state_text(&StateRef::Final),
                bad.len(),
                table.name
            ),
            claim: None,
            evidence: Evidence::of(&StateRef::Final, &table.name, format!("CHECK {text}"), bad),
        });
    }
    Ok(out)
}

/// Whether an engine's answer is true (booleans come back as `TRUE` or 1).
fn is_true(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Text(s) => s == "1" || s.eq_ignore_ascii_case("t") || s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

/// `e` with each column of `table` replaced by the row's value.
pub(super) fn substitute(e: &Expr, table: &Table, values: &[Value]) -> Expr {
    e.map_cols(&|_, name| {
        let k = table.columns.iter().position(|c| c.name == name)?;
        values.get(k).cloned().map(Expr::Lit)
    })
}
