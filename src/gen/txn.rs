//! Transactions, sessions and the submit order.

use super::Gen;
use crate::model::{CaseStmt, ConstraintTiming, Stmt, StmtRef, Txn};

/// Savepoint name used by generated transactions.
pub(crate) const SAVEPOINT: &str = "sp1";

impl Gen<'_> {
    /// Number of transactions: weighted toward 2-4, clamped to `1..=max_txns`.
    fn txn_count(&mut self) -> u32 {
        let max = self.cfg.max_txns.max(1);
        // weights for 1, 2, 3, 4, and 5..=max
        let n = match self.rng.weighted(&[10, 30, 30, 20, 10]) {
            0 => 1,
            1 => 2,
            2 => 3,
            3 => 4,
            _ => self.rng.range(5, max.max(5) as i64) as u32,
        };
        n.min(max)
    }

    pub(crate) fn gen_txns(&mut self) -> Vec<Txn> {
        let n = self.txn_count();
        let max_stmts = self.cfg.max_stmts_per_txn.max(1) as i64;
        let mut op = 1u32;
        let mut txns = Vec::new();
        for id in 1..=n {
            let mut stmts: Vec<Stmt> = Vec::new();
            let autocommit = self.rng.chance(15, 100);
            if autocommit {
                let k = self.rng.range(1, max_stmts.min(3));
                for _ in 0..k {
                    stmts.push(self.gen_data_stmt());
                }
            } else {
                let k = self.rng.range(1, max_stmts) as usize;
                let mut body: Vec<Stmt> = (0..k).map(|_| self.gen_data_stmt()).collect();
                if self.cfg.features.savepoints && self.rng.chance(15, 100) {
                    let sp = self.rng.below(k as u64 + 1) as usize;
                    body.insert(sp, Stmt::Savepoint(SAVEPOINT.into()));
                    if self.rng.chance(1, 2) {
                        // somewhere after the savepoint (and at least one statement
                        // after it when there is one), before the end
                        let lo = (sp + 2).min(body.len()) as i64;
                        let at = self.rng.range(lo, body.len() as i64) as usize;
                        body.insert(at, Stmt::RollbackTo(SAVEPOINT.into()));
                    }
                }
                if self.cfg.features.set_constraints
                    && self
                        .schema
                        .tables
                        .iter()
                        .any(|t| !t.foreign_keys.is_empty())
                    && self.rng.chance(1, 12)
                {
                    // Anywhere before the end: IMMEDIATE later in a
                    // transaction checks what its statements left pending.
                    let at = self.rng.below(body.len() as u64 + 1) as usize;
                    let timing = if self.rng.chance(2, 3) {
                        ConstraintTiming::Deferred
                    } else {
                        ConstraintTiming::Immediate
                    };
                    body.insert(at, Stmt::SetConstraints(timing));
                }
                stmts.push(Stmt::begin());
                stmts.extend(body);
                stmts.push(if self.rng.chance(4, 5) {
                    Stmt::Commit
                } else {
                    Stmt::Rollback
                });
            }
            let stmts = stmts
                .into_iter()
                .map(|stmt| {
                    let s = CaseStmt { op, stmt };
                    op += 1;
                    s
                })
                .collect();
            txns.push(Txn {
                id,
                autocommit,
                isolation: None,
                settings: Default::default(),
                stmts,
            });
        }
        txns
    }

    /// A uniformly random interleaving that keeps each transaction's order:
    /// the next statement comes from a transaction chosen with probability
    /// proportional to its remaining statements.
    pub(crate) fn gen_submit_order(&mut self, txns: &[Txn]) -> Vec<StmtRef> {
        let mut next: Vec<u32> = vec![0; txns.len()];
        let total: usize = txns.iter().map(|t| t.stmts.len()).sum();
        let mut order = Vec::with_capacity(total);
        for _ in 0..total {
            let remaining: Vec<u64> = txns
                .iter()
                .zip(&next)
                .map(|(t, &n)| (t.stmts.len() as u64).saturating_sub(n as u64))
                .collect();
            let i = self.rng.weighted(&remaining);
            order.push(StmtRef {
                txn: txns[i].id,
                index: next[i],
            });
            next[i] += 1;
        }
        order
    }
}
