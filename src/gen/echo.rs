//! Echoed UPDATEs: an UPDATE that repeats another transaction's UPDATE of
//! constant values (same table, assignments and WHERE), drawn from a random
//! stream of its own, so the rest of a case is the one the same seed and
//! index gave before.
//!
//! Two transactions that write the same values to the same rows are where a
//! write can leave a row unchanged: the second UPDATE matches the row the
//! first committed and changes nothing. InnoDB then writes no new version,
//! so the transaction's later consistent reads still see its read view's
//! version (MDEV-26642, known issue
//! `mariadb-noop-update-invisible-to-own-transaction`). Left to chance, two
//! UPDATEs of a case set the same constant to the same column of the same
//! rows rarely: that class was found in 3 of 5 seeds within 5 minutes
//! (BENCHMARKS.md, "Detection speed").

use crate::model::{Expr, Features, Stmt, Txn};
use crate::rng::Rng;

/// Mixed into the seed of the echo stream.
const STREAM: u64 = 0x4543_484f_5f55_5044; // "ECHO_UPD"

/// Where the engine's profile asks for them ([`Features::echo_updates`]),
/// each UPDATE of a transaction becomes, one time in three, a copy of an
/// UPDATE of constants of an earlier transaction, when there is one.
pub fn draw_echoes(seed: u64, index: u64, features: &Features, txns: &mut [Txn]) {
    if !features.echo_updates {
        return;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    for i in 1..txns.len() {
        let sources: Vec<Stmt> = txns[..i]
            .iter()
            .flat_map(|t| &t.stmts)
            .filter(|s| matches!(&s.stmt, Stmt::Update(u) if u.assignments.iter().all(|a| matches!(a.value, Expr::Lit(_)))))
            .map(|s| s.stmt.clone())
            .collect();
        if sources.is_empty() {
            continue;
        }
        for s in &mut txns[i].stmts {
            if matches!(s.stmt, Stmt::Update(_)) && rng.chance(1, 3) {
                s.stmt = rng.pick(&sources).clone();
            }
        }
    }
}
