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

use crate::model::{walk, ErrorClass, Outcome, Stmt, TestCase, WriteList};
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

/// The table a write changes.
fn written_table(s: &Stmt) -> Option<&str> {
    match s {
        Stmt::Insert(i) => Some(&i.table),
        Stmt::Update(u) => Some(&u.table),
        Stmt::Delete(d) => Some(&d.table),
        _ => None,
    }
}

/// The tables whose rows may differ because of the UPDATEs on `targets`: the
/// targets, and (transitively) the table of each `later` write that mentions
/// one of them.
fn reached(targets: &BTreeSet<String>, later: &[&Stmt]) -> BTreeSet<String> {
    let mut reached = targets.clone();
    loop {
        let before = reached.len();
        for s in later {
            if let Some(w) = written_table(s) {
                if walk::tables(s).iter().any(|t| reached.contains(t)) {
                    reached.insert(w.to_string());
                }
            }
        }
        if reached.len() == before {
            return reached;
        }
    }
}

/// A final-state difference in `touched` tables, given the statements that
/// ran after the UPDATEs (`later`; only writes change a final state):
/// explained when it stays in the UPDATEs' `targets` and no later write
/// changes a target table; a possible cascade when later writes link the
/// targets (transitively) to every table that differs; otherwise unexplained.
pub fn scope(targets: &BTreeSet<String>, touched: &BTreeSet<String>, later: &[&Stmt]) -> Scope {
    if targets.is_empty() {
        return Scope::Unexplained;
    }
    let writes_target = later
        .iter()
        .any(|s| written_table(s).is_some_and(|w| targets.contains(w)));
    if touched.is_subset(targets) {
        return if writes_target {
            Scope::Cascade
        } else {
            Scope::Explained
        };
    }
    if touched.is_subset(&reached(targets, later)) {
        Scope::Cascade
    } else {
        Scope::Unexplained
    }
}

/// A statement other than the order-dependent UPDATEs that gave another
/// result or error: never explained by them; a possible cascade when it ran
/// after them (`is_later`) and mentions a table they (or later writes they
/// reach) changed.
pub fn effect_scope(
    targets: &BTreeSet<String>,
    stmt: &Stmt,
    later: &[&Stmt],
    is_later: bool,
) -> Scope {
    if targets.is_empty() || !is_later {
        return Scope::Unexplained;
    }
    let reached = reached(targets, later);
    if walk::tables(stmt).iter().any(|t| reached.contains(t)) {
        Scope::Cascade
    } else {
        Scope::Unexplained
    }
}

/// The scope of several differing statements together: unexplained if any
/// is, else a cascade if any is; `None` for no statements.
pub fn combine(scopes: impl IntoIterator<Item = Scope>) -> Option<Scope> {
    scopes.into_iter().fold(None, |acc, s| match (acc, s) {
        (Some(Scope::Unexplained), _) | (_, Scope::Unexplained) => Some(Scope::Unexplained),
        _ => Some(s),
    })
}

/// The rows an order-dependent UPDATE wrote in the run where it succeeded,
/// with their write lists before and after (`None`: that run's writes were
/// not fully observed).
pub fn explained_rows(a: &Outcome, b: &Outcome) -> Option<ExplainedRows> {
    let ok = if a.ok() { a } else { b };
    ok.writes_complete.then(|| {
        ok.writes
            .iter()
            .map(|w| {
                (
                    (w.table.clone(), w.rid),
                    (w.before.clone(), w.after.clone()),
                )
            })
            .collect()
    })
}

/// Rows by (table, rid), with the write lists an UPDATE found and left.
pub type ExplainedRows =
    std::collections::BTreeMap<(String, i64), (Option<WriteList>, Option<WriteList>)>;

/// The rows (table, rid, write list) a final-state diff names on either side
/// (rows are `[rid, wl, columns...]`); `None` when a row has another shape.
pub fn diff_rows(diff: &serde_json::Value) -> Option<Vec<(String, i64, WriteList)>> {
    use crate::model::Value;
    let mut out = Vec::new();
    for (table, sides) in diff.as_object()? {
        for side in ["only_in_actual", "only_in_expected"] {
            for row in sides
                .get(side)
                .and_then(|r| r.as_array())
                .into_iter()
                .flatten()
            {
                let row = row.as_array()?;
                let value = |i: usize| serde_json::from_value::<Value>(row.get(i)?.clone()).ok();
                // A one-entry write list may come back as a number (MariaDB).
                match (value(0)?, WriteList::from_value(&value(1)?)) {
                    (Value::Int(rid), Ok(Some(wl))) => out.push((table.clone(), rid, wl)),
                    _ => return None,
                }
            }
        }
    }
    Some(out)
}

