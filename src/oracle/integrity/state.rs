//! The rows of a state, per table, in the schema's column order.

use crate::model::{History, TestCase, Value, WriteList};
use std::collections::BTreeMap;

/// One row of a state: its hidden row id and write list when the state was
/// read with them (the instrumented layout), and its values in
/// [`crate::model::Table::columns`] order.
#[derive(Clone, Debug, PartialEq)]
pub struct StateRow {
    pub rid: Option<i64>,
    pub wl: Option<WriteList>,
    pub values: Vec<Value>,
}

/// Rows per table name.
pub type Rows = BTreeMap<String, Vec<StateRow>>;

/// The final state of `history`, per table of the case's schema: rows read
/// as `[rid, wl, columns...]` (instrumented) or `[columns...]` (plain).
pub fn final_rows(case: &TestCase, history: &History) -> Rows {
    let mut out = Rows::new();
    for table in &case.schema.tables {
        let n = table.columns.len();
        let rows = history.final_state.get(&table.name);
        let rows = rows.map(Vec::as_slice).unwrap_or_default();
        let parsed = rows
            .iter()
            .map(|r| {
                if r.len() == n + 2 {
                    StateRow {
                        rid: rid_of(&r[0]),
                        wl: WriteList::from_value(&r[1]).ok().flatten(),
                        values: r[2..].to_vec(),
                    }
                } else {
                    StateRow {
                        rid: None,
                        wl: None,
                        values: r.clone(),
                    }
                }
            })
            .collect();
        out.insert(table.name.clone(), parsed);
    }
    out
}

/// The case's initial rows, per table (write list `0`).
pub fn initial_rows(case: &TestCase) -> Rows {
    let mut out = Rows::new();
    for table in &case.schema.tables {
        out.insert(table.name.clone(), Vec::new());
    }
    for d in &case.data {
        let rows = out.entry(d.table.clone()).or_default();
        rows.extend(d.rows.iter().map(|r| StateRow {
            rid: Some(r.rid),
            wl: Some(WriteList::initial()),
            values: r.values.clone(),
        }));
    }
    out
}

fn rid_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Text(s) => s.parse().ok(),
        _ => None,
    }
}
