//! Locking scans that wait behind a key move, drawn from a random stream of
//! their own, so the rest of a case is the one the same seed and index gave
//! before.
//!
//! A key move (`gen::moves`) makes the known InnoDB class
//! `innodb-read-committed-locking-read-misses-row-moved-behind-scan` only
//! when another transaction's locking read scans the table while the row
//! is locked and before its key moves: the scan waits at the row, resumes
//! after the COMMIT, and never meets the row at its new, lower key. Left to
//! chance, such a read met a move in 1 seed of 5 within about 2,000 cases
//! (BENCHMARKS.md, "Key-change phantoms in seconds").

use super::moves::{locked_key, replaceable, stmt_at, stmt_at_mut, Move};
use super::Gen;
use crate::model::{Expr, Isolation, LockMode, Select, Stmt, StmtRef, Txn};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x4b45_595f_5343_414e; // "KEY_SCAN"

/// For each key move of a case, and each INSERT of a row below a key its
/// transaction locked before (the same shape for the inserted-row classes,
/// `mariadb-read-committed-locking-read-misses-inserted-row`), one time in
/// two: a data statement of another transaction at READ COMMITTED or READ
/// UNCOMMITTED, submitted after the statement that locks the row and before
/// the move or INSERT, becomes
/// `SELECT <every column> FROM t FOR UPDATE` (one in three: `FOR SHARE`)
/// on the moved row's table, unless a statement there already writes or
/// lock-reads that table.
pub(super) fn draw_scans(
    g: &Gen,
    seed: u64,
    index: u64,
    isolation: Isolation,
    order: &[StmtRef],
    moves: &[Move],
    txns: &mut [Txn],
) {
    let mut rng = Rng::new(seed ^ STREAM, index);
    let pos = |r: StmtRef| order.iter().position(|x| *x == r);
    // The moves first: their draws are those of a case without inserts.
    let inserts = inserts_behind_locks(g, txns);
    for m in moves.iter().chain(&inserts) {
        if !rng.chance(1, 2) {
            continue;
        }
        let (Some(from), Some(to)) = (pos(m.lock), pos(m.mv)) else {
            continue;
        };
        let level = |id: u32| {
            txns.iter()
                .find(|t| t.id == id)
                .map(|t| t.isolation.unwrap_or(isolation))
        };
        let window: Vec<StmtRef> = order[from + 1..to]
            .iter()
            .filter(|r| r.txn != m.lock.txn)
            .filter(|r| {
                matches!(
                    level(r.txn),
                    Some(Isolation::ReadCommitted | Isolation::ReadUncommitted)
                )
            })
            .filter(|r| stmt_at(txns, **r).is_some_and(replaceable))
            .copied()
            .collect();
        // A write or locking read of the table there already scans it (the
        // UPDATE and DELETE form of the class): it stays.
        let table = g.table_name(m.table);
        if window
            .iter()
            .any(|r| stmt_at(txns, *r).is_some_and(|s| scans_with_locks(s, &table)))
        {
            continue;
        }
        let Some(&r) = rng.try_pick(&window) else {
            continue;
        };
        let lock = if rng.chance(1, 3) {
            LockMode::ForShare
        } else {
            LockMode::ForUpdate
        };
        let t = &g.schema.tables[m.table];
        let items = t
            .columns
            .iter()
            .map(|c| Expr::qcol("a0", &c.name))
            .collect();
        let mut read = Select::plain(&table, "a0", items);
        read.lock = Some(lock);
        if let Some(s) = stmt_at_mut(txns, r) {
            *s = Stmt::Select(read);
        }
    }
}

/// Whether `stmt` takes locks as it reads `table`: an UPDATE, a DELETE or
/// a locking read of it.
fn scans_with_locks(stmt: &Stmt, table: &str) -> bool {
    match stmt {
        Stmt::Update(u) => u.table == table,
        Stmt::Delete(d) => d.table == table,
        Stmt::Select(s) => s.lock.is_some() && s.from.iter().any(|f| f.table == table),
        _ => false,
    }
}

/// Each INSERT (of literal rows) whose transaction locked a row of its
/// table by key `x` earlier and which inserts a key below `x`: as a move,
/// the lock and the INSERT.
fn inserts_behind_locks(g: &Gen, txns: &[Txn]) -> Vec<Move> {
    let mut out = Vec::new();
    for t in txns.iter().filter(|t| !t.autocommit) {
        for (i, s) in t.stmts.iter().enumerate() {
            let Some(lock) = locked_key(g, &s.stmt) else {
                continue;
            };
            let pk = &g.schema.tables[lock.table].columns[lock.column].name;
            let table = g.table_name(lock.table);
            let below = |stmt: &Stmt| match stmt {
                Stmt::Insert(ins) if ins.table == table && ins.select.is_none() => {
                    let Some(c) = ins.columns.iter().position(|c| c == pk) else {
                        return false;
                    };
                    ins.rows.iter().any(|r| {
                        matches!(r.get(c), Some(Expr::Lit(crate::model::Value::Int(k))) if *k < lock.key)
                    })
                }
                _ => false,
            };
            if let Some(j) = (i + 1..t.stmts.len()).find(|&j| below(&t.stmts[j].stmt)) {
                out.push(Move::in_txn(t.id, i, j, lock.table));
            }
        }
    }
    out
}