/// Whether every row of a final-state diff is a row the order-dependent
/// UPDATEs wrote, as they found it (the failing run) or left it (the
/// succeeding run): an earlier difference in such a row is not explained.
/// `None` when the UPDATEs' rows were not fully observed or a row has no
/// write list.
pub fn rows_explained(explained: Option<&ExplainedRows>, diff: &serde_json::Value) -> Option<bool> {
    let rows = diff_rows(diff)?;
    let explained = explained?;
    Some(rows.iter().all(|(table, rid, wl)| {
        explained
            .get(&(table.clone(), *rid))
            .is_some_and(|(before, after)| {
                before.as_ref() == Some(wl) || after.as_ref() == Some(wl)
            })
    }))
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
        use crate::testkit::{add, select};
        let t0 = set(&["t0"]);
        assert_eq!(scope(&t0, &t0, &[]), Scope::Explained);
        assert_eq!(scope(&t0, &set(&["t0", "t1"]), &[]), Scope::Unexplained);
        assert_eq!(scope(&set(&[]), &set(&[]), &[]), Scope::Unexplained);
        // A later write of t0 may change the UPDATE's rows; a read may not.
        let write_t0 = add("t0", 1, 1);
        let read_t0 = select("t0", Some(1));
        assert_eq!(scope(&t0, &t0, &[&write_t0]), Scope::Cascade);
        assert_eq!(scope(&t0, &t0, &[&read_t0]), Scope::Explained);
        // A difference in t1 is unexplained unless later writes link t0 to t1
        // (here through t2: t2 updated from t0, then t1 from t2).
        assert_eq!(
            scope(&t0, &set(&["t0", "t1"]), &[&write_t0]),
            Scope::Unexplained
        );
        let link = |into: &str, from: &str| {
            let mut w = add(into, 1, 1);
            if let Stmt::Update(u) = &mut w {
                let Stmt::Select(mut inner) = select(from, None) else {
                    unreachable!()
                };
                inner.items.truncate(1);
                u.where_ = Some(crate::model::Expr::InSubquery {
                    expr: Box::new(crate::model::Expr::col("k")),
                    query: Box::new(inner),
                    negated: false,
                });
            }
            w
        };
        let (a, b) = (link("t2", "t0"), link("t1", "t2"));
        assert_eq!(scope(&t0, &set(&["t1"]), &[&a, &b]), Scope::Cascade);
        assert_eq!(scope(&t0, &set(&["t1"]), &[&b]), Scope::Unexplained);
        // A differing statement: a cascade only if it ran later and reads a
        // table the UPDATE (or later writes it reaches) changed.
        assert_eq!(effect_scope(&t0, &read_t0, &[], true), Scope::Cascade);
        assert_eq!(effect_scope(&t0, &read_t0, &[], false), Scope::Unexplained);
        let read_t1 = select("t1", Some(1));
        assert_eq!(effect_scope(&t0, &read_t1, &[], true), Scope::Unexplained);
        assert_eq!(effect_scope(&t0, &read_t1, &[&a, &b], true), Scope::Cascade);
        assert_eq!(
            effect_scope(&set(&[]), &read_t0, &[], true),
            Scope::Unexplained
        );
    }

    #[test]
    fn final_state_rows_must_be_the_updates_own() {
        let diff = serde_json::json!({"t0": {
            "only_in_actual": [[{"int": 1}, {"text": "0,3"}, {"int": 2}]],
            "only_in_expected": [[{"int": 1}, {"text": "0"}, {"int": 1}]],
        }});
        let wrote = |rid, before: &str, after: &str| {
            (
                ("t0".to_string(), rid),
                (Some(before.parse().unwrap()), Some(after.parse().unwrap())),
            )
        };
        let mine: ExplainedRows = [wrote(1, "0", "0,3"), wrote(2, "0", "0,3")].into();
        assert_eq!(rows_explained(Some(&mine), &diff), Some(true));
        let other: ExplainedRows = [wrote(2, "0", "0,3")].into();
        assert_eq!(rows_explained(Some(&other), &diff), Some(false));
        // Row 1 differed before the UPDATE (an earlier write lost): not its doing.
        let earlier: ExplainedRows = [wrote(1, "0,2", "0,2,3")].into();
        assert_eq!(rows_explained(Some(&earlier), &diff), Some(false));
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
