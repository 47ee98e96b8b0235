//! Scoping the `unique_checked_per_row` permission to what it explains.
//!
//! Engines that check unique constraints row by row (MariaDB, PostgreSQL) can
//! fail a multi-row UPDATE of a key column with a duplicate key in one run and
//! not in another, depending on the order the plan visits rows. That explains
//! the UPDATE's own outcome and the rows it wrote where it succeeded, nothing
//! else: any other difference is a violation, unless statements that ran after
//! the UPDATE may have carried its divergence on to it (they mention its table,
//! directly or through other tables), where the comparison is undecided
//! (`unique-order-cascade`), never permitted.

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

/// How far order-dependent UPDATEs of `targets` explain a difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Only the targets differ and nothing after the UPDATEs looked at them.
    Explained,
    /// Statements after the UPDATEs may have carried its divergence on to
    /// what differs, so it cannot be judged.
    Cascade,
    /// Something the UPDATEs cannot explain.
    Unexplained,
}

/// A final-state difference in `touched` tables: explained when it stays in
/// the UPDATEs' `targets` and no `later` statement (the writes that ran after
/// the UPDATEs: only writes change a final state) mentions them; a possible
/// cascade when later writes link the targets (transitively) to what differs;
/// otherwise unexplained.
pub fn scope<'a>(
    targets: &BTreeSet<String>,
    touched: &BTreeSet<String>,
    later: impl IntoIterator<Item = &'a Stmt>,
) -> Scope {
    if targets.is_empty() {
        return Scope::Unexplained;
    }
    let later: Vec<BTreeSet<String>> = later.into_iter().map(walk::tables).collect();
    let mentions_target = later.iter().any(|t| !t.is_disjoint(targets));
    let outside: BTreeSet<&String> = touched.difference(targets).collect();
    if outside.is_empty() {
        return if mentions_target {
            Scope::Cascade
        } else {
            Scope::Explained
        };
    }
    // Tables a later statement may have changed because of the targets.
    let mut reached = targets.clone();
    loop {
        let before = reached.len();
        for t in &later {
            if !t.is_disjoint(&reached) {
                reached.extend(t.iter().cloned());
            }
        }
        if reached.len() == before {
            break;
        }
    }
    if outside.iter().all(|t| reached.contains(*t)) {
        Scope::Cascade
    } else {
        Scope::Unexplained
    }
}

/// A statement other than the order-dependent UPDATEs that gave another
/// result or error: never explained by them, a possible cascade when it ran
/// after them (`is_later`).
pub fn effect_scope(targets: &BTreeSet<String>, is_later: bool) -> Scope {
    if !targets.is_empty() && is_later {
        Scope::Cascade
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
        // A difference in t1 is unexplained when nothing later links t0 to t1,
        // even if a later statement reads t0...
        assert_eq!(
            scope(&set(&["t0"]), &set(&["t0", "t1"]), [&later]),
            Scope::Unexplained
        );
        // ... and a possible cascade when one does (here through t2).
        let link = |a: &str, b: &str| {
            let mut s = crate::testkit::select(a, None);
            if let Stmt::Select(q) = &mut s {
                let mut sub = crate::testkit::select(b, None);
                if let Stmt::Select(inner) = &mut sub {
                    inner.items.truncate(1);
                }
                let Stmt::Select(inner) = sub else {
                    unreachable!()
                };
                q.where_ = Some(crate::model::Expr::InSubquery {
                    expr: Box::new(crate::model::Expr::col("k")),
                    query: Box::new(inner),
                    negated: false,
                });
            }
            s
        };
        let (a, b) = (link("t2", "t0"), link("t1", "t2"));
        assert_eq!(
            scope(&set(&["t0"]), &set(&["t1"]), [&a, &b]),
            Scope::Cascade
        );
        assert_eq!(effect_scope(&set(&["t0"]), true), Scope::Cascade);
        assert_eq!(effect_scope(&set(&["t0"]), false), Scope::Unexplained);
        assert_eq!(effect_scope(&set(&[]), true), Scope::Unexplained);
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
