//! The shadow comparison on SQLite runs, and on histories changed by hand in
//! each way a user could see.

use super::*;
use crate::engine::fault::{Fault, FaultyEngine};
use crate::engine::sqlite::SqliteEngine;
use crate::exec::execute;
use crate::model::{Event, Isolation, StmtError};
use crate::testkit::*;

/// Two transactions that conflict on `t` (the second waits on SQLite's write
/// lock until the first commits) and a reader of both rows.
fn conflicting() -> TestCase {
    let mut c = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![set("t", 1, 11), select("t", None)]),
            committed(vec![add("t", 2, 5)]),
            autocommit(vec![select("t", None)]),
        ],
        "1 1 2 2 1 1 2 3",
    );
    c.isolation = Isolation::Serializable;
    c
}

fn run(engine: &mut dyn Engine, case: &TestCase) -> (History, Vec<Finding>, CheckStats) {
    engine.load(case).unwrap();
    let h = execute(engine, case, &ExecOptions::default()).unwrap();
    let mut stats = CheckStats::default();
    let f = check(engine, case, &h, &ExecOptions::default(), &mut stats).unwrap();
    (h, f, stats)
}

#[test]
fn the_plain_run_of_sqlite_agrees_with_the_instrumented_one() {
    let case = conflicting();
    let mut e = SqliteEngine::open(None).unwrap();
    let (h, findings, stats) = run(&mut e, &case);
    assert!(h.blocked_events() > 0, "the case waits: {:?}", h.events);
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(stats.per_oracle[NAME].checked, 1);
    // The shadow ran on the case's own columns only.
    let state = e.final_state(&case.schema).unwrap();
    assert_eq!(state["t"][0].len(), 2, "{state:?}");
}

/// T2 reads while T1 holds SQLite's write lock: a plain read does not wait.
fn read_beside_a_writer() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![set("t", 1, 11)]),
            committed(vec![select("t", None)]),
        ],
        "1 1 2 2 1 2",
    )
}

/// SQLite under the fault `extra-lock`: each instrumented read takes the
/// write lock.
fn extra_lock() -> FaultyEngine {
    FaultyEngine::new(
        Box::new(SqliteEngine::open(None).unwrap()),
        Fault::ExtraLock,
    )
}

#[test]
fn an_extra_lock_taken_by_the_instrumentation_is_a_fidelity_finding() {
    let (_, findings, _) = run(&mut extra_lock(), &read_beside_a_writer());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].oracle, NAME);
    let whats: Vec<&str> = findings[0].evidence["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["what"].as_str())
        .collect();
    assert!(whats.contains(&"wait"), "{}", findings[0].evidence);
}

/// The same extra lock in the judged run alone, not when the case runs
/// again: a difference that does not reproduce is no finding, and the case
/// is undecided (`not-reproduced`), counted.
#[test]
fn a_difference_that_does_not_reproduce_is_undecided() {
    let mut e = extra_lock().first_runs(1);
    let (h, findings, stats) = run(&mut e, &read_beside_a_writer());
    assert!(
        h.blocked_events() > 0,
        "the judged run waited: {:?}",
        h.events
    );
    assert!(findings.is_empty(), "{findings:?}");
    let counts = &stats.per_oracle[NAME];
    assert_eq!(counts.checked, 0, "{stats:?}");
    assert_eq!(
        counts.undecided_by.get("not-reproduced"),
        Some(&1),
        "{stats:?}"
    );
    // The shadow, the judged run again and its shadow.
    assert_eq!(stats.replays, 3, "{stats:?}");
}

/// SQLite writes nothing for an UPDATE that leaves a row as it was, so T2's
/// no-op commit does not make T1's snapshot stale; an instrumented UPDATE
/// that appended to `wl` anyway once did (T1's UPDATE then failed with
/// SQLITE_BUSY_SNAPSHOT). The row is reported as matched and unchanged.
#[test]
fn a_sqlite_noop_update_stays_a_noop() {
    let case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![select("t", None), set("t", 2, 5)]),
            autocommit(vec![set("t", 1, 10)]),
        ],
        "1 1 2 1 1",
    );
    let mut e = SqliteEngine::open(None).unwrap();
    let (h, findings, stats) = run(&mut e, &case);
    let noop = h.outcome(StmtRef { txn: 2, index: 0 }).unwrap();
    assert!(noop.writes.is_empty(), "{noop:?}");
    assert_eq!(noop.unchanged.len(), 1, "{noop:?}");
    let later = h.outcome(StmtRef { txn: 1, index: 2 }).unwrap();
    assert!(later.ok() && later.writes.len() == 1, "{later:?}");
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(stats.per_oracle[NAME].checked, 1);
}

