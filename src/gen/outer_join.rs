//! Subqueries on the null side of a LEFT JOIN, drawn from a random stream
//! of their own, so the rest of a case is the one the same seed and index
//! gave before.
//!
//! A LEFT JOIN whose ON condition restricts the outer row null-extends the
//! others; a correlated subquery on the joined table's key then meets a row
//! that has no record. turso panics there ("index cursor should have a
//! record", known issue `turso-left-join-index-cursor-panic`), which the
//! generator's own joins and subqueries met in no seed of 3 within 2
//! minutes (BENCHMARKS.md, "turso and turso MVCC").

use super::expr::SUB_ALIAS;
use super::moves::int_key;
use super::Gen;
use crate::model::{Expr, FromItem, Join, JoinKind, Select, Stmt, Txn, Value};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x4f55_5445_525f_4a4e; // "OUTER_JN"

/// Where the engine's profile asks for them
/// ([`crate::model::Features::null_side_subqueries`]), one case in eight
/// with a table of a one-column integer primary key, another column and two
/// rows at generation has one of its plain SELECTs (no cursor, no locking
/// clause) replaced by `SELECT a1.c FROM t AS a0 LEFT JOIN t AS a1 ON (a0.c
/// = a1.c AND a0.pk = x) WHERE EXISTS (SELECT sq.pk FROM t AS sq WHERE
/// sq.pk = a1.pk)`, `x` a row's key: every other outer row is null-extended.
pub(super) fn draw_outer_joins(g: &Gen, seed: u64, index: u64, txns: &mut [Txn]) {
    if !g.cfg.features.null_side_subqueries {
        return;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    if !rng.chance(1, 8) {
        return;
    }
    let tables: Vec<(usize, usize)> = (0..g.schema.tables.len())
        .filter_map(|t| Some((t, int_key(g, t)?)))
        .filter(|&(t, _)| g.schema.tables[t].columns.len() > 1 && g.known[t].len() >= 2)
        .collect();
    let Some(&(t, key)) = rng.try_pick(&tables) else {
        return;
    };
    let selects: Vec<(usize, usize)> = txns
        .iter()
        .enumerate()
        .flat_map(|(i, txn)| {
            txn.stmts.iter().enumerate().filter_map(move |(j, s)| {
                matches!(&s.stmt, Stmt::Select(q) if q.cursor.is_none() && q.lock.is_none())
                    .then_some((i, j))
            })
        })
        .collect();
    let Some(&(i, j)) = rng.try_pick(&selects) else {
        return;
    };
    let Some(Value::Int(x)) = rng.try_pick(&g.known[t]).and_then(|r| r.get(key).cloned()) else {
        return;
    };
    let columns = &g.schema.tables[t].columns;
    let others: Vec<usize> = (0..columns.len()).filter(|&c| c != key).collect();
    let c = &columns[*rng.pick(&others)].name;
    let pk = &columns[key].name;
    let table = g.table_name(t);
    let mut sub = Select::plain(&table, SUB_ALIAS, vec![Expr::qcol(SUB_ALIAS, pk)]);
    sub.where_ = Some(Expr::eq(Expr::qcol(SUB_ALIAS, pk), Expr::qcol("a1", pk)));
    let mut read = Select::plain(&table, "a0", vec![Expr::qcol("a1", c)]);
    read.from.push(FromItem {
        table: table.clone(),
        alias: "a1".into(),
        join: Some(Join {
            kind: JoinKind::Left,
            on: Expr::and(
                Expr::eq(Expr::qcol("a0", c), Expr::qcol("a1", c)),
                Expr::eq(Expr::qcol("a0", pk), Expr::lit(Value::Int(x))),
            ),
        }),
    });
    read.where_ = Some(Expr::Exists {
        query: Box::new(sub),
        negated: false,
    });
    txns[i].stmts[j].stmt = Stmt::Select(read);
}
