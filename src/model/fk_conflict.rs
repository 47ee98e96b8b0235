//! Transactions that meet on a foreign key: how often the generator makes
//! them (`summary.json` `parent_child_conflicts`), and a trait of known
//! issues (`concurrent-parent-child-writes`).

use super::{ForeignKey, History, OnConflict, Stmt, TestCase};
use std::collections::HashMap;

/// A unit of concurrency: an explicit transaction, or one autocommit statement.
type Unit = (u32, Option<u32>);

/// Whether two transactions that were open at the same time wrote (or tried
/// to write: a statement that failed its foreign-key check counts) the two
/// sides of one foreign key: one changed parent rows (DELETE, an UPDATE of a
/// referenced column, REPLACE or an upsert, or a foreign-key action of
/// another key that writes the parent table), the other inserted child rows
/// or changed their key.
pub fn parent_child_conflict(case: &TestCase, history: &History) -> bool {
    let mut span: HashMap<Unit, (usize, usize)> = HashMap::new();
    let unit = |txn: u32, index: u32| -> Unit {
        let autocommit = case.txn(txn).is_some_and(|t| t.autocommit);
        (txn, autocommit.then_some(index))
    };
    for (i, e) in history.events.iter().enumerate() {
        let s = span.entry(unit(e.stmt.txn, e.stmt.index)).or_insert((i, i));
        s.1 = i;
    }
    let keys: Vec<(&str, &ForeignKey)> = case
        .schema
        .tables
        .iter()
        .flat_map(|t| t.foreign_keys.iter().map(move |fk| (t.name.as_str(), fk)))
        .collect();
    let mut parents: Vec<(usize, Unit)> = Vec::new();
    let mut children: Vec<(usize, Unit)> = Vec::new();
    for o in &history.outcomes {
        let Some(cs) = case.stmt(o.stmt) else {
            continue;
        };
        let u = unit(o.stmt.txn, o.stmt.index);
        // Parent rows a foreign-key action of another key deletes or re-keys.
        let acted = super::walk::cascade_targets(&cs.stmt, &case.schema);
        for (k, (child, fk)) in keys.iter().enumerate() {
            if changes_parent(&cs.stmt, fk) || acted.contains(&fk.ref_table) {
                parents.push((k, u));
            }
            if changes_child(&cs.stmt, child, fk) {
                children.push((k, u));
            }
        }
    }
    let overlap = |a: &Unit, b: &Unit| match (span.get(a), span.get(b)) {
        (Some(x), Some(y)) => x.0 <= y.1 && y.0 <= x.1,
        _ => false,
    };
    parents.iter().any(|(k, p)| {
        children
            .iter()
            .any(|(kc, c)| k == kc && p.0 != c.0 && overlap(p, c))
    })
}

fn changes_parent(stmt: &Stmt, fk: &ForeignKey) -> bool {
    let refs = |a: &[super::Assignment]| a.iter().any(|a| fk.ref_columns.contains(&a.column));
    match stmt {
        Stmt::Delete(d) => d.table == fk.ref_table,
        Stmt::Update(u) => u.table == fk.ref_table && refs(&u.assignments),
        Stmt::Insert(i) => {
            i.table == fk.ref_table
                && match &i.on_conflict {
                    OnConflict::Replace => true,
                    OnConflict::Update { assignments, .. } => refs(assignments),
                    _ => false,
                }
        }
        _ => false,
    }
}

fn changes_child(stmt: &Stmt, child: &str, fk: &ForeignKey) -> bool {
    match stmt {
        Stmt::Insert(i) => i.table == child,
        Stmt::Update(u) => {
            u.table == child && u.assignments.iter().any(|a| fk.columns.contains(&a.column))
        }
        _ => false,
    }
}