/// The recorded SQLite history of [`conflicting`] and its shadow.
fn pair() -> (TestCase, History, History) {
    let case = conflicting();
    let mut e = SqliteEngine::open(None).unwrap();
    e.load(&case).unwrap();
    let h = execute(&mut e, &case, &ExecOptions::default()).unwrap();
    e.load_as(&case, Layout::Plain).unwrap();
    let prepared = prepare_case(e.dialect(), &case)
        .into_iter()
        .map(|(r, p)| (r, p.uninstrumented()))
        .collect();
    let s = execute_prepared(&mut e, &case, &prepared, &ExecOptions::default()).unwrap();
    (case, h, s)
}

fn kinds(c: Comparison) -> Vec<&'static str> {
    match c {
        Comparison::Differ(d) => d.iter().map(|d| d.what).collect(),
        other => panic!("expected differences, got {other:?}"),
    }
}

#[test]
fn each_thing_a_user_sees_is_compared() {
    let (case, h, s) = pair();
    assert_eq!(
        compare(Dialect::Sqlite, None, &case, &h, &s),
        Comparison::Agree
    );
    let reader = StmtRef { txn: 3, index: 0 };
    let idx = |h: &History| h.outcomes.iter().position(|o| o.stmt == reader).unwrap();

    let mut rows = s.clone();
    let i = idx(&rows);
    rows.outcomes[i].outcome.rows[0][1] = Value::Int(99);
    assert_eq!(
        kinds(compare(Dialect::Sqlite, None, &case, &h, &rows)),
        ["result"]
    );

    let mut affected = s.clone();
    affected.outcomes[i].outcome.affected += 1;
    assert_eq!(
        kinds(compare(Dialect::Sqlite, None, &case, &h, &affected)),
        ["affected"]
    );

    let mut error = s.clone();
    error.outcomes[i].outcome.error = Some(StmtError {
        class: crate::model::ErrorClass::Busy,
        code: "5".into(),
        message: "database is locked".into(),
    });
    assert_eq!(
        kinds(compare(Dialect::Sqlite, None, &case, &h, &error)),
        ["error"]
    );
    // Where the level may abort anywhere (SSI), such an error is undecided.
    let mut ssi = s.clone();
    ssi.outcomes[i].outcome.error = Some(StmtError {
        class: crate::model::ErrorClass::SerializationFailure,
        code: "40001".into(),
        message: "could not serialize access".into(),
    });
    let anywhere = Some(crate::model::ErrorClass::SerializationFailure);
    assert_eq!(
        compare(Dialect::Sqlite, anywhere, &case, &h, &ssi),
        Comparison::Undecided(Undecided::PlanDependentAbort)
    );
    assert_eq!(
        kinds(compare(Dialect::Sqlite, anywhere, &case, &h, &error)),
        ["error"]
    );

    let mut state = s.clone();
    state.final_state.get_mut("t").unwrap()[0][1] = Value::Int(0);
    assert_eq!(
        kinds(compare(Dialect::Sqlite, None, &case, &h, &state)),
        ["final-state"]
    );

    let mut waited = s.clone();
    waited
        .events
        .retain(|e| !matches!(e.kind, EventKind::Blocked { .. }));
    assert!(kinds(compare(Dialect::Sqlite, None, &case, &h, &waited)).contains(&"wait"));
}

