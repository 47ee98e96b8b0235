//! Key changes between a read view and a write, drawn from a random stream
//! of their own, so the rest of a case is the one the same seed and index
//! gave before.
//!
//! At REPEATABLE READ a transaction reads with the read view of its first
//! consistent read. If another transaction then moves a row's primary key
//! (InnoDB deletes the old record and inserts a new one) and commits, and
//! the first transaction writes the row at its new key (a current read
//! finds the new record) and reads the table again, MariaDB shows it both
//! its own write and the old record (known issue
//! `mariadb-primary-key-change-phantom`, MDEV-32898). Left to chance, the
//! shape was found in 1 of 5 seeds within about 2,000 cases (BENCHMARKS.md,
//! "Key moves behind a locked row").

use super::moves::{
    commit_of, free_key_below, int_key, replaceable, stmt_at, stmt_at_mut, KeyLock,
};
use super::schema::{INT_HI, INT_LO, STRINGS};
use super::Gen;
use crate::model::{
    Assignment, ColType, Expr, Isolation, Select, Stmt, StmtRef, Txn, Update, Value,
};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x504b_5f50_4841_4e54; // "PK_PHANT"

/// Where the engine's profile asks for them
/// ([`crate::model::Features::key_change_phantoms`]), one case in two at REPEATABLE
/// READ whose submit order allows it gets the shape, on a table with a
/// one-column integer primary key and a row `x` at generation: explicit
/// read-write transactions A and B, where a data statement of A is
/// submitted before B's COMMIT and two later ones of A after it. That first
/// statement of A becomes a plain read of the table (A's read view), a data
/// statement of B becomes `UPDATE t SET pk = v WHERE pk = x` (`v` below `x`
/// and no row's key), A's next statement after B's COMMIT
/// `UPDATE t SET c = w WHERE pk = v` for a column `c` that is not the key
/// and a value `w` the row does not hold,
/// and the one after that the plain read of the table again.
pub(super) fn draw_phantoms(
    g: &Gen,
    seed: u64,
    index: u64,
    isolation: Isolation,
    order: &[StmtRef],
    txns: &mut [Txn],
) {
    if !g.cfg.features.key_change_phantoms {
        return;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    if !rng.chance(1, 2) {
        return;
    }
    let tables: Vec<(usize, usize)> = (0..g.schema.tables.len())
        .filter_map(|t| Some((t, int_key(g, t)?)))
        .filter(|&(t, _)| g.schema.tables[t].columns.len() > 1 && !g.known[t].is_empty())
        .collect();
    let Some(&(t, key)) = rng.try_pick(&tables) else {
        return;
    };
    let shapes = shapes(isolation, order, txns);
    let Some(&shape) = rng.try_pick(&shapes) else {
        return;
    };
    let Some(row) = rng.try_pick(&g.known[t]) else {
        return;
    };
    let Some(Value::Int(x)) = row.get(key).cloned() else {
        return;
    };
    let lock = KeyLock {
        table: t,
        column: key,
        key: x,
    };
    let Some(v) = free_key_below(g, &mut rng, lock) else {
        return;
    };
    let others: Vec<usize> = (0..g.schema.tables[t].columns.len())
        .filter(|&c| c != key)
        .collect();
    let c = *rng.pick(&others);
    // A value the row does not hold: InnoDB leaves a row an UPDATE does
    // not change as it was (no new version), and the shape needs one.
    let value = other_value(&mut rng, g.col_type(t, c), row.get(c));
    let table = g.table_name(t);
    let columns = &g.schema.tables[t].columns;
    let (pk, col) = (columns[key].name.clone(), columns[c].name.clone());
    let items = columns.iter().map(|c| Expr::qcol("a0", &c.name)).collect();
    let read = Stmt::Select(Select::plain(&table, "a0", items));
    let mut set = |r: StmtRef, stmt: Stmt| {
        if let Some(s) = stmt_at_mut(txns, r) {
            *s = stmt;
        }
    };
    set(shape.view, read.clone());
    set(
        shape.mv,
        Stmt::Update(Update {
            table: table.clone(),
            assignments: vec![Assignment {
                column: pk.clone(),
                value: Expr::lit(Value::Int(v)),
            }],
            where_: Some(Expr::eq(Expr::col(&pk), Expr::lit(Value::Int(x)))),
        }),
    );
    set(
        shape.write,
        Stmt::Update(Update {
            table,
            assignments: vec![Assignment {
                column: col,
                value: Expr::lit(value),
            }],
            where_: Some(Expr::eq(Expr::col(&pk), Expr::lit(Value::Int(v)))),
        }),
    );
    set(shape.reread, read);
}

/// The statements of one shape: A's read view, B's move, A's write and
/// A's read after it.
#[derive(Clone, Copy, Debug)]
struct Shape {
    view: StmtRef,
    mv: StmtRef,
    write: StmtRef,
    reread: StmtRef,
}

/// Every shape the submit order allows: A at REPEATABLE READ.
fn shapes(isolation: Isolation, order: &[StmtRef], txns: &[Txn]) -> Vec<Shape> {
    let pos = |r: StmtRef| order.iter().position(|x| *x == r);
    let data = |r: &&StmtRef| stmt_at(txns, **r).is_some_and(replaceable);
    let explicit = |t: &&Txn| !t.autocommit && !t.begin().read_only;
    let mut out = Vec::new();
    for a in txns.iter().filter(explicit) {
        if a.isolation.unwrap_or(isolation) != Isolation::RepeatableRead {
            continue;
        }
        let of_a: Vec<StmtRef> = order.iter().filter(|r| r.txn == a.id).copied().collect();
        for b in txns.iter().filter(explicit).filter(|b| b.id != a.id) {
            let Some(end) = commit_of(b).and_then(pos) else {
                continue;
            };
            let before: Vec<StmtRef> = of_a
                .iter()
                .filter(data)
                .filter(|r| pos(**r).is_some_and(|p| p < end))
                .copied()
                .collect();
            let after: Vec<StmtRef> = of_a
                .iter()
                .filter(data)
                .filter(|r| pos(**r).is_some_and(|p| p > end))
                .copied()
                .collect();
            let moves: Vec<StmtRef> = order
                .iter()
                .filter(|r| r.txn == b.id)
                .filter(data)
                .copied()
                .collect();
            if let (Some(&view), Some(&mv), [write, reread, ..]) =
                (before.first(), moves.first(), after.as_slice())
            {
                out.push(Shape {
                    view,
                    mv,
                    write: *write,
                    reread: *reread,
                });
            }
        }
    }
    out
}

/// A value of type `ty` other than `old` (a boolean: its negation).
fn other_value(rng: &mut Rng, ty: ColType, old: Option<&Value>) -> Value {
    if ty == ColType::Bool {
        return Value::Bool(!matches!(old, Some(Value::Bool(true))));
    }
    let taken: Vec<Value> = old.cloned().into_iter().collect();
    // The generator's strings and integers outnumber one taken value.
    fresh_value(rng, ty, &taken).unwrap_or(Value::Null)
}

/// A value of type `ty` that none of `taken` is, from the generator's own
/// values; `None` when every one is taken.
pub(super) fn fresh_value(rng: &mut Rng, ty: ColType, taken: &[Value]) -> Option<Value> {
    let candidates: Vec<Value> = match ty {
        ColType::Bool => vec![Value::Bool(false), Value::Bool(true)],
        ColType::Varchar(_) | ColType::Text => {
            STRINGS.iter().map(|s| Value::Text(s.to_string())).collect()
        }
        ColType::Int | ColType::BigInt => (INT_LO..INT_HI).map(Value::Int).collect(),
        ColType::Decimal => (INT_LO..INT_HI)
            .map(|units| Value::decimal_cents(units * 100))
            .collect(),
    };
    let fresh: Vec<&Value> = candidates.iter().filter(|v| !taken.contains(v)).collect();
    rng.try_pick(&fresh).map(|v| (*v).clone())
}
