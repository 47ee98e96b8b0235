//! When things happened in a refined execution (which ran without blocking,
//! so one statement at a time): used to place a statement that saw neither a
//! row nor its deletion.

use crate::model::{History, StmtRef, TestCase};
use std::collections::HashMap;

/// Where a statement that did not see a row stood: before the row was
/// inserted, or after its deletion was visible to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    BeforeCreation,
    AfterDeletion,
}

/// Positions in the (non-blocking, sequential) execution: when each statement
/// completed, when its transaction began and committed.
pub struct Clock {
    done: HashMap<u32, usize>,
    began: HashMap<u32, usize>,
    committed: HashMap<u32, usize>,
}

impl Clock {
    pub fn new(case: &TestCase, history: &History) -> Clock {
        let mut at: HashMap<StmtRef, usize> = HashMap::new();
        for (i, e) in history.events.iter().enumerate() {
            if matches!(e.kind, crate::model::EventKind::Completed { .. }) {
                at.entry(e.stmt).or_insert(i);
            }
        }
        let (mut done, mut began, mut committed) = (HashMap::new(), HashMap::new(), HashMap::new());
        for t in &case.txns {
            let pos = |i: usize| {
                at.get(&StmtRef {
                    txn: t.id,
                    index: i as u32,
                })
                .copied()
            };
            let first = pos(0);
            let commit = t
                .stmts
                .iter()
                .position(|s| s.stmt.kind() == crate::model::StmtKind::Commit)
                .and_then(pos);
            for (i, s) in t.stmts.iter().enumerate() {
                let Some(p) = pos(i) else { continue };
                done.insert(s.op, p);
                if t.autocommit {
                    began.insert(s.op, p);
                    committed.insert(s.op, p);
                } else {
                    if let Some(f) = first {
                        began.insert(s.op, f);
                    }
                    if let Some(c) = commit {
                        committed.insert(s.op, c);
                    }
                }
            }
        }
        Clock {
            done,
            began,
            committed,
        }
    }

    /// `op` saw neither the row `creator` inserted nor its deletion by
    /// `deleter`'s absence: decide which side of the row's lifetime it was on.
    pub fn absent_side(&self, op: u32, creator: u32, deleter: u32) -> Option<Side> {
        let done = *self.done.get(&op)?;
        if done < *self.done.get(&creator)? {
            return Some(Side::BeforeCreation);
        }
        // The deletion committed before the statement's transaction began, so
        // every snapshot the statement could use contains it.
        let deleted = *self.committed.get(&deleter)?;
        let same_txn = self.began.get(&deleter) == self.began.get(&op)
            && self.committed.get(&deleter) == self.committed.get(&op);
        if deleted < *self.began.get(&op)? || (same_txn && *self.done.get(&deleter)? < done) {
            return Some(Side::AfterDeletion);
        }
        None
    }
}
