//! One-step simplifications of a statement: predicates (drop the WHERE, keep one
//! side of AND/OR, drop a NOT), select items, ORDER BY/LIMIT/DISTINCT, locking
//! clauses, assignments, multi-row INSERT rows and upsert assignments. Each
//! alternative is smaller than the original; the reducer keeps one only when
//! the finding still reproduces.

use crate::model::{BinOp, Expr, Insert, OnConflict, Select, Stmt};

/// Alternatives to `stmt`, each one step simpler.
pub fn simplifications(stmt: &Stmt) -> Vec<Stmt> {
    let mut out = Vec::new();
    match stmt {
        Stmt::Select(s) => select_simplifications(s, &mut out),
        Stmt::Update(u) => {
            for w in where_alternatives(&u.where_) {
                let mut x = u.clone();
                x.where_ = w;
                out.push(Stmt::Update(x));
            }
            if u.assignments.len() > 1 {
                for i in 0..u.assignments.len() {
                    let mut x = u.clone();
                    x.assignments.remove(i);
                    out.push(Stmt::Update(x));
                }
            }
        }
        Stmt::Delete(d) => {
            for w in where_alternatives(&d.where_) {
                let mut x = d.clone();
                x.where_ = w;
                out.push(Stmt::Delete(x));
            }
        }
        Stmt::Insert(i) => insert_simplifications(i, &mut out),
        _ => {}
    }
    out
}

/// A SELECT's alternatives: each smaller WHERE, one item fewer, no ORDER
/// BY/LIMIT/DISTINCT, no locking clause.
fn select_simplifications(s: &Select, out: &mut Vec<Stmt>) {
    for w in where_alternatives(&s.where_) {
        let mut x = s.clone();
        x.where_ = w;
        out.push(Stmt::Select(x));
    }
    if s.items.len() > 1 {
        for i in 0..s.items.len() {
            let mut x = s.clone();
            x.items.remove(i);
            out.push(Stmt::Select(x));
        }
    }
    let mut x = s.clone();
    x.order_by.clear();
    x.limit = None;
    x.distinct = false;
    if x != *s {
        out.push(Stmt::Select(x));
    }
    if s.lock.is_some() {
        let mut x = s.clone();
        x.lock = None;
        out.push(Stmt::Select(x));
    }
}

/// An INSERT's alternatives: a smaller WHERE of its query, one row fewer,
/// one upsert assignment fewer.
fn insert_simplifications(i: &Insert, out: &mut Vec<Stmt>) {
    // The query of an INSERT ... SELECT: each smaller WHERE (its items stay,
    // one per column, and so does the LIMIT that keeps it to one row).
    if let Some(q) = &i.select {
        for w in where_alternatives(&q.where_) {
            let mut x = i.clone();
            x.select = Some(Box::new(Select {
                where_: w,
                ..(**q).clone()
            }));
            out.push(Stmt::Insert(x));
        }
    }
    if i.rows.len() > 1 {
        for r in 0..i.rows.len() {
            let mut x = i.clone();
            x.rows.remove(r);
            if r < x.rids.len() {
                x.rids.remove(r);
            }
            out.push(Stmt::Insert(x));
        }
    }
    if let OnConflict::Update {
        target,
        assignments,
    } = &i.on_conflict
    {
        if assignments.len() > 1 {
            for a in 0..assignments.len() {
                let mut x = i.clone();
                let mut asg = assignments.clone();
                asg.remove(a);
                x.on_conflict = OnConflict::Update {
                    target: target.clone(),
                    assignments: asg,
                };
                out.push(Stmt::Insert(x));
            }
        }
    }
}

/// No WHERE at all, then every one-step smaller predicate.
fn where_alternatives(w: &Option<Expr>) -> Vec<Option<Expr>> {
    let Some(e) = w else { return Vec::new() };
    let mut out = vec![None];
    out.extend(shrink(e).into_iter().map(Some));
    out
}

/// One-step smaller versions of a predicate: one side of AND/OR (recursively
/// inside AND/OR), the operand of NOT.
pub fn shrink(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Bin {
            op: op @ (BinOp::And | BinOp::Or),
            left,
            right,
        } => {
            let mut out = vec![(**left).clone(), (**right).clone()];
            for l in shrink(left) {
                out.push(Expr::bin(*op, l, (**right).clone()));
            }
            for r in shrink(right) {
                out.push(Expr::bin(*op, (**left).clone(), r));
            }
            out
        }
        Expr::Not(x) => vec![(**x).clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Value;

    #[test]
    fn and_or_not_shrink_to_their_parts() {
        let a = Expr::eq(Expr::col("k"), Expr::Lit(Value::Int(1)));
        let b = Expr::eq(Expr::col("v"), Expr::Lit(Value::Int(2)));
        let c = Expr::Not(Box::new(a.clone()));
        let e = Expr::and(c.clone(), Expr::bin(BinOp::Or, a.clone(), b.clone()));
        let s = shrink(&e);
        assert!(s.contains(&c));
        assert!(s.contains(&Expr::and(
            a.clone(),
            Expr::bin(BinOp::Or, a.clone(), b.clone())
        )));
        assert!(s.contains(&Expr::and(c.clone(), b.clone())));
        assert!(shrink(&a).is_empty());
    }

    #[test]
    fn kv_update_can_drop_its_where() {
        let u = crate::testkit::add("t", 1, 1);
        let alts = simplifications(&u);
        assert_eq!(alts.len(), 1);
        let Stmt::Update(x) = &alts[0] else { panic!() };
        assert!(x.where_.is_none());
    }
}
