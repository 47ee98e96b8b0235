//! Walks over the statement IR: which tables and columns a statement mentions.

use crate::model::{Expr, Insert, OnConflict, Schema, Select, Stmt};
use std::collections::BTreeSet;

/// Every table a statement mentions (FROM items, subqueries, targets).
pub fn tables(stmt: &Stmt) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match stmt {
        Stmt::Select(s) => select_tables(s, &mut out),
        Stmt::Insert(Insert {
            select: Some(q), ..
        }) => select_tables(q, &mut out),
        _ => {}
    }
    if !matches!(stmt, Stmt::Select(_)) {
        out.extend(outer_tables(stmt)); // the write's target
    }
    for e in write_exprs(stmt) {
        expr_tables(e, &mut out);
    }
    out
}

/// The expressions of a write: an INSERT's VALUES rows and upsert arm, an
/// UPDATE's assignments and WHERE, a DELETE's WHERE (not an `INSERT ...
/// SELECT`'s query; nothing for a SELECT).
fn write_exprs(stmt: &Stmt) -> Vec<&Expr> {
    let mut exprs: Vec<&Expr> = Vec::new();
    match stmt {
        Stmt::Insert(i) => {
            exprs.extend(i.rows.iter().flatten());
            if let OnConflict::Update { assignments, .. } = &i.on_conflict {
                exprs.extend(assignments.iter().map(|a| &a.value));
            }
        }
        Stmt::Update(u) => {
            exprs.extend(u.assignments.iter().map(|a| &a.value));
            exprs.extend(u.where_.iter());
        }
        Stmt::Delete(d) => exprs.extend(d.where_.iter()),
        _ => {}
    }
    exprs
}

/// Tables linked to one of `tables` by a foreign key, either way (one step).
pub fn fk_linked(tables: &BTreeSet<String>, schema: &Schema) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in &schema.tables {
        for fk in &t.foreign_keys {
            if tables.contains(&t.name) {
                out.insert(fk.ref_table.clone());
            }
            if tables.contains(&fk.ref_table) {
                out.insert(t.name.clone());
            }
        }
    }
    out
}

/// `tables` (what write `stmt` mentions), the tables its foreign-key actions
/// may write ([`cascade_targets`]), and every table linked to those by a
/// foreign key (checks read them: a RESTRICT below a CASCADE too).
pub fn fk_reach(stmt: &Stmt, tables: &BTreeSet<String>, schema: &Schema) -> BTreeSet<String> {
    let mut all = tables.clone();
    all.extend(cascade_targets(stmt, schema));
    let linked = fk_linked(&all, schema);
    all.extend(linked);
    all
}

/// The tables whose rows `stmt` may write through foreign-key actions
/// (`ON DELETE` / `ON UPDATE` `CASCADE` or `SET NULL`), transitively: rows
/// no statement of the case reports writing. A DELETE, a REPLACE (it deletes
/// the rows it conflicts with) and an UPDATE or upsert arm that assigns a
/// referenced column change parent rows.
pub fn cascade_targets(stmt: &Stmt, schema: &Schema) -> BTreeSet<String> {
    let (table, delete, assigned): (&str, bool, Vec<String>) = match stmt {
        Stmt::Delete(d) => (&d.table, true, Vec::new()),
        Stmt::Update(u) => (
            &u.table,
            false,
            u.assignments.iter().map(|a| a.column.clone()).collect(),
        ),
        Stmt::Insert(i) => match &i.on_conflict {
            OnConflict::Replace => (&i.table, true, Vec::new()),
            OnConflict::Update { assignments, .. } => (
                &i.table,
                false,
                assignments.iter().map(|a| a.column.clone()).collect(),
            ),
            _ => return BTreeSet::new(),
        },
        _ => return BTreeSet::new(),
    };
    let mut out = BTreeSet::new();
    let mut work = vec![(table.to_string(), delete, assigned)];
    while let Some((parent, delete, assigned)) = work.pop() {
        for t in &schema.tables {
            for fk in t.foreign_keys.iter().filter(|fk| fk.ref_table == parent) {
                if fk.writes_children(delete, &assigned) && out.insert(t.name.clone()) {
                    // The children's own children: deleted rows, or changed
                    // key columns (any column may be referenced).
                    let cols = t.columns.iter().map(|c| c.name.clone()).collect();
                    work.push((t.name.clone(), true, cols));
                }
            }
        }
    }
    out
}