#[test]
fn timeouts_and_resumed_runs_leave_the_case_undecided() {
    let (case, h, s) = pair();
    let mut timed = s.clone();
    timed.events.push(Event {
        stmt: StmtRef { txn: 3, index: 0 },
        kind: EventKind::TimedOut,
        at_us: 0,
    });
    assert_eq!(
        compare(Dialect::Sqlite, None, &case, &h, &timed),
        Comparison::Undecided(Undecided::TimedOut)
    );
    // Two completions resumed by one release, and a difference.
    let mut racy = s.clone();
    for r in [StmtRef { txn: 1, index: 1 }, StmtRef { txn: 2, index: 1 }] {
        racy.events.push(Event {
            stmt: r,
            kind: EventKind::Completed {
                ok: true,
                resumed: true,
            },
            at_us: 0,
        });
    }
    racy.final_state.get_mut("t").unwrap()[0][1] = Value::Int(0);
    assert_eq!(
        compare(Dialect::Sqlite, None, &case, &h, &racy),
        Comparison::Undecided(Undecided::ResumedOrder)
    );
    // Two statements waiting at once: the engine picks which goes first.
    let mut waiters = s.clone();
    let at = waiters.events.len() - 1;
    for r in [StmtRef { txn: 1, index: 1 }, StmtRef { txn: 2, index: 1 }] {
        waiters.events.insert(
            at,
            Event {
                stmt: r,
                kind: EventKind::Blocked { blocker: None },
                at_us: 0,
            },
        );
    }
    waiters.final_state.get_mut("t").unwrap()[0][1] = Value::Int(0);
    assert_eq!(
        compare(Dialect::Sqlite, None, &case, &h, &waiters),
        Comparison::Undecided(Undecided::ConcurrentWaiters)
    );
}

#[test]
fn sampling_is_reproducible_and_near_the_rate() {
    let picked = (0..10_000).filter(|&i| sampled(7, i, 0.05)).count();
    assert!((350..650).contains(&picked), "{picked}");
    assert!((0..100).all(|i| sampled(7, i, 0.05) == sampled(7, i, 0.05)));
    assert!(!(0..100).any(|i| sampled(7, i, 0.0)));
    assert!((0..100).all(|i| sampled(7, i, 1.0)));
}

/// Two runs that rolled back different deadlock victims give a finding of
/// its own kind, naming both victims; a deadlock in one run only stays an
/// `error` difference.
#[test]
fn a_different_deadlock_victim_is_named() {
    let case = conflicting();
    let deadlock = json!({ "class": "deadlock", "code": "1213 (40001)" });
    let error = |txn: u32, instrumented: serde_json::Value, plain: serde_json::Value| Difference {
        what: "error",
        stmt: Some(StmtRef { txn, index: 0 }),
        instrumented,
        plain,
    };
    let swapped = [
        error(1, serde_json::Value::Null, deadlock.clone()),
        error(2, deadlock.clone(), serde_json::Value::Null),
    ];
    let f = finding(&case, &swapped);
    assert_eq!(f.kind, "deadlock-victim");
    assert!(
        f.summary.contains("T1 without it, T2 with it"),
        "{}",
        f.summary
    );
    assert_eq!(
        f.evidence["deadlock_victims"],
        json!({ "plain": 1, "instrumented": 2 })
    );
    let one_run_only = [error(1, serde_json::Value::Null, deadlock)];
    let f = finding(&case, &one_run_only);
    assert_eq!(f.kind, "error");
    assert!(f.evidence.get("deadlock_victims").is_none());
}

/// Equal outcomes from a shadow whose statements completed in another order
/// (the engine served the waiters otherwise) are no agreement: the case is
/// undecided (`completion-order`), counted, and retried.
#[test]
fn equal_outcomes_in_another_completion_order_do_not_agree() {
    let (case, h, s) = pair();
    let completed: Vec<usize> = s
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, EventKind::Completed { .. }))
        .map(|(i, _)| i)
        .collect();
    let (a, b) = (
        completed[completed.len() - 2],
        completed[completed.len() - 1],
    );
    let mut reordered = s.clone();
    reordered.events.swap(a, b);
    assert_eq!(
        compare(Dialect::Sqlite, None, &case, &h, &s),
        Comparison::Agree
    );
    assert_eq!(
        compare(Dialect::Sqlite, None, &case, &h, &reordered),
        Comparison::Undecided(Undecided::CompletionOrder)
    );
}
