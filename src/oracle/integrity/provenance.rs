//! Who wrote a row version: the statements of its write list, and whether
//! their transactions committed.

use crate::model::{History, Outcome, Stmt, StmtRef, TestCase, TxnEnd, WriteList};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One statement that wrote a row.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Writer {
    /// Its operation id (0: the initial data).
    pub op: u32,
    /// The statement (`None` for the initial data or an op the case does not
    /// have).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stmt: Option<StmtRef>,
    /// Whether its transaction (or, in autocommit, the statement) committed.
    pub committed: bool,
}

/// The case's statements by operation id, and how their transactions ended.
pub struct Provenance<'a> {
    case: &'a TestCase,
    by_op: HashMap<u32, StmtRef>,
    outcomes: HashMap<StmtRef, &'a Outcome>,
    committed: HashMap<StmtRef, bool>,
}

impl<'a> Provenance<'a> {
    pub fn new(case: &'a TestCase, history: &'a History) -> Provenance<'a> {
        let mut by_op = HashMap::new();
        let mut committed = HashMap::new();
        let outcomes: HashMap<StmtRef, &Outcome> = history
            .outcomes
            .iter()
            .map(|o| (o.stmt, &o.outcome))
            .collect();
        for t in &case.txns {
            let end = history.txn_end(t.id);
            for (i, s) in t.stmts.iter().enumerate() {
                let r = StmtRef {
                    txn: t.id,
                    index: i as u32,
                };
                by_op.insert(s.op, r);
                let done = if t.autocommit {
                    outcomes.get(&r).is_some_and(|o| o.autocommit_committed())
                } else {
                    end == Some(TxnEnd::Committed) && outcomes.get(&r).is_some_and(|o| o.ok())
                };
                committed.insert(r, done);
            }
        }
        Provenance {
            case,
            by_op,
            outcomes,
            committed,
        }
    }

    /// The writer with operation id `op`.
    pub fn writer(&self, op: u32) -> Writer {
        let stmt = self.by_op.get(&op).copied();
        Writer {
            op,
            stmt,
            committed: op == 0 || stmt.is_some_and(|r| self.committed[&r]),
        }
    }

    /// The writers of a row version, oldest first.
    pub fn writers(&self, wl: Option<&WriteList>) -> Vec<Writer> {
        wl.map(|wl| wl.ops().map(|op| self.writer(op)).collect())
            .unwrap_or_default()
    }

    /// The statement with reference `r`.
    pub fn stmt(&self, r: StmtRef) -> Option<&'a Stmt> {
        self.case.stmt(r).map(|s| &s.stmt)
    }

    /// Whether session `txn` runs in autocommit mode.
    pub fn autocommit(&self, txn: u32) -> bool {
        self.case.txn(txn).is_some_and(|t| t.autocommit)
    }

    /// What statement `r` did, if it ran.
    pub fn outcome(&self, r: StmtRef) -> Option<&'a Outcome> {
        self.outcomes.get(&r).copied()
    }
}