/// The tables a statement reads or writes outside its subqueries: the FROM
/// items of a SELECT, the target of a write.
pub fn outer_tables(stmt: &Stmt) -> BTreeSet<String> {
    match stmt {
        Stmt::Select(s) => s.from.iter().map(|f| f.table.clone()).collect(),
        Stmt::Insert(i) => BTreeSet::from([i.table.clone()]),
        Stmt::Update(u) => BTreeSet::from([u.table.clone()]),
        Stmt::Delete(d) => BTreeSet::from([d.table.clone()]),
        _ => BTreeSet::new(),
    }
}

/// The tables a statement mentions inside its subqueries (at any depth).
/// The query of an `INSERT ... SELECT` counts as a subquery of the write.
pub fn subquery_tables(stmt: &Stmt) -> BTreeSet<String> {
    let mut inner = BTreeSet::new();
    let mut exprs = write_exprs(stmt);
    match stmt {
        Stmt::Select(s) => exprs.extend(select_exprs(s)),
        Stmt::Insert(Insert {
            select: Some(q), ..
        }) => select_tables(q, &mut inner),
        _ => {}
    }
    for e in exprs {
        expr_tables(e, &mut inner);
    }
    inner
}

fn select_tables(s: &Select, out: &mut BTreeSet<String>) {
    for f in &s.from {
        out.insert(f.table.clone());
        if let Some(j) = &f.join {
            expr_tables(&j.on, out);
        }
    }
    for e in select_exprs(s) {
        expr_tables(e, out);
    }
}

fn select_exprs(s: &Select) -> Vec<&Expr> {
    let mut v: Vec<&Expr> = s.items.iter().map(|i| &i.expr).collect();
    v.extend(s.where_.iter());
    v.extend(s.group_by.iter());
    v.extend(s.order_by.iter().map(|o| &o.expr));
    v.extend(s.from.iter().filter_map(|f| f.join.as_ref().map(|j| &j.on)));
    v
}

fn expr_tables(e: &Expr, out: &mut BTreeSet<String>) {
    visit(e, &mut |x| match x {
        Expr::InSubquery { query, .. } | Expr::Exists { query, .. } => select_tables(query, out),
        _ => {}
    });
}

/// Every column name a statement mentions in an expression, a SET target or an
/// upsert target. The column list of an INSERT does not count (removing a
/// column removes it from INSERTs).
pub fn columns(stmt: &Stmt) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match stmt {
        Stmt::Select(s) => select_columns(s, &mut out),
        Stmt::Insert(i) => {
            if let Some(q) = &i.select {
                select_columns(q, &mut out);
            }
            i.rows
                .iter()
                .flatten()
                .for_each(|e| expr_columns(e, &mut out));
            if let OnConflict::Update {
                target,
                assignments,
            } = &i.on_conflict
            {
                out.extend(target.iter().cloned());
                for a in assignments {
                    out.insert(a.column.clone());
                    expr_columns(&a.value, &mut out);
                }
            }
        }
        Stmt::Update(u) => {
            for a in &u.assignments {
                out.insert(a.column.clone());
                expr_columns(&a.value, &mut out);
            }
            u.where_.iter().for_each(|e| expr_columns(e, &mut out));
        }
        Stmt::Delete(d) => d.where_.iter().for_each(|e| expr_columns(e, &mut out)),
        _ => {}
    }
    out
}

/// The output names (`AS alias`) of every select list of a statement,
/// subqueries included (an ORDER BY may name them).
pub fn aliases(stmt: &Stmt) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match stmt {
        Stmt::Select(s) => select_aliases(s, &mut out),
        Stmt::Insert(Insert {
            select: Some(q), ..
        }) => select_aliases(q, &mut out),
        _ => {}
    }
    for e in write_exprs(stmt) {
        subquery_aliases(e, &mut out);
    }
    out
}

fn select_aliases(s: &Select, out: &mut BTreeSet<String>) {
    out.extend(s.items.iter().filter_map(|i| i.alias.clone()));
    for e in select_exprs(s) {
        subquery_aliases(e, out);
    }
}

fn subquery_aliases(e: &Expr, out: &mut BTreeSet<String>) {
    visit(e, &mut |x| {
        if let Expr::InSubquery { query, .. } | Expr::Exists { query, .. } = x {
            select_aliases(query, out)
        }
    });
}

fn select_columns(s: &Select, out: &mut BTreeSet<String>) {
    for e in select_exprs(s) {
        expr_columns(e, out);
    }
}

