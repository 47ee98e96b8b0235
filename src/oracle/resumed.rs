//! Statements resumed by one lock release complete in an order the client
//! cannot observe (docs/design.md §3): the runs of such completions in a history,
//! and the orders to try. Shared by `wss` and `view`.

use crate::model::{EventKind, History};

/// At most this many orders (schedules) are tried; a case with more is
/// undecided (`too-many-resume-orders`), never judged on a subset of them.
pub const MAX_ORDERS: usize = 24;

/// Runs of two or more consecutive resumed completions (indices into
/// `events`). Lock waits, and ROLLBACKs txfuzz issued after errors (releases
/// racing with the one that resumed these statements), leave the order open;
/// a submission or an ordinary completion closes it.
pub fn resumed_runs(history: &History) -> Vec<Vec<usize>> {
    let mut runs = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    for (i, e) in history.events.iter().enumerate() {
        match e.kind {
            EventKind::Completed { resumed: true, .. } => run.push(i),
            EventKind::Blocked { .. } | EventKind::Aborted | EventKind::Skipped => {}
            _ => {
                if run.len() >= 2 {
                    runs.push(std::mem::take(&mut run));
                }
                run.clear();
            }
        }
    }
    if run.len() >= 2 {
        runs.push(run);
    }
    runs
}

/// Every ordering of `items`, the given one first.
pub fn permutations<T: Clone>(items: &[T]) -> Vec<Vec<T>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first.clone());
            out.push(p);
        }
    }
    out
}
