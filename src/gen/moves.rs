//! Key moves behind a locked row, drawn from a random stream of their own,
//! so the rest of a case is the one the same seed and index gave before.
//!
//! A scan that waits for a row lock resumes where it stopped. If the lock's
//! holder then moves a row's primary key below that position and commits,
//! the resumed scan never meets the row at its new key: at READ COMMITTED
//! and READ UNCOMMITTED, InnoDB's UPDATE, DELETE and locking read then miss
//! a row that matched in every committed state (known issues
//! `innodb-read-committed-write-misses-row-moved-behind-scan` and
//! `innodb-read-committed-locking-read-misses-row-moved-behind-scan`). The
//! shape needs one transaction to lock a row and later move that row's key
//! down, with another transaction's scan waiting in between. Left to
//! chance, the locking-read form was found in 1 of 5 seeds within 4 minutes
//! (BENCHMARKS.md, "Detection speed").

use super::schema::INT_LO;
use super::Gen;
use crate::model::{Assignment, BinOp, ColType, Expr, Stmt, StmtRef, Txn, Update, Value};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x4b45_595f_4d4f_5645; // "KEY_MOVE"

/// Where the engine's profile asks for them
/// ([`crate::model::Features::key_moves`]), one explicit read-write
/// transaction in two that locks a row by its one-column integer primary
/// key (an UPDATE that keeps the key, or a locking read, with `pk = x` at
/// the top of its WHERE) has one of its later data statements replaced by
/// `UPDATE t SET pk = v WHERE pk = x`, with `v` below `x` and no row's key
/// when the case was generated.
pub(super) fn draw_moves(g: &Gen, seed: u64, index: u64, txns: &mut [Txn]) -> Vec<Move> {
    let mut placed = Vec::new();
    if !g.cfg.features.key_moves {
        return placed;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    for t in txns
        .iter_mut()
        .filter(|t| !t.autocommit && !t.begin().read_only)
    {
        let locks: Vec<(usize, KeyLock)> = t
            .stmts
            .iter()
            .enumerate()
            .filter_map(|(i, s)| locked_key(g, &s.stmt).map(|lock| (i, lock)))
            .collect();
        if locks.is_empty() || !rng.chance(1, 2) {
            continue;
        }
        let (i, lock) = *rng.pick(&locks);
        let later: Vec<usize> = (i + 1..t.stmts.len())
            .filter(|&j| replaceable(&t.stmts[j].stmt))
            .collect();
        let Some(&j) = rng.try_pick(&later) else {
            continue;
        };
        let Some(v) = free_key_below(g, &mut rng, lock) else {
            continue;
        };
        let pk = &g.schema.tables[lock.table].columns[lock.column].name;
        placed.push(Move::in_txn(t.id, i, j, lock.table));
        t.stmts[j].stmt = Stmt::Update(Update {
            table: g.table_name(lock.table),
            assignments: vec![Assignment {
                column: pk.clone(),
                value: Expr::lit(Value::Int(v)),
            }],
            where_: Some(Expr::eq(Expr::col(pk), Expr::lit(Value::Int(lock.key)))),
        });
    }
    placed
}

/// A key move placed: the statement that locks the row, the move, and the
/// row's table (`gen::scans` also describes an INSERT below a locked key
/// so).
#[derive(Clone, Copy, Debug)]
pub(super) struct Move {
    pub(super) lock: StmtRef,
    pub(super) mv: StmtRef,
    pub(super) table: usize,
}

impl Move {
    /// Statement `lock` of transaction `txn` locks a row of `table`, its
    /// statement `mv` moves it.
    pub(super) fn in_txn(txn: u32, lock: usize, mv: usize, table: usize) -> Move {
        let at = |index: usize| StmtRef {
            txn,
            index: index as u32,
        };
        Move {
            lock: at(lock),
            mv: at(mv),
            table,
        }
    }
}

/// A row by its one-column integer primary key (one a statement locks).
#[derive(Clone, Copy)]
pub(super) struct KeyLock {
    pub(super) table: usize,
    /// The primary key's column.
    pub(super) column: usize,
    pub(super) key: i64,
}

/// The column of table `t`'s primary key, where that is one integer column.
pub(super) fn int_key(g: &Gen, t: usize) -> Option<usize> {
    let [pk] = g.schema.tables[t].primary_key.as_slice() else {
        return None;
    };
    let c = g.schema.tables[t]
        .columns
        .iter()
        .position(|c| &c.name == pk)?;
    matches!(g.col_type(t, c), ColType::Int | ColType::BigInt).then_some(c)
}

/// The row `stmt` locks by `pk = x` at the top of its WHERE, where `pk` is
/// its table's one-column integer primary key: an UPDATE that does not
/// assign the key, or a locking read of one table.
pub(super) fn locked_key(g: &Gen, stmt: &Stmt) -> Option<KeyLock> {
    let (table, where_) = match stmt {
        Stmt::Update(u) => (&u.table, u.where_.as_ref()?),
        Stmt::Select(s) if s.lock.is_some() && s.from.len() == 1 && s.cursor.is_none() => {
            (&s.from[0].table, s.where_.as_ref()?)
        }
        _ => return None,
    };
    let t = g.schema.tables.iter().position(|x| &x.name == table)?;
    let c = int_key(g, t)?;
    let pk = &g.schema.tables[t].columns[c].name;
    if let Stmt::Update(u) = stmt {
        if u.assignments.iter().any(|a| &a.column == pk) {
            return None;
        }
    }
    key_equality(where_, pk).map(|key| KeyLock {
        table: t,
        column: c,
        key,
    })
}

/// `x` where `e` is, or has as a top-level conjunct, `pk = x` (either side).
pub(super) fn key_equality(e: &Expr, pk: &str) -> Option<i64> {
    let Expr::Bin { op, left, right } = e else {
        return None;
    };
    match op {
        BinOp::And => key_equality(left, pk).or_else(|| key_equality(right, pk)),
        BinOp::Eq => match (left.as_ref(), right.as_ref()) {
            (Expr::Col { name, .. }, Expr::Lit(Value::Int(x)))
            | (Expr::Lit(Value::Int(x)), Expr::Col { name, .. })
                if name == pk =>
            {
                Some(*x)
            }
            _ => None,
        },
        _ => None,
    }
}

/// Statement `r` of `txns`.
pub(super) fn stmt_at(txns: &[Txn], r: StmtRef) -> Option<&Stmt> {
    let t = txns.iter().find(|t| t.id == r.txn)?;
    t.stmts.get(r.index as usize).map(|s| &s.stmt)
}

/// Statement `r` of `txns`, to replace.
pub(super) fn stmt_at_mut(txns: &mut [Txn], r: StmtRef) -> Option<&mut Stmt> {
    let t = txns.iter_mut().find(|t| t.id == r.txn)?;
    t.stmts.get_mut(r.index as usize).map(|s| &mut s.stmt)
}

/// The COMMIT of `t`, where it ends with one.
pub(super) fn commit_of(t: &Txn) -> Option<StmtRef> {
    let i = t.stmts.iter().position(|s| s.stmt == Stmt::Commit)?;
    Some(StmtRef {
        txn: t.id,
        index: i as u32,
    })
}

/// A data statement a move may take the place of (not a cursor's).
pub(super) fn replaceable(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Select(s) => s.cursor.is_none(),
        Stmt::Insert(_) | Stmt::Update(_) | Stmt::Delete(_) => true,
        _ => false,
    }
}

/// A key below the locked one that no known row of its table has, from a
/// little below the generator's smallest integer up.
pub(super) fn free_key_below(g: &Gen, rng: &mut Rng, lock: KeyLock) -> Option<i64> {
    let taken: Vec<i64> = g.known[lock.table]
        .iter()
        .filter_map(|r| match r.get(lock.column) {
            Some(Value::Int(k)) => Some(*k),
            _ => None,
        })
        .collect();
    let free: Vec<i64> = (INT_LO - 3..lock.key)
        .filter(|k| !taken.contains(k))
        .collect();
    rng.try_pick(&free).copied()
}
