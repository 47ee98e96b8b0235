//! Statements resumed by one lock release complete in an order the client
//! cannot observe (docs/design.md §3). Each order is a possible actual schedule:
//! the oracle reports a violation only if every order violates, and decides
//! the case if one order matches the prediction.

use crate::model::History;
use crate::oracle::resumed::{permutations, resumed_runs, MAX_ORDERS};

/// The histories whose schedules are consistent with what was observed (the
/// recorded one first); `None` when there are more than [`MAX_ORDERS`].
pub fn candidate_histories(history: &History) -> Option<Vec<History>> {
    let mut out = vec![history.clone()];
    for run in resumed_runs(history) {
        let mut next = Vec::new();
        for base in &out {
            for perm in permutations(&run) {
                let mut h = base.clone();
                for (slot, from) in run.iter().zip(&perm) {
                    h.events[*slot] = base.events[*from].clone();
                }
                next.push(h);
                if next.len() > MAX_ORDERS {
                    return None;
                }
            }
        }
        out = next;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Event, EventKind, Isolation, StmtRef};

    fn ev(txn: u32, kind: EventKind) -> Event {
        Event {
            stmt: StmtRef { txn, index: 0 },
            kind,
            at_us: 0,
        }
    }

    #[test]
    fn resumed_completions_released_together_are_permuted() {
        let done = EventKind::Completed {
            ok: true,
            resumed: true,
        };
        let h = History {
            isolation: Isolation::Serializable,
            events: vec![
                ev(1, EventKind::Submitted),
                ev(2, done.clone()),
                ev(3, EventKind::Blocked { blocker: None }),
                ev(3, done.clone()),
                ev(1, EventKind::Submitted),
            ],
            outcomes: vec![],
            txns: vec![],
            final_state: Default::default(),
            final_state_error: None,
        };
        let hs = candidate_histories(&h).unwrap();
        assert_eq!(hs.len(), 2);
        assert_eq!(hs[1].events[1].stmt.txn, 3);
        assert_eq!(hs[1].events[3].stmt.txn, 2);
    }
}