/// Every column reference of a SELECT, subqueries included: its qualifier
/// (a table name or alias; `None` when bare) and its name.
pub fn column_refs(s: &Select) -> Vec<(Option<String>, String)> {
    fn refs(s: &Select, out: &mut Vec<(Option<String>, String)>) {
        for e in select_exprs(s) {
            visit(e, &mut |x| match x {
                Expr::Col { table, name } => out.push((table.clone(), name.clone())),
                Expr::InSubquery { query, .. } | Expr::Exists { query, .. } => refs(query, out),
                _ => {}
            });
        }
    }
    let mut out = Vec::new();
    refs(s, &mut out);
    out
}

/// Column names in an expression, subqueries included.
pub fn expr_columns(e: &Expr, out: &mut BTreeSet<String>) {
    visit(e, &mut |x| match x {
        Expr::Col { name, .. } | Expr::Excluded(name) => {
            out.insert(name.clone());
        }
        Expr::InSubquery { query, .. } | Expr::Exists { query, .. } => select_columns(query, out),
        _ => {}
    });
}

/// Calls `f` on `e` and every sub-expression (not descending into subqueries).
fn visit(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match e {
        Expr::Col { .. } | Expr::Lit(_) | Expr::Excluded(_) | Expr::Exists { .. } => {}
        Expr::Bin { left, right, .. } | Expr::Concat(left, right) | Expr::Coalesce(left, right) => {
            visit(left, f);
            visit(right, f);
        }
        Expr::Not(x) => visit(x, f),
        Expr::IsNull { expr, .. } | Expr::InSubquery { expr, .. } => visit(expr, f),
        Expr::InList { expr, list, .. } => {
            visit(expr, f);
            list.iter().for_each(|x| visit(x, f));
        }
        Expr::Between { expr, low, high } => {
            visit(expr, f);
            visit(low, f);
            visit(high, f);
        }
        Expr::Agg { arg, .. } => {
            if let Some(a) = arg {
                visit(a, f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;

    #[test]
    fn tables_and_columns_of_kv_statements() {
        let s = testkit::add("t", 1, 5);
        assert_eq!(tables(&s).into_iter().collect::<Vec<_>>(), vec!["t"]);
        assert_eq!(
            columns(&s).into_iter().collect::<Vec<_>>(),
            vec!["k".to_string(), "v".to_string()]
        );
        let sel = testkit::select("t", None);
        assert!(columns(&sel).contains("v"));
        assert!(tables(&Stmt::begin()).is_empty());
    }

    #[test]
    fn cascade_targets_follow_actions_transitively() {
        use crate::model::{FkAction, ForeignKey, Insert, OnConflict};
        use crate::testkit::constraints::*;
        let mut schema = Schema {
            tables: vec![parent_table(), child_table(), child_table()],
        };
        schema.tables[1].foreign_keys[0].on_delete = FkAction::Cascade;
        // g: a grandchild of p through c, SET NULL on delete.
        schema.tables[2].name = "g".into();
        schema.tables[2].foreign_keys = vec![ForeignKey {
            columns: vec!["pk".into()],
            ref_table: "c".into(),
            ref_columns: vec!["k".into()],
            on_delete: FkAction::SetNull,
            ..ForeignKey::default()
        }];
        let names = |s: &Stmt| cascade_targets(s, &schema).into_iter().collect::<Vec<_>>();
        assert_eq!(names(&delete_parent(1)), ["c", "g"]);
        // ON UPDATE is NO ACTION: a key UPDATE writes no child.
        let rekey = testkit::rekey("p", 1, 2);
        assert!(names(&rekey).is_empty());
        schema.tables[1].foreign_keys[0].on_update = FkAction::Cascade;
        let names = |s: &Stmt| cascade_targets(s, &schema).into_iter().collect::<Vec<_>>();
        assert_eq!(names(&rekey), ["c", "g"]);
        // An UPDATE of a column no key references writes no child.
        assert!(names(&testkit::set("p", 1, 5)).is_empty());
        // REPLACE deletes the rows it conflicts with; a plain INSERT writes
        // no child; an upsert arm that assigns the key acts like an UPDATE.
        let Stmt::Insert(plain) = insert_parent(9, 3, 30) else {
            unreachable!()
        };
        assert!(names(&Stmt::Insert(plain.clone())).is_empty());
        let replace = Insert {
            on_conflict: OnConflict::Replace,
            ..plain.clone()
        };
        assert_eq!(names(&Stmt::Insert(replace)), ["c", "g"]);
        let Stmt::Update(u) = rekey else {
            unreachable!()
        };
        let upsert = Insert {
            on_conflict: OnConflict::Update {
                target: vec!["k".into()],
                assignments: u.assignments,
            },
            ..plain
        };
        assert_eq!(names(&Stmt::Insert(upsert)), ["c", "g"]);
        assert!(names(&testkit::select("p", None)).is_empty());
    }
}
