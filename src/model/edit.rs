//! Edits of a test case that keep it structurally valid ([`TestCase::validate`]):
//! removing transactions, statements, tables, rows, columns and constraints.
//! Each returns `None` when the edit does not apply or would leave nothing.

use crate::model::walk;
use crate::model::{Stmt, StmtRef, TestCase};
use std::collections::HashMap;

/// Removes the transactions (sessions) with the given ids.
pub fn remove_txns(case: &TestCase, ids: &[u32]) -> Option<TestCase> {
    let mut c = case.clone();
    c.txns.retain(|t| !ids.contains(&t.id));
    if c.txns.is_empty() || c.txns.len() == case.txns.len() {
        return None;
    }
    c.submit_order.retain(|r| !ids.contains(&r.txn));
    Some(c)
}

/// Statements that may be removed on their own: every statement of an
/// autocommit session, and everything between BEGIN and COMMIT/ROLLBACK of an
/// explicit transaction. Returned as operation ids.
pub fn removable_ops(case: &TestCase) -> Vec<u32> {
    let mut out = Vec::new();
    for t in &case.txns {
        let n = t.stmts.len();
        for (i, s) in t.stmts.iter().enumerate() {
            if t.autocommit || (i > 0 && i + 1 < n) {
                out.push(s.op);
            }
        }
    }
    out
}

/// Removes the statements with the given operation ids (from their transaction
/// and the submit order); an autocommit session left empty is removed.
pub fn remove_ops(case: &TestCase, ops: &[u32]) -> Option<TestCase> {
    if ops.is_empty() {
        return None;
    }
    // A cursor's steps go with its open.
    let mut with_steps = ops.to_vec();
    for cur in crate::model::cursor::cursors(case) {
        let op_of = |r: StmtRef| case.stmt(r).map(|s| s.op);
        if op_of(cur.open).is_some_and(|op| ops.contains(&op)) {
            let steps = cur.judged.iter().chain(&cur.unjudged).chain(&cur.close);
            with_steps.extend(steps.filter_map(|r| op_of(*r)));
        }
    }
    let ops = &with_steps[..];
    let mut c = case.clone();
    // Old (txn, index) -> new index.
    let mut remap: HashMap<StmtRef, u32> = HashMap::new();
    for t in &mut c.txns {
        let mut kept = Vec::new();
        for (i, s) in t.stmts.drain(..).enumerate() {
            if !ops.contains(&s.op) {
                remap.insert(
                    StmtRef {
                        txn: t.id,
                        index: i as u32,
                    },
                    kept.len() as u32,
                );
                kept.push(s);
            }
        }
        t.stmts = kept;
    }
    c.txns.retain(|t| !t.stmts.is_empty());
    if c.txns.is_empty() {
        return None;
    }
    c.submit_order = case
        .submit_order
        .iter()
        .filter_map(|r| remap.get(r).map(|&index| StmtRef { txn: r.txn, index }))
        .collect();
    Some(c)
}

/// Replaces the statement with operation id `op` by `stmt`.
pub fn replace_stmt(case: &TestCase, op: u32, stmt: Stmt) -> TestCase {
    let mut c = case.clone();
    for s in c.txns.iter_mut().flat_map(|t| t.stmts.iter_mut()) {
        if s.op == op {
            s.stmt = stmt.clone();
        }
    }
    c
}

/// Removes table `name`, its rows, every statement that mentions it and every
/// foreign key that references it.
pub fn remove_table(case: &TestCase, name: &str) -> Option<TestCase> {
    if case.schema.tables.len() < 2 || case.schema.table(name).is_none() {
        return None;
    }
    let ops: Vec<u32> = case
        .txns
        .iter()
        .flat_map(|t| &t.stmts)
        .filter(|s| walk::tables(&s.stmt).contains(name))
        .map(|s| s.op)
        .collect();
    // BEGIN/COMMIT never mention tables, so every such op is removable.
    let mut c = if ops.is_empty() {
        case.clone()
    } else {
        remove_ops(case, &ops)?
    };
    c.schema.tables.retain(|t| t.name != name);
    c.data.retain(|d| d.table != name);
    for t in &mut c.schema.tables {
        t.foreign_keys.retain(|fk| fk.ref_table != name);
    }
    Some(c)
}

/// Initial rows as `(table, rid)`.
pub fn rows(case: &TestCase) -> Vec<(String, i64)> {
    case.data
        .iter()
        .flat_map(|d| d.rows.iter().map(|r| (d.table.clone(), r.rid)))
        .collect()
}

