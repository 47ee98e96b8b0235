//! Which engine and level can run a pattern exactly as written: a small model
//! of visibility and write-conflict rules, derived from the engine profiles'
//! rules (docs/engine-facts.md). A
//! pattern is runnable when no statement must wait for a lock or fail, and
//! every read sees the version the pattern names.

use super::parser::{OpKind, Pattern};
use crate::engine::profile::{Conflict, Rule, SnapshotPoint, ViewRule};
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub engine: &'static str,
    pub level: Isolation,
    pub visibility: Visibility,
}

impl Visibility {
    /// The pattern model of an engine's rule at a level, if it is one of the
    /// four this model knows (SERIALIZABLE levels and SQLite's single writer
    /// are not targets: they let no anomaly through).
    pub fn of(rule: &Rule) -> Option<Visibility> {
        match (rule.plain_read, rule.snapshot, rule.conflict) {
            (ViewRule::Uncommitted, _, _) => Some(Visibility::Latest),
            (_, SnapshotPoint::EachStatement, _) => Some(Visibility::Committed),
            (_, SnapshotPoint::FirstConsistentRead, Conflict::Proceed) => {
                Some(Visibility::SnapshotAtFirstRead)
            }
            (_, SnapshotPoint::FirstStatementStart, Conflict::Abort(_)) => {
                Some(Visibility::SnapshotFirstUpdaterWins)
            }
            _ => None,
        }
    }
    fn rank(self) -> u8 {
        match self {
            Visibility::SnapshotAtFirstRead => 0,
            Visibility::SnapshotFirstUpdaterWins => 1,
            Visibility::Committed => 2,
            Visibility::Latest => 3,
        }
    }
}

/// The registered engines' levels that let anomalies through (their profiles
/// permit some), from their profiles' rules: strongest level first, then the
/// stronger visibility, then the later-registered engine (a fixed order, so
/// the choice is deterministic).
pub fn targets() -> Vec<Target> {
    let mut out: Vec<(usize, Target)> = Vec::new();
    for (i, kind) in crate::engine::registry::ENGINES.iter().enumerate() {
        let p = (kind.profile)(&Default::default());
        for &level in &p.isolations {
            let Some(visibility) = p.rule(level).as_ref().and_then(Visibility::of) else {
                continue;
            };
            if !p.permitted_at(level).is_empty() {
                out.push((
                    i,
                    Target {
                        engine: p.engine,
                        level,
                        visibility,
                    },
                ));
            }
        }
    }
    out.sort_by_key(|(i, t)| {
        (
            std::cmp::Reverse(t.level),
            t.visibility.rank(),
            std::cmp::Reverse(*i),
        )
    });
    out.into_iter().map(|(_, t)| t).collect()
}

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
    targets().into_iter().find(|t| runnable(p, t.visibility))
}

#[cfg(test)]
mod target_tests {
    use super::*;

    /// The targets come from the profiles: MariaDB RR (snapshot at the first
    /// read), PostgreSQL RR (first updater wins), both READ COMMITTED levels
    /// and MariaDB READ UNCOMMITTED; no SERIALIZABLE level, no SQLite.
    #[test]
    fn targets_are_the_profiles_anomalous_levels() {
        let t: Vec<(&str, Isolation, Visibility)> = targets()
            .into_iter()
            .map(|t| (t.engine, t.level, t.visibility))
            .collect();
        assert_eq!(
            t,
            vec![
                (
                    "mariadb",
                    Isolation::RepeatableRead,
                    Visibility::SnapshotAtFirstRead
                ),
                (
                    "postgres",
                    Isolation::RepeatableRead,
                    Visibility::SnapshotFirstUpdaterWins
                ),
                ("postgres", Isolation::ReadCommitted, Visibility::Committed),
                ("mariadb", Isolation::ReadCommitted, Visibility::Committed),
                ("mariadb", Isolation::ReadUncommitted, Visibility::Latest),
            ]
        );
    }
}
