//! Hand-written schedules: when the commit-order replay is sound at levels
//! without write-conflict detection, and the reason when it is not.

use super::*;
use crate::model::{Event, ForeignKey, Isolation, Outcome, Stmt, StmtOutcome, TxnEnd, TxnOutcome};
use crate::testkit::*;
use std::collections::BTreeMap;

fn maria() -> EngineProfile {
    crate::engine::mysql::profile(&BTreeMap::new())
}

fn pg() -> EngineProfile {
    crate::engine::postgres::profile(&BTreeMap::new())
}

/// A case over `t` and `u` (both key/value tables) at `iso`.
fn case(txns: Vec<(bool, Vec<Stmt>)>, order: &str, iso: Isolation) -> TestCase {
    let mut c = kv_case(&[(1, 10), (2, 20)], txns, order);
    c.schema.tables.push(kv_table("u"));
    c.isolation = iso;
    c
}

/// Every statement submitted and completed at once in submit order, except
/// those in `blocked` (a Blocked event follows their submission); explicit
/// transactions end as `ends` says (committed otherwise).
fn history(c: &TestCase, blocked: &[StmtRef], ends: &[(u32, TxnEnd)]) -> History {
    let mut events = Vec::new();
    let mut outcomes = Vec::new();
    for &r in &c.submit_order {
        events.push(Event {
            stmt: r,
            kind: EventKind::Submitted,
            at_us: 0,
        });
        if blocked.contains(&r) {
            events.push(Event {
                stmt: r,
                kind: EventKind::Blocked { blocker: None },
                at_us: 0,
            });
        }
        events.push(Event {
            stmt: r,
            kind: EventKind::Completed {
                ok: true,
                resumed: blocked.contains(&r),
            },
            at_us: 0,
        });
        outcomes.push(StmtOutcome {
            stmt: r,
            op: c.stmt(r).unwrap().op,
            outcome: Outcome::default(),
        });
    }
    let txns = c
        .txns
        .iter()
        .map(|t| TxnOutcome {
            txn: t.id,
            end: (!t.autocommit).then(|| {
                ends.iter()
                    .find(|(id, _)| *id == t.id)
                    .map_or(TxnEnd::Committed, |(_, e)| *e)
            }),
        })
        .collect();
    History {
        isolation: c.isolation,
        events,
        outcomes,
        txns,
        final_state: Default::default(),
        final_state_error: None,
    }
}

fn at(txn: u32, index: u32) -> StmtRef {
    StmtRef { txn, index }
}

#[test]
fn writers_that_do_not_overlap_are_judged() {
    let c = case(
        vec![
            committed(vec![add("t", 1, 5)]),
            committed(vec![add("t", 1, 1)]),
        ],
        "1 1 1 2 2 2",
        Isolation::ReadCommitted,
    );
    let h = history(&c, &[], &[]);
    assert_eq!(unsound_reason(&c, &h, &maria()), None);
    assert_eq!(unsound_reason(&c, &h, &pg()), None);
}

#[test]
fn a_commit_inside_a_write_window_on_its_tables_is_undecided() {
    // T2 writes t before T1 commits and commits after: in commit order T1's
    // write comes first, but T2's write did not see it.
    let txns = |t2: &str| {
        vec![
            committed(vec![add("t", 1, 5)]),
            committed(vec![add(t2, 2, 1)]),
        ]
    };
    let c = case(txns("t"), "1 1 2 2 1 2", Isolation::ReadCommitted);
    let h = history(&c, &[], &[]);
    assert_eq!(
        unsound_reason(&c, &h, &maria()),
        Some(Unsound::CommitDuringWrite)
    );
    // The same schedule over disjoint tables is judged.
    let c = case(txns("u"), "1 1 2 2 1 2", Isolation::ReadCommitted);
    let h = history(&c, &[], &[]);
    assert_eq!(unsound_reason(&c, &h, &maria()), None);
}

#[test]
fn a_write_that_waited_is_left_to_view() {
    let c = case(
        vec![
            committed(vec![add("t", 1, 5)]),
            committed(vec![add("t", 1, 1)]),
        ],
        "1 1 2 2 1 2",
        Isolation::ReadCommitted,
    );
    let h = history(&c, &[at(2, 1)], &[]);
    assert_eq!(unsound_reason(&c, &h, &maria()), Some(Unsound::WriteWaited));
}

#[test]
fn a_write_that_waited_for_a_holder_that_rolled_back_is_judged() {
    // T2's write waits for T1's lock; T1 rolls back: no committed state
    // changed while T2 waited.
    let c = case(
        vec![
            (false, vec![Stmt::begin(), add("t", 1, 5), Stmt::Rollback]),
            committed(vec![add("t", 1, 1)]),
        ],
        "1 1 2 2 1 2",
        Isolation::ReadCommitted,
    );
    let h = history(&c, &[at(2, 1)], &[(1, TxnEnd::RolledBack)]);
    assert_eq!(unsound_reason(&c, &h, &maria()), None);
    assert_eq!(unsound_reason(&c, &h, &pg()), None);
}

#[test]
fn rolled_back_writes_matter_only_where_uncommitted_versions_are_visible() {
    // T1 writes t and rolls back after T2's autocommit write of t.
    let c = |iso| {
        case(
            vec![
                (false, vec![Stmt::begin(), add("t", 1, 5), Stmt::Rollback]),
                autocommit(vec![add("t", 2, 1)]),
            ],
            "1 1 2 1",
            iso,
        )
    };
    let rc = c(Isolation::ReadCommitted);
    let h = history(&rc, &[], &[(1, TxnEnd::RolledBack)]);
    assert_eq!(unsound_reason(&rc, &h, &maria()), None);
    let ru = c(Isolation::ReadUncommitted);
    let h = history(&ru, &[], &[(1, TxnEnd::RolledBack)]);
    assert_eq!(
        unsound_reason(&ru, &h, &maria()),
        Some(Unsound::UncommittedWriteVisible)
    );
}

#[test]
fn snapshot_writes_count_from_the_transaction_start() {
    // T1 reads u (its snapshot), T2's autocommit write of t commits, then T1
    // writes t: a current-read engine sees T2's row, a snapshot engine does
    // not (it would fail with 40001 if the rows met).
    let c = |iso| {
        case(
            vec![
                committed(vec![select("u", None), add("t", 1, 5)]),
                autocommit(vec![add("t", 2, 1)]),
            ],
            "1 1 2 1 1",
            iso,
        )
    };
    let rc = c(Isolation::ReadCommitted);
    let h = history(&rc, &[], &[]);
    assert_eq!(unsound_reason(&rc, &h, &maria()), None);
    assert_eq!(unsound_reason(&rc, &h, &pg()), None);
    let rr = c(Isolation::RepeatableRead);
    let h = history(&rr, &[], &[]);
    assert_eq!(
        unsound_reason(&rr, &h, &pg()),
        Some(Unsound::CommitDuringWrite)
    );
}

#[test]
fn foreign_keys_link_the_tables_a_write_depends_on() {
    let mut c = case(Vec::new(), "", Isolation::ReadCommitted);
    c.schema.tables[1].foreign_keys.push(ForeignKey {
        columns: vec!["k".into()],
        ref_table: "t".into(),
        ref_columns: vec!["k".into()],
        ..ForeignKey::default()
    });
    let tables = depends_on(&add("t", 1, 1), &c.schema);
    assert!(tables.contains("u"), "{tables:?}");
    let tables = depends_on(&add("u", 1, 1), &c.schema);
    assert!(tables.contains("t"), "{tables:?}");
}
