//! Subqueries in locking reads, drawn from a random stream of their own, so
//! the rest of a case is the one the same seed and index gave before.
//!
//! InnoDB does not lock the rows of a locking read's subquery, nor read them
//! current: a `SELECT ... FOR UPDATE` that waited for a lock reads its outer
//! rows current but evaluates its subquery in an earlier read view (known
//! issue `innodb-locking-read-subquery-read-view`). Left to chance, a
//! locking read has a subquery about one time in ten, and that class was
//! found in 0 of 5 seeds within 4 minutes (BENCHMARKS.md, "Detection speed").

use super::expr::{Binding, Ctx, SUB_ALIAS};
use super::Gen;
use crate::model::{Expr, JoinKind, LockMode, Select, Stmt, Txn};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x4c4f_434b_5f53_5542; // "LOCK_SUB"

/// Where the engine's profile asks for them
/// ([`crate::model::Features::subquery_locking_reads`]), each locking read
/// without a subquery, and each autocommit SELECT that may lock, gets one
/// time in two a subquery conjunct over its own table, correlated on one of
/// its columns (`add_subquery`): the shape of that class, where the row
/// lock the read waits for belongs to a writer of the rows the subquery
/// reads.
pub(super) fn draw_subqueries(g: &mut Gen, seed: u64, index: u64, txns: &mut [Txn]) {
    if !g.cfg.features.subquery_locking_reads {
        return;
    }
    let written = written_columns(g, txns);
    let mut stream = Rng::new(seed ^ STREAM, index);
    std::mem::swap(&mut g.rng, &mut stream);
    for t in txns.iter_mut() {
        let autocommit = t.autocommit;
        for s in t.stmts.iter_mut() {
            let Stmt::Select(sel) = &mut s.stmt else {
                continue;
            };
            add_subquery(g, sel, autocommit, &written);
        }
    }
    std::mem::swap(&mut g.rng, &mut stream);
}

/// Whether `sel` may take a locking clause (the generator's rules: no
/// aggregate, DISTINCT, GROUP BY or LEFT JOIN, and no cursor).
fn may_lock(sel: &Select) -> bool {
    !sel.distinct
        && sel.group_by.is_empty()
        && sel.cursor.is_none()
        && !sel.items.iter().any(|i| i.expr.has_aggregate())
        && !sel
            .from
            .iter()
            .any(|f| matches!(&f.join, Some(j) if j.kind == JoinKind::Left))
}

/// One time in two, a locking read without a subquery gets one; so does an
/// autocommit SELECT that may lock, which also takes a locking clause (in
/// a transaction at SERIALIZABLE, InnoDB reads a locking read's subquery
/// with shared locks, so the class lives in autocommit reads).
fn add_subquery(g: &mut Gen, sel: &mut Select, autocommit: bool, written: &[Vec<usize>]) {
    let has_subquery = sel.where_.as_ref().is_some_and(Expr::has_subquery);
    let eligible = sel.lock.is_some() || (autocommit && may_lock(sel));
    if !eligible || sel.cursor.is_some() || has_subquery || !g.rng.chance(1, 2) {
        return;
    }
    if sel.lock.is_none() {
        sel.lock = Some(if g.rng.chance(1, 2) {
            LockMode::ForUpdate
        } else {
            LockMode::ForShare
        });
    }
    let scope: Vec<Binding> = sel
        .from
        .iter()
        .filter_map(|f| {
            let t = g.schema.tables.iter().position(|t| t.name == f.table)?;
            Some(Binding::new(t, Some(&f.alias)))
        })
        .collect();
    // Every FROM table is in the schema: the scope is never empty.
    let Some(b) = g.rng.try_pick(&scope).cloned() else {
        return;
    };
    // Correlated, three times in four, on a column an UPDATE of the case
    // writes: the read's wait is then for a writer of what its subquery
    // compares.
    let c = match written[b.table].as_slice() {
        [] => g.rng.below(g.ncols(b.table) as u64) as usize,
        cols if g.rng.chance(3, 4) => *g.rng.pick(cols),
        _ => g.rng.below(g.ncols(b.table) as u64) as usize,
    };
    let p = self_subquery(g, &b, c);
    sel.where_ = Some(match sel.where_.take() {
        Some(w) => Expr::and(w, p),
        None => p,
    });
}

/// `b.c [NOT] IN (SELECT sq.c FROM t AS sq WHERE sq.c = b.c [AND p])` or
/// `[NOT] EXISTS (...)` of the same, with `p` a predicate over `sq`.
fn self_subquery(g: &mut Gen, b: &Binding, c: usize) -> Expr {
    let inner = [Binding::new(b.table, Some(SUB_ALIAS))];
    let corr = Expr::eq(g.colref(&inner[0], c), g.colref(b, c));
    let where_ = if g.rng.chance(1, 2) {
        let ctx = Ctx {
            depth: 1,
            subqueries: false,
            ..Ctx::new(&inner)
        };
        Expr::and(corr, g.predicate(ctx))
    } else {
        corr
    };
    let query = Box::new(g.subquery_of(b.table, c, Some(where_)));
    let negated = g.rng.chance(1, 4);
    if g.rng.chance(1, 2) {
        Expr::Exists { query, negated }
    } else {
        Expr::InSubquery {
            expr: Box::new(g.colref(b, c)),
            query,
            negated,
        }
    }
}

/// Per table of the schema, the columns some UPDATE of `txns` assigns.
fn written_columns(g: &Gen, txns: &[Txn]) -> Vec<Vec<usize>> {
    let mut written = vec![Vec::new(); g.schema.tables.len()];
    for s in txns.iter().flat_map(|t| &t.stmts) {
        let Stmt::Update(u) = &s.stmt else { continue };
        let Some(t) = g.schema.tables.iter().position(|x| x.name == u.table) else {
            continue;
        };
        for a in &u.assignments {
            let columns = &g.schema.tables[t].columns;
            if let Some(c) = columns.iter().position(|c| c.name == a.column) {
                if !written[t].contains(&c) {
                    written[t].push(c);
                }
            }
        }
    }
    written
}
