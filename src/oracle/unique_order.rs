//! Scoping the `unique_checked_per_row` permission to what it explains.
//!
//! Engines that check unique constraints row by row (MariaDB, PostgreSQL) can
//! fail a multi-row UPDATE of a key column with a duplicate key in one run and
//! not in another, depending on the order the plan visits rows. That explains
//! the UPDATE's own outcome and the rows of its table, nothing else: a
//! difference elsewhere is a violation, and where a later statement read or
//! wrote the UPDATE's table (so the divergence may have propagated) the
//! comparison is undecided (`unique-order-cascade`), never permitted.

use crate::model::{walk, ErrorClass, Outcome, Stmt, TestCase};
use std::collections::BTreeSet;

/// Whether `stmt` is an UPDATE that assigns a column of a unique key.
pub fn updates_unique_key(case: &TestCase, stmt: &Stmt) -> bool {
    let Stmt::Update(u) = stmt else {
        return false;
    };
    let Some(t) = case.schema.table(&u.table) else {
        return false;
    };
    t.unique_keys()
        .iter()
        .any(|k| u.assignments.iter().any(|a| k.contains(&a.column)))
}

fn duplicate(o: &Outcome) -> bool {
    o.error
        .as_ref()
        .is_some_and(|e| e.class == ErrorClass::DuplicateKey)
}

/// Whether the outcomes `a` and `b` of `stmt` in two runs differ only as
/// row-by-row unique checking allows: a unique-key UPDATE that hit a
/// duplicate key in one run and changed two or more rows in the other (one
/// row cannot be visited in another order).
pub fn order_dependent(case: &TestCase, stmt: &Stmt, a: &Outcome, b: &Outcome) -> bool {
    let multi_row_success = |o: &Outcome| o.ok() && o.affected >= 2;
    updates_unique_key(case, stmt)
        && ((duplicate(a) && multi_row_success(b)) || (duplicate(b) && multi_row_success(a)))
}

/// How far order-dependent UPDATEs of `targets` explain a difference in
/// `touched` tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Only the targets differ and nothing after the UPDATEs looked at them.
    Explained,
    /// A later statement mentions a target table: the difference may have
    /// propagated, so it cannot be judged.
    Cascade,
    /// Something the UPDATEs cannot explain.
    Unexplained,
}

pub fn scope<'a>(
    targets: &BTreeSet<String>,
    touched: &BTreeSet<String>,
    later: impl IntoIterator<Item = &'a Stmt>,
) -> Scope {
    if targets.is_empty() {
        return Scope::Unexplained;
    }
    let cascade = later
        .into_iter()
        .any(|s| walk::tables(s).iter().any(|t| targets.contains(t)));
    if cascade {
        Scope::Cascade
    } else if touched.is_subset(targets) {
        Scope::Explained
    } else {
        Scope::Unexplained
    }
}

/// The rows an order-dependent UPDATE wrote in the run where it succeeded
/// (`None`: that run's writes were not fully observed).
pub fn explained_rows(a: &Outcome, b: &Outcome) -> Option<BTreeSet<(String, i64)>> {
    let ok = if a.ok() { a } else { b };
    ok.writes_complete
        .then(|| ok.writes.iter().map(|w| (w.table.clone(), w.rid)).collect())
}

/// The rows (table, rid) a final-state diff names on either side (rows are
/// `[rid, wl, columns...]`); `None` when a row has no integer rid.
pub fn diff_rows(diff: &serde_json::Value) -> Option<BTreeSet<(String, i64)>> {
    let mut out = BTreeSet::new();
    for (table, sides) in diff.as_object()? {
        for side in ["only_in_actual", "only_in_expected"] {
            for row in sides
                .get(side)
                .and_then(|r| r.as_array())
                .into_iter()
                .flatten()
            {
                let first = row.as_array()?.first()?;
                match serde_json::from_value::<crate::model::Value>(first.clone()).ok()? {
                    crate::model::Value::Int(rid) => out.insert((table.clone(), rid)),
                    _ => return None,
                };
            }
        }
    }
    Some(out)
}

/// Whether the rows of a final-state diff are all rows the order-dependent
/// UPDATEs wrote (`explained`: `None` when those were not fully observed).
pub fn rows_explained(
    explained: Option<&BTreeSet<(String, i64)>>,
    diff: &serde_json::Value,
) -> Option<bool> {
    let rows = diff_rows(diff)?;
    explained.map(|e| rows.is_subset(e))
}

/// The tables a final-state diff (`compare::state_diff`) names.
pub fn diff_tables(diff: &serde_json::Value) -> BTreeSet<String> {
    diff.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{StmtError, Value};

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scope_is_limited_to_the_target_tables() {
        let none: [&Stmt; 0] = [];
        assert_eq!(scope(&set(&["t0"]), &set(&["t0"]), none), Scope::Explained);
        assert_eq!(
            scope(&set(&["t0"]), &set(&["t0", "t1"]), none),
            Scope::Unexplained
        );
        assert_eq!(scope(&set(&[]), &set(&[]), none), Scope::Unexplained);
        let later = crate::testkit::select("t0", Some(1));
        assert_eq!(
            scope(&set(&["t0"]), &set(&["t0"]), [&later]),
            Scope::Cascade
        );
        let other = crate::testkit::select("t1", Some(1));
        assert_eq!(
            scope(&set(&["t0"]), &set(&["t0"]), [&other]),
            Scope::Explained
        );
    }

    #[test]
    fn final_state_rows_must_be_the_updates_own() {
        let diff = serde_json::json!({"t0": {
            "only_in_actual": [[{"int": 1}, {"text": "0,3"}, {"int": 2}]],
            "only_in_expected": [[{"int": 1}, {"text": "0"}, {"int": 1}]],
        }});
        let mine: BTreeSet<(String, i64)> = [("t0".to_string(), 1), ("t0".to_string(), 2)].into();
        assert_eq!(rows_explained(Some(&mine), &diff), Some(true));
        let other: BTreeSet<(String, i64)> = [("t0".to_string(), 2)].into();
        assert_eq!(rows_explained(Some(&other), &diff), Some(false));
        assert_eq!(rows_explained(None, &diff), None);
    }

    #[test]
    fn only_a_multi_row_unique_key_update_with_one_duplicate_is_order_dependent() {
        use crate::model::{Assignment, BinOp, Expr, Update};
        let ok = |n| Outcome {
            affected: n,
            ..Outcome::default()
        };
        let dup = Outcome::failed(StmtError {
            class: ErrorClass::DuplicateKey,
            code: "1062".into(),
            message: "dup".into(),
        });
        let case = crate::testkit::kv_case(&[(1, 1), (2, 2)], vec![], "");
        // UPDATE t SET k = k + 1: assigns the primary key.
        let shift = Stmt::Update(Update {
            table: "t".into(),
            assignments: vec![Assignment {
                column: "k".into(),
                value: Expr::bin(BinOp::Add, Expr::col("k"), Expr::Lit(Value::Int(1))),
            }],
            where_: None,
        });
        assert!(order_dependent(&case, &shift, &dup, &ok(2)));
        assert!(order_dependent(&case, &shift, &ok(2), &dup));
        assert!(!order_dependent(&case, &shift, &dup, &ok(1)), "one row");
        assert!(!order_dependent(&case, &shift, &dup, &dup));
        // A value column is no key.
        let value = crate::testkit::add("t", 1, 1);
        assert!(!order_dependent(&case, &value, &dup, &ok(2)));
    }
}