pub fn remove_rows(case: &TestCase, rows: &[(String, i64)]) -> Option<TestCase> {
    if rows.is_empty() {
        return None;
    }
    let mut c = case.clone();
    for d in &mut c.data {
        d.rows
            .retain(|r| !rows.iter().any(|(t, rid)| *t == d.table && *rid == r.rid));
    }
    Some(c)
}

/// Columns no statement, constraint or index mentions (by name, in any table:
/// unqualified references are not resolved), as `(table, column)`. A table
/// keeps at least one column.
pub fn unreferenced_columns(case: &TestCase) -> Vec<(String, String)> {
    let mut used = std::collections::BTreeSet::new();
    for s in case.txns.iter().flat_map(|t| &t.stmts) {
        used.extend(walk::columns(&s.stmt));
    }
    for t in &case.schema.tables {
        used.extend(t.primary_key.iter().cloned());
        used.extend(t.uniques.iter().flatten().cloned());
        used.extend(t.indexes.iter().flat_map(|i| i.columns.iter().cloned()));
        for fk in &t.foreign_keys {
            used.extend(fk.columns.iter().cloned());
            used.extend(fk.ref_columns.iter().cloned());
        }
        for e in &t.checks {
            walk::expr_columns(e, &mut used);
        }
    }
    let mut out = Vec::new();
    for t in &case.schema.tables {
        let free: Vec<_> = t
            .columns
            .iter()
            .filter(|c| !used.contains(&c.name))
            .collect();
        for c in free.iter().take(t.columns.len().saturating_sub(1)) {
            out.push((t.name.clone(), c.name.clone()));
        }
    }
    out
}

/// Removes unreferenced columns (from the table, its rows and the INSERTs into it).
pub fn remove_columns(case: &TestCase, cols: &[(String, String)]) -> Option<TestCase> {
    let mut c = case.clone();
    let mut changed = false;
    for (table, col) in cols {
        let Some(t) = c.schema.tables.iter_mut().find(|t| &t.name == table) else {
            continue;
        };
        let Some(pos) = t.columns.iter().position(|x| &x.name == col) else {
            continue;
        };
        if t.columns.len() < 2 {
            continue;
        }
        t.columns.remove(pos);
        changed = true;
        for d in c.data.iter_mut().filter(|d| &d.table == table) {
            for r in &mut d.rows {
                if pos < r.values.len() {
                    r.values.remove(pos);
                }
            }
        }
        for s in c.txns.iter_mut().flat_map(|t| t.stmts.iter_mut()) {
            if let Stmt::Insert(ins) = &mut s.stmt {
                if &ins.table != table {
                    continue;
                }
                if let Some(i) = ins.columns.iter().position(|x| x == col) {
                    ins.columns.remove(i);
                    for row in &mut ins.rows {
                        if i < row.len() {
                            row.remove(i);
                        }
                    }
                    if let Some(q) = &mut ins.select {
                        if i < q.items.len() {
                            q.items.remove(i);
                        }
                    }
                }
            }
        }
    }
    changed.then_some(c)
}

/// Secondary schema objects as `(table, kind, index)`: kind 0 index, 1 unique,
/// 2 check, 3 foreign key.
pub fn constraints(case: &TestCase) -> Vec<(String, u8, usize)> {
    let mut out = Vec::new();
    for t in &case.schema.tables {
        let n = |k: u8, len: usize| (0..len).map(move |i| (t.name.clone(), k, i));
        out.extend(n(0, t.indexes.len()));
        out.extend(n(1, t.uniques.len()));
        out.extend(n(2, t.checks.len()));
        out.extend(n(3, t.foreign_keys.len()));
    }
    out
}

pub fn remove_constraints(case: &TestCase, items: &[(String, u8, usize)]) -> Option<TestCase> {
    if items.is_empty() {
        return None;
    }
    let mut c = case.clone();
    for t in &mut c.schema.tables {
        let gone = |k: u8, i: usize| {
            items
                .iter()
                .any(|(n, kk, ii)| *n == t.name && *kk == k && *ii == i)
        };
        let keep = |k: u8, len: usize| (0..len).map(|i| !gone(k, i)).collect::<Vec<_>>();
        let (ki, ku, kc, kf) = (
            keep(0, t.indexes.len()),
            keep(1, t.uniques.len()),
            keep(2, t.checks.len()),
            keep(3, t.foreign_keys.len()),
        );
        let mut it = ki.iter();
        t.indexes.retain(|_| *it.next().unwrap_or(&true));
        let mut it = ku.iter();
        t.uniques.retain(|_| *it.next().unwrap_or(&true));
        let mut it = kc.iter();
        t.checks.retain(|_| *it.next().unwrap_or(&true));
        let mut it = kf.iter();
        t.foreign_keys.retain(|_| *it.next().unwrap_or(&true));
    }
    Some(c)
}
