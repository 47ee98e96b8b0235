//! Comparing result sets and database states as bags.

use crate::model::{DbState, Value};
use serde_json::json;

/// Sorts a copy of each side and compares (bag equality).
pub fn same_bag(a: &[Vec<Value>], b: &[Vec<Value>]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort();
    b.sort();
    a == b
}

/// Rows only in `a` and rows only in `b` (multiset difference).
pub fn bag_diff(a: &[Vec<Value>], b: &[Vec<Value>]) -> (Vec<Vec<Value>>, Vec<Vec<Value>>) {
    let mut only_b: Vec<Vec<Value>> = b.to_vec();
    let mut only_a = Vec::new();
    for row in a {
        if let Some(i) = only_b.iter().position(|r| r == row) {
            only_b.swap_remove(i);
        } else {
            only_a.push(row.clone());
        }
    }
    only_b.sort();
    (only_a, only_b)
}

/// Per-table differences between two states, as JSON evidence; `None` when equal.
pub fn state_diff(actual: &DbState, expected: &DbState) -> Option<serde_json::Value> {
    let mut tables = serde_json::Map::new();
    let names: std::collections::BTreeSet<&String> = actual.keys().chain(expected.keys()).collect();
    for name in names {
        let a = actual.get(name).map(Vec::as_slice).unwrap_or_default();
        let e = expected.get(name).map(Vec::as_slice).unwrap_or_default();
        if !same_bag(a, e) {
            let (only_actual, only_expected) = bag_diff(a, e);
            tables.insert(
                name.clone(),
                json!({ "only_in_actual": only_actual, "only_in_expected": only_expected }),
            );
        }
    }
    (!tables.is_empty()).then_some(serde_json::Value::Object(tables))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(v: &[i64]) -> Vec<Value> {
        v.iter().map(|&x| Value::Int(x)).collect()
    }

    #[test]
    fn bags_ignore_order_but_not_multiplicity() {
        assert!(same_bag(&[r(&[1]), r(&[2])], &[r(&[2]), r(&[1])]));
        assert!(!same_bag(&[r(&[1]), r(&[1])], &[r(&[1]), r(&[2])]));
        let (a, b) = bag_diff(&[r(&[1]), r(&[1]), r(&[3])], &[r(&[1]), r(&[2])]);
        assert_eq!(a, vec![r(&[1]), r(&[3])]);
        assert_eq!(b, vec![r(&[2])]);
    }

    #[test]
    fn state_diff_names_tables() {
        let mut a = DbState::new();
        let mut e = DbState::new();
        a.insert("t0".into(), vec![r(&[1, 5])]);
        e.insert("t0".into(), vec![r(&[1, 6])]);
        a.insert("t1".into(), vec![r(&[2])]);
        e.insert("t1".into(), vec![r(&[2])]);
        let d = state_diff(&a, &e).unwrap();
        assert!(d.get("t0").is_some() && d.get("t1").is_none());
        assert!(state_diff(&a, &a).is_none());
    }
}
