//! Locking reads that wait for a writer of the rows their subquery reads,
//! drawn from a random stream of their own, so the rest of a case is the
//! one the same seed and index gave before.
//!
//! An autocommit `SELECT ... FOR UPDATE` at SERIALIZABLE that waits for a
//! row lock reads its outer rows current after the wait, but InnoDB
//! evaluates its subquery in the read view it took before the wait (known
//! issue `innodb-locking-read-subquery-read-view`). A row the lock's holder
//! changed then meets a subquery that does not see the change: with
//! `a.c IN (SELECT sq.c FROM t AS sq WHERE sq.c = a.c)` and a new value of
//! `c` no row held before, the row drops out of a result that every serial
//! order keeps. Subqueries added to locking reads at random (`gen::locking`)
//! found that class in 1 of 5 seeds within about 2,000 cases (BENCHMARKS.md,
//! "Key moves behind a locked row").

use super::expr::SUB_ALIAS;
use super::moves::{commit_of, int_key, replaceable, stmt_at, stmt_at_mut};
use super::phantom::fresh_value;
use super::Gen;
use crate::model::{
    Assignment, Expr, Isolation, LockMode, Select, Stmt, StmtRef, Txn, Update, Value,
};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x5355_425f_5649_4557; // "SUB_VIEW"

/// Where the engine's profile asks for them
/// ([`crate::model::Features::subquery_read_views`]), one case in two
/// whose submit order allows it gets the shape, on a table with a
/// one-column integer primary key, another column `c` and a row `x` at
/// generation: an explicit read-write transaction A that commits, and an
/// autocommit transaction B at SERIALIZABLE with a data statement submitted
/// after a data statement of A and before A's COMMIT. That statement of A
/// becomes `UPDATE t SET c = w WHERE pk = x`, `w` a value no row held in
/// `c` at generation, and B's becomes `SELECT <every column> FROM t AS a0
/// WHERE a0.c IN (SELECT sq.c FROM t AS sq WHERE sq.c = a0.c) FOR UPDATE`
/// (one time in three `LOCK IN SHARE MODE`): it waits at row `x` for A.
pub(super) fn draw_subquery_views(
    g: &Gen,
    seed: u64,
    index: u64,
    isolation: Isolation,
    order: &[StmtRef],
    txns: &mut [Txn],
) {
    if !g.cfg.features.subquery_read_views {
        return;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    if !rng.chance(1, 2) {
        return;
    }
    let shapes = shapes(isolation, order, txns);
    let Some(&shape) = rng.try_pick(&shapes) else {
        return;
    };
    // A table, a non-key column and a value of it that no row holds.
    let mut targets = Vec::new();
    for t in 0..g.schema.tables.len() {
        let Some(key) = int_key(g, t) else { continue };
        if g.known[t].is_empty() {
            continue;
        }
        for c in (0..g.schema.tables[t].columns.len()).filter(|&c| c != key) {
            let held: Vec<Value> = g.known[t]
                .iter()
                .filter_map(|r| r.get(c).cloned())
                .collect();
            if let Some(w) = fresh_value(&mut rng, g.col_type(t, c), &held) {
                targets.push((t, key, c, w));
            }
        }
    }
    let Some((t, key, c, w)) = rng.try_pick(&targets).cloned() else {
        return;
    };
    let Some(Value::Int(x)) = rng.try_pick(&g.known[t]).and_then(|r| r.get(key).cloned()) else {
        return;
    };
    let table = g.table_name(t);
    let columns = &g.schema.tables[t].columns;
    let (pk, col) = (columns[key].name.clone(), columns[c].name.clone());
    let write = Stmt::Update(Update {
        table: table.clone(),
        assignments: vec![Assignment {
            column: col.clone(),
            value: Expr::lit(w),
        }],
        where_: Some(Expr::eq(Expr::col(&pk), Expr::lit(Value::Int(x)))),
    });
    let mut sub = Select::plain(&table, SUB_ALIAS, vec![Expr::qcol(SUB_ALIAS, &col)]);
    sub.where_ = Some(Expr::eq(
        Expr::qcol(SUB_ALIAS, &col),
        Expr::qcol("a0", &col),
    ));
    let items = columns.iter().map(|c| Expr::qcol("a0", &c.name)).collect();
    let mut read = Select::plain(&table, "a0", items);
    read.where_ = Some(Expr::InSubquery {
        expr: Box::new(Expr::qcol("a0", &col)),
        query: Box::new(sub),
        negated: false,
    });
    read.lock = Some(if rng.chance(1, 3) {
        LockMode::ForShare
    } else {
        LockMode::ForUpdate
    });
    if let Some(s) = stmt_at_mut(txns, shape.write) {
        *s = write;
    }
    if let Some(s) = stmt_at_mut(txns, shape.read) {
        *s = Stmt::Select(read);
    }
}

/// The statements of one shape: A's write and B's locking read.
#[derive(Clone, Copy, Debug)]
struct Shape {
    write: StmtRef,
    read: StmtRef,
}

/// Every shape the submit order allows: B at SERIALIZABLE, its statement
/// between A's and A's COMMIT.
fn shapes(isolation: Isolation, order: &[StmtRef], txns: &[Txn]) -> Vec<Shape> {
    let pos = |r: StmtRef| order.iter().position(|x| *x == r);
    let data = |r: &StmtRef| stmt_at(txns, *r).is_some_and(replaceable);
    let mut out = Vec::new();
    for a in txns
        .iter()
        .filter(|t| !t.autocommit && !t.begin().read_only)
    {
        let Some(commit) = commit_of(a).and_then(pos) else {
            continue;
        };
        let of = |id: u32| order.iter().filter(move |r| r.txn == id && data(r));
        for b in txns.iter().filter(|t| t.autocommit && t.id != a.id) {
            if b.isolation.unwrap_or(isolation) != Isolation::Serializable {
                continue;
            }
            for &read in of(b.id) {
                let Some(at) = pos(read).filter(|&p| p < commit) else {
                    continue;
                };
                let writes = of(a.id).filter(|w| pos(**w).is_some_and(|p| p < at));
                out.extend(writes.map(|&write| Shape { write, read }));
            }
        }
    }
    out
}
