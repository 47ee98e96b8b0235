//! Which engine and level can run a pattern exactly as written: a small model
//! of each engine's visibility and write-conflict rules (ENGINE-FACTS.md). A
//! pattern is runnable when no statement must wait for a lock or fail, and
//! every read sees the version the pattern names.

use super::parser::{OpKind, Pattern};
use crate::model::Isolation;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// The latest write, committed or not (READ UNCOMMITTED).
    Latest,
    /// The latest committed version at each read (READ COMMITTED).
    Committed,
    /// A snapshot taken at the transaction's first read (MariaDB REPEATABLE READ).
    SnapshotAtFirstRead,
    /// A snapshot taken at the transaction's first statement (PostgreSQL
    /// REPEATABLE READ); writing a row changed since the snapshot fails.
    SnapshotFirstUpdaterWins,
}

/// An engine family at one level.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub engine: &'static str,
    pub level: Isolation,
    pub visibility: Visibility,
}

/// The servers' levels that let anomalies through, strongest first.
pub const TARGETS: [Target; 5] = [
    Target {
        engine: "mariadb",
        level: Isolation::RepeatableRead,
        visibility: Visibility::SnapshotAtFirstRead,
    },
    Target {
        engine: "postgres",
        level: Isolation::RepeatableRead,
        visibility: Visibility::SnapshotFirstUpdaterWins,
    },
    Target {
        engine: "postgres",
        level: Isolation::ReadCommitted,
        visibility: Visibility::Committed,
    },
    Target {
        engine: "mariadb",
        level: Isolation::ReadCommitted,
        visibility: Visibility::Committed,
    },
    Target {
        engine: "mariadb",
        level: Isolation::ReadUncommitted,
        visibility: Visibility::Latest,
    },
];

/// Whether the pattern runs as written under `v` (see the module doc).
pub fn runnable(p: &Pattern, v: Visibility) -> bool {
    // item -> committed versions (version, commit step)
    let mut committed: BTreeMap<&str, Vec<(u32, usize)>> = BTreeMap::new();
    // (txn, item) -> uncommitted version, with the step it was written
    let mut pending: BTreeMap<(u32, &str), (u32, usize)> = BTreeMap::new();
    let mut snapshot: BTreeMap<u32, usize> = BTreeMap::new();
    for (step, o) in p.ops.iter().enumerate() {
        let first_stmt = !snapshot.contains_key(&o.txn);
        match (o.kind, &o.item) {
            (OpKind::Write, Some((item, ver))) => {
                let other = pending.keys().any(|(t, i)| *t != o.txn && i == item);
                if other {
                    return false; // waits for a row lock
                }
                if v == Visibility::SnapshotFirstUpdaterWins {
                    if first_stmt {
                        snapshot.insert(o.txn, step);
                    }
                    let snap = snapshot[&o.txn];
                    let changed = committed
                        .get(item.as_str())
                        .is_some_and(|c| c.iter().any(|(_, at)| *at > snap));
                    if changed {
                        return false; // serialization failure
                    }
                }
                pending.insert((o.txn, item.as_str()), (*ver, step));
            }
            (OpKind::Read, Some((item, ver))) => {
                if first_stmt
                    && matches!(
                        v,
                        Visibility::SnapshotAtFirstRead | Visibility::SnapshotFirstUpdaterWins
                    )
                {
                    snapshot.insert(o.txn, step);
                }
                let own = pending.get(&(o.txn, item.as_str())).map(|p| p.0);
                let chain = committed.get(item.as_str());
                let last_committed = |upto: usize| {
                    chain
                        .and_then(|c| c.iter().rev().find(|(_, at)| *at <= upto))
                        .map_or(0, |c| c.0)
                };
                let seen = own.unwrap_or_else(|| match v {
                    Visibility::Latest => pending
                        .iter()
                        .filter(|((_, i), _)| i == item)
                        .map(|(_, w)| w.0)
                        .next()
                        .unwrap_or_else(|| last_committed(step)),
                    Visibility::Committed => last_committed(step),
                    _ => last_committed(snapshot[&o.txn]),
                });
                if seen != *ver {
                    return false;
                }
            }
            (OpKind::Commit, _) => {
                let mine: Vec<(&str, u32)> = pending
                    .iter()
                    .filter(|((t, _), _)| *t == o.txn)
                    .map(|((_, i), w)| (*i, w.0))
                    .collect();
                for (i, ver) in mine {
                    pending.remove(&(o.txn, i));
                    committed.entry(i).or_default().push((ver, step));
                }
            }
            (OpKind::Abort, _) => pending.retain(|(t, _), _| *t != o.txn),
            _ => {}
        }
    }
    true
}

/// The first target (strongest level first) that runs the pattern as written.
pub fn permitting_target(p: &Pattern) -> Option<Target> {
    TARGETS.into_iter().find(|t| runnable(p, t.visibility))
}
