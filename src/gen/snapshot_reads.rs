//! Locking reads through a secondary index after a wait, under
//! `innodb_snapshot_isolation=ON`, drawn from a random stream of their own,
//! so the rest of a case is the one the same seed and index gave before.
//!
//! With the variable ON, a locking read at REPEATABLE READ or SERIALIZABLE
//! of a record changed since its read view must fail (1020). Through a
//! covering secondary index, a read that waited for the change returns the
//! new version once its writer commits (known issue
//! `mariadb-snapshot-isolation-locking-read-through-secondary-index-after-wait`),
//! which `--setting innodb_snapshot_isolation=ON,OFF` campaigns met in no
//! seed of 3 within 2 minutes (BENCHMARKS.md, "mariadb-si with both
//! draws").

use super::moves::{commit_of, int_key, replaceable, stmt_at, stmt_at_mut};
use super::phantom::fresh_value;
use super::Gen;
use crate::model::{
    setting_is_on, setting_value, Assignment, Expr, Isolation, LockMode, Select, Settings, Stmt,
    StmtRef, Txn, Update, Value,
};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x5349_5f49_4e44_4558; // "SI_INDEX"

/// The session setting the shape needs ON.
const SETTING: &str = "innodb_snapshot_isolation";

/// Where the engine's profile asks for them
/// ([`crate::model::Features::snapshot_index_reads`]), one case in two gets
/// the shape where its submit order allows it, on a table with a one-column
/// integer primary key, a row `x` at generation and a secondary index over
/// a column `c` that is not the key: a transaction A at REPEATABLE READ or
/// SERIALIZABLE, not READ ONLY, whose session runs with
/// `innodb_snapshot_isolation=ON` (its own value, else the server's), and an
/// explicit read-write transaction B that commits, with a data statement of
/// A before one of B, and a later one of A before B's COMMIT. A's first
/// becomes a plain read of the table (its read view), B's `UPDATE t SET c =
/// w WHERE pk = x` (`w` a value the row does not hold), and A's later one
/// `SELECT <the index's columns> FROM t AS a0 LOCK IN SHARE MODE` (one time
/// in three `FOR UPDATE`), which waits for B at row `x`.
pub(super) fn draw_snapshot_reads(
    g: &Gen,
    seed: u64,
    index: u64,
    isolation: Isolation,
    order: &[StmtRef],
    txns: &mut [Txn],
) {
    if !g.cfg.features.snapshot_index_reads {
        return;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    if !rng.chance(1, 2) {
        return;
    }
    let Some((t, key, covered, c)) = rng.try_pick(&targets(g)).cloned() else {
        return;
    };
    let shapes = shapes(isolation, order, txns, &g.cfg.server_settings);
    let Some(&shape) = rng.try_pick(&shapes) else {
        return;
    };
    let Some(row) = rng.try_pick(&g.known[t]) else {
        return;
    };
    let Some(Value::Int(x)) = row.get(key).cloned() else {
        return;
    };
    let old: Vec<Value> = row.get(c).cloned().into_iter().collect();
    let Some(w) = fresh_value(&mut rng, g.col_type(t, c), &old) else {
        return;
    };
    let table = g.table_name(t);
    let columns = &g.schema.tables[t].columns;
    let all = columns.iter().map(|c| Expr::qcol("a0", &c.name)).collect();
    let view = Stmt::Select(Select::plain(&table, "a0", all));
    let write = Stmt::Update(Update {
        table: table.clone(),
        assignments: vec![Assignment {
            column: columns[c].name.clone(),
            value: Expr::lit(w),
        }],
        where_: Some(Expr::eq(
            Expr::col(&columns[key].name),
            Expr::lit(Value::Int(x)),
        )),
    });
    let mut read = Select::plain(
        &table,
        "a0",
        covered.iter().map(|c| Expr::qcol("a0", c)).collect(),
    );
    read.lock = Some(if rng.chance(1, 3) {
        LockMode::ForUpdate
    } else {
        LockMode::ForShare
    });
    for (r, stmt) in [
        (shape.view, view),
        (shape.write, write),
        (shape.read, Stmt::Select(read)),
    ] {
        if let Some(s) = stmt_at_mut(txns, r) {
            *s = stmt;
        }
    }
}

/// Each table with rows and a one-column integer key, an index of it and
/// one of the index's columns that is not the key: (table, key column,
/// the index's columns, that column).
fn targets(g: &Gen) -> Vec<(usize, usize, Vec<String>, usize)> {
    let mut targets = Vec::new();
    for t in 0..g.schema.tables.len() {
        let Some(key) = int_key(g, t) else { continue };
        if g.known[t].is_empty() {
            continue;
        }
        let table = &g.schema.tables[t];
        for ix in &table.indexes {
            for name in ix.columns.iter().filter(|c| **c != table.columns[key].name) {
                if let Some(c) = table.columns.iter().position(|x| &x.name == name) {
                    targets.push((t, key, ix.columns.clone(), c));
                }
            }
        }
    }
    targets
}

/// The statements of one shape: A's read view, B's write, A's locking read.
#[derive(Clone, Copy, Debug)]
struct Shape {
    view: StmtRef,
    write: StmtRef,
    read: StmtRef,
}

/// Every shape the submit order allows; `server`: the server's settings,
/// which a session that sets none of its own runs with (MariaDB 11.8 has
/// `innodb_snapshot_isolation` ON by default).
fn shapes(isolation: Isolation, order: &[StmtRef], txns: &[Txn], server: &Settings) -> Vec<Shape> {
    let pos = |r: StmtRef| order.iter().position(|x| *x == r);
    let data = |r: &StmtRef| stmt_at(txns, *r).is_some_and(replaceable);
    let of = |id: u32| order.iter().filter(move |r| r.txn == id && data(r));
    let snapshot = |t: &Txn| {
        matches!(
            t.isolation.unwrap_or(isolation),
            Isolation::RepeatableRead | Isolation::Serializable
        ) && setting_value(&t.settings, server, SETTING).is_some_and(|v| setting_is_on(&v))
    };
    let mut out = Vec::new();
    for a in txns
        .iter()
        .filter(|t| !t.autocommit && !t.begin().read_only && snapshot(t))
    {
        for b in txns
            .iter()
            .filter(|t| t.id != a.id && !t.autocommit && !t.begin().read_only)
        {
            let Some(commit) = commit_of(b).and_then(pos) else {
                continue;
            };
            for &write in of(b.id) {
                let Some(at) = pos(write) else { continue };
                let before = of(a.id).find(|r| pos(**r).is_some_and(|p| p < at));
                let after = of(a.id).find(|r| pos(**r).is_some_and(|p| p > at && p < commit));
                if let (Some(&view), Some(&read)) = (before, after) {
                    out.push(Shape { view, write, read });
                }
            }
        }
    }
    out
}
