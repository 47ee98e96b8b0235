//! Which of the constraint features a case uses (`summary.json`
//! `cases_with`: how often a campaign draws each).

use super::{ConstraintTiming, FkAction, Stmt, TestCase};
use std::collections::BTreeSet;

/// The features `case` uses: `foreign-key`, `fk-action` (CASCADE, SET NULL
/// or RESTRICT), `deferrable-fk`, `auto-key` (a key-generator column),
/// `insert-select`, `set-constraints-deferred`, `set-constraints-immediate`;
/// and open cursors: `cursor`, `cursor-after-own-write` (a cursor stepped
/// after its session wrote its table: those rows are not judged).
pub fn constraint_features(case: &TestCase) -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    for t in &case.schema.tables {
        for fk in &t.foreign_keys {
            out.insert("foreign-key");
            if fk.on_delete != FkAction::NoAction || fk.on_update != FkAction::NoAction {
                out.insert("fk-action");
            }
            if fk.deferrable.is_some() {
                out.insert("deferrable-fk");
            }
        }
        if t.columns.iter().any(|c| c.auto_key) {
            out.insert("auto-key");
        }
    }
    for s in case.txns.iter().flat_map(|t| &t.stmts) {
        match &s.stmt {
            Stmt::Insert(i) if i.select.is_some() => {
                out.insert("insert-select");
            }
            Stmt::SetConstraints(ConstraintTiming::Deferred) => {
                out.insert("set-constraints-deferred");
            }
            Stmt::SetConstraints(ConstraintTiming::Immediate) => {
                out.insert("set-constraints-immediate");
            }
            Stmt::Select(q) if q.cursor.is_some() => {
                out.insert("cursor");
            }
            _ => {}
        }
    }
    if out.contains("cursor")
        && super::cursor::cursors(case)
            .iter()
            .any(|c| !c.unjudged.is_empty())
    {
        out.insert("cursor-after-own-write");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::constraints::*;
    use crate::testkit::*;

    #[test]
    fn each_feature_is_named_where_the_case_uses_it() {
        let plain = parent_child_case(&[], &[], vec![committed(vec![select_children()])], "1 1 1");
        assert_eq!(
            constraint_features(&plain).into_iter().collect::<Vec<_>>(),
            ["foreign-key"]
        );
        let mut case = parent_child_case(
            &[],
            &[],
            vec![committed(vec![
                Stmt::SetConstraints(ConstraintTiming::Deferred),
                insert_next_parent(9, 1),
            ])],
            "1 1 1 1",
        );
        case.schema.tables[0].columns[0].auto_key = true;
        case.schema.tables[1].foreign_keys[0].on_delete = FkAction::Cascade;
        let got: Vec<&str> = constraint_features(&case).into_iter().collect();
        assert_eq!(
            got,
            [
                "auto-key",
                "fk-action",
                "foreign-key",
                "insert-select",
                "set-constraints-deferred"
            ]
        );
    }
}
