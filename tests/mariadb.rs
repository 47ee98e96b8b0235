//! The MariaDB engine against a live server (`TXFUZZ_MYSQL_URL`): blocking is
//! reported by the server (fast, with the blocker), non-conflicting statements
//! never block, deadlocks abort, cancellation is clean, instrumentation and
//! error codes work, reset restores the initial state, and the wss oracle
//! reports nothing on serialisable scripted cases.

mod common;

use std::time::{Duration, Instant};
use txfuzz::campaign::run_case;
use txfuzz::engine::mysql::MysqlEngine;
use txfuzz::engine::{Engine, EngineError, WaitSignal};
use txfuzz::exec::{execute, ExecOptions};
use txfuzz::model::{
    ErrorClass, EventKind, History, Isolation, Stmt, StmtRef, TestCase, TxnEnd, Value,
};
use txfuzz::oracle::{CheckStats, OracleKind};
use txfuzz::testkit::*;

fn at(txn: u32, index: u32) -> StmtRef {
    StmtRef { txn, index }
}

fn with_iso(mut case: TestCase, iso: Isolation) -> TestCase {
    case.isolation = iso;
    case
}

fn run(url: &str, case: &TestCase) -> History {
    let mut e = common::mariadb(url);
    e.load(case).unwrap();
    execute(&mut e, case, &ExecOptions::default()).unwrap()
}

fn event_at(h: &History, r: StmtRef, pred: impl Fn(&EventKind) -> bool) -> Option<(usize, u64)> {
    h.events
        .iter()
        .enumerate()
        .find(|(_, e)| e.stmt == r && pred(&e.kind))
        .map(|(i, e)| (i, e.at_us))
}

fn completed(h: &History, r: StmtRef) -> Option<usize> {
    event_at(h, r, |k| matches!(k, EventKind::Completed { .. })).map(|(i, _)| i)
}

#[test]
fn second_writer_blocks_fast_behind_the_first() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = with_iso(
        kv_case(
            &[(1, 10), (2, 20)],
            vec![
                committed(vec![add("t", 1, 1)]),
                committed(vec![add("t", 1, 5)]),
            ],
            "1 1 2 2 1 2",
        ),
        Isolation::RepeatableRead,
    );
    let h = run(&url, &case);
    let (sub_i, sub_us) = event_at(&h, at(2, 1), |k| *k == EventKind::Submitted).unwrap();
    let (blk_i, blk_us) = event_at(&h, at(2, 1), |k| matches!(k, EventKind::Blocked { .. }))
        .unwrap_or_else(|| panic!("T2's UPDATE must be reported blocked: {:#?}", h.events));
    assert_eq!(
        h.events[blk_i].kind,
        EventKind::Blocked { blocker: Some(1) },
        "{:#?}",
        h.events
    );
    let latency = blk_us - sub_us;
    eprintln!("blocked-detection latency: {latency} us");
    assert!(latency < 50_000, "{latency} us");
    let t1_commit = completed(&h, at(1, 2)).unwrap();
    let t2_update = completed(&h, at(2, 1)).unwrap();
    assert!(sub_i < blk_i && blk_i < t1_commit && t1_commit < t2_update);
    assert_eq!(h.txn_end(1), Some(TxnEnd::Committed));
    assert_eq!(h.txn_end(2), Some(TxnEnd::Committed));
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(16)));
    assert_eq!(value_of(&h.final_state, "t", 2), Some(Value::Int(20)));
    assert_eq!(h.final_state["t"][0][1], Value::Text("0,2,5".into()));
}

#[test]
fn non_conflicting_statements_never_block() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = with_iso(
        kv_case(
            &[(1, 10), (2, 20)],
            vec![
                committed(vec![add("t", 1, 1), select("t", None)]),
                committed(vec![
                    add("t", 2, 1),
                    select("t", Some(1)),
                    select("t", None),
                ]),
                committed(vec![select("t", None)]),
            ],
            "1 2 1 2 3 2 1 3 2 1 2 3",
        ),
        Isolation::RepeatableRead,
    );
    let h = run(&url, &case);
    assert_eq!(h.blocked_events(), 0, "{:#?}", h.events);
    assert_eq!(h.aborts(), 0);
    // T2 does not see T1's uncommitted write.
    let o = h.outcome(at(2, 2)).unwrap();
    assert_eq!(o.rows, vec![vec![Value::Int(1), Value::Int(10)]]);
    assert_eq!(o.reads[0].wl, "0");
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(11)));
    assert_eq!(value_of(&h.final_state, "t", 2), Some(Value::Int(21)));
}

#[test]
fn deadlock_aborts_one_transaction() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = with_iso(
        kv_case(
            &[(1, 10), (2, 20)],
            vec![
                committed(vec![add("t", 1, 1), add("t", 2, 1)]),
                committed(vec![add("t", 2, 10), add("t", 1, 10)]),
            ],
            "1 2 1 2 1 2 1 2",
        ),
        Isolation::RepeatableRead,
    );
    let h = run(&url, &case);
    let deadlocked: Vec<_> = h
        .outcomes
        .iter()
        .filter(|o| {
            o.outcome
                .error
                .as_ref()
                .is_some_and(|e| e.class == ErrorClass::Deadlock)
        })
        .collect();
    assert_eq!(deadlocked.len(), 1, "{:#?}", h.outcomes);
    let victim = deadlocked[0].stmt.txn;
    let survivor = 3 - victim;
    assert_eq!(h.txn_end(victim), Some(TxnEnd::Aborted));
    assert_eq!(h.txn_end(survivor), Some(TxnEnd::Committed));
    let (a, b) = if survivor == 1 { (11, 21) } else { (20, 30) };
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(a)));
    assert_eq!(value_of(&h.final_state, "t", 2), Some(Value::Int(b)));
}

#[test]
fn a_cancelled_blocked_statement_never_runs_later() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = kv_case(&[(1, 10)], vec![], "");
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let iso = Isolation::RepeatableRead;
    let mut holder = e.open_session(iso, WaitSignal::new()).unwrap();
    holder.query("BEGIN").unwrap();
    holder.query("UPDATE t SET v = 1 WHERE k = 1").unwrap();
    let signal = WaitSignal::new();
    let mut waiter = e.open_session(iso, signal.clone()).unwrap();
    let canceller = waiter.canceller();
    let worker = std::thread::spawn(move || {
        let r = waiter.query("UPDATE t SET v = 777 WHERE k = 1");
        (r, waiter)
    });
    common::wait_for_tick(&signal, "never blocked");
    canceller.cancel();
    let (r, mut waiter) = worker.join().unwrap();
    let err = r.unwrap_err();
    assert_eq!(err.class, ErrorClass::Cancelled, "{err:?}");
    assert!(err.code.starts_with("1317"), "{err:?}");
    // The connection is usable again; its transaction is rolled back by txfuzz.
    waiter.query("ROLLBACK").unwrap();
    holder.query("COMMIT").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let state = e.final_state(&case.schema).unwrap();
    assert_eq!(value_of(&state, "t", 1), Some(Value::Int(1)));
}

/// A statement that waits for a metadata lock (no InnoDB lock wait) is
/// reported as waiting: the probe reads the thread's state from
/// `SHOW PROCESSLIST`.
#[test]
fn a_metadata_lock_wait_is_reported() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = kv_case(&[(1, 10)], vec![], "");
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let iso = Isolation::RepeatableRead;
    let mut holder = e.open_session(iso, WaitSignal::new()).unwrap();
    holder.query("BEGIN").unwrap();
    holder.query("SELECT v FROM t WHERE k = 1").unwrap();
    let signal = WaitSignal::new();
    let mut waiter = e.open_session(iso, signal.clone()).unwrap();
    let worker = std::thread::spawn(move || waiter.query("ALTER TABLE t COMMENT 'waits'"));
    common::wait_for_tick(&signal, "the metadata-lock wait was never reported");
    assert!(!worker.is_finished());
    holder.query("COMMIT").unwrap();
    worker.join().unwrap().unwrap();
}

#[test]
fn instrumentation_reports_writes() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = with_iso(
        kv_case(
            &[(1, 10), (2, 20)],
            vec![committed(vec![
                add("t", 1, 1),
                insert("t", 50, 3, 30),
                delete("t", 2),
                add("t", 1, 1),
            ])],
            "1 1 1 1 1 1",
        ),
        Isolation::RepeatableRead,
    );
    let h = run(&url, &case);
    let upd = h.outcome(at(1, 1)).unwrap();
    assert!(upd.ok(), "{upd:?}");
    assert_eq!(upd.writes.len(), 1, "{upd:?}");
    assert_eq!(upd.writes[0].rid, 1);
    assert_eq!(upd.writes[0].before, Some("0".parse().unwrap()));
    assert_eq!(upd.writes[0].after, Some("0,2".parse().unwrap()));
    let ins = h.outcome(at(1, 2)).unwrap();
    assert_eq!(ins.writes.len(), 1, "{ins:?}");
    assert_eq!(ins.writes[0].before, None);
    assert_eq!(ins.writes[0].after, Some("3".parse().unwrap()));
    let del = h.outcome(at(1, 3)).unwrap();
    assert_eq!(del.writes.len(), 1, "{del:?}");
    assert_eq!(del.writes[0].rid, 2);
    assert_eq!(del.writes[0].before, Some("0".parse().unwrap()));
    assert_eq!(del.writes[0].after, None);
    let upd2 = h.outcome(at(1, 4)).unwrap();
    assert_eq!(upd2.writes[0].before, Some("0,2".parse().unwrap()));
    assert_eq!(upd2.writes[0].after, Some("0,2,5".parse().unwrap()));
    assert_eq!(h.final_state["t"].len(), 2);
}

#[test]
fn errors_are_classified_by_code() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = with_iso(
        kv_case(
            &[(1, 10)],
            vec![committed(vec![insert("t", 100, 1, 5), add("t", 1, 1)])],
            "1 1 1 1",
        ),
        Isolation::RepeatableRead,
    );
    let h = run(&url, &case);
    let err = h.outcome(at(1, 1)).unwrap().error.clone().unwrap();
    assert_eq!(err.class, ErrorClass::DuplicateKey, "{err:?}");
    assert!(err.code.starts_with("1062"), "{err:?}");
    assert_eq!(h.txn_end(1), Some(TxnEnd::Committed));
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(11)));

    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let mut s = e
        .open_session(Isolation::RepeatableRead, WaitSignal::new())
        .unwrap();
    let syntax = s.query("SELEC 1").unwrap_err();
    assert_eq!(syntax.class, ErrorClass::Syntax, "{syntax:?}");
    let nn = s.query("INSERT INTO t (rid, wl, k, v) VALUES (9, '0', NULL, 1)");
    assert_eq!(nn.unwrap_err().class, ErrorClass::NotNullViolation);
}

#[test]
fn unreachable_server_is_a_connect_error_without_password() {
    let start = Instant::now();
    let err = match MysqlEngine::connect("mysql://root:secret@127.0.0.1:1/x") {
        Err(e) => e,
        Ok(_) => panic!("connected to port 1"),
    };
    assert!(matches!(err, EngineError::Connect { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(!msg.contains("secret"), "{msg}");
    assert!(msg.contains("***"), "{msg}");
    assert!(start.elapsed() < Duration::from_secs(10));
    let err = match txfuzz::engine::open(Some("mariadb://root:secret@127.0.0.1:1/x")) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("connected to port 1"),
    };
    assert!(!err.contains("secret"), "{err}");
}

#[test]
fn engine_info_and_private_database() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let a = common::mariadb(&url);
    let b = common::mariadb(&url);
    assert_ne!(a.database(), b.database());
    let info = a.info();
    assert!(info.name == "mariadb" || info.name == "mysql");
    assert!(!info.version.is_empty());
    assert!(
        info.settings.contains_key("innodb_lock_wait_timeout"),
        "{info:?}"
    );
    assert_eq!(a.profile().isolations, Isolation::ALL.to_vec());
}

/// A lock held by a session that never lets go makes an admin round trip
/// miss its deadline: `Hung`, not a setup error; recovery moves to a new
/// private database that works while the old one is still locked; dropping
/// the engine removes both once the lock is gone, and restores the global
/// setting it changed.
#[test]
fn a_stuck_lock_on_the_admin_connection_is_a_hang_and_recovery_works_around_it() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = kv_case(&[(1, 10)], vec![], "");
    let mut e = common::mariadb(&url);
    e.set_deadline(Duration::from_secs(1));
    e.load(&case).unwrap();
    let old = e.database().to_string();
    let mut other = common::mariadb(&url);
    let mut holder = other
        .open_session(Isolation::ReadCommitted, WaitSignal::new())
        .unwrap();
    holder.query(&format!("LOCK TABLES {old}.t WRITE")).unwrap();
    let started = Instant::now();
    let err = e.reset().unwrap_err();
    assert!(matches!(err, EngineError::Hung(_)), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    e.recover(Duration::from_secs(10), &|| false).unwrap();
    assert_ne!(e.database(), old);
    e.reset().unwrap();
    let v = e.final_state(&case.schema).unwrap();
    assert_eq!(v["t"].len(), 1, "{v:?}");
    let new = e.database().to_string();
    holder.query("UNLOCK TABLES").unwrap();
    drop(e);
    let left = holder
        .query(&format!(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('{old}', '{new}')"
        ))
        .unwrap();
    assert!(left.rows.is_empty(), "old {old}, new {new}: {left:?}");
}

#[test]
fn reset_restores_the_initial_state() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = with_iso(
        kv_case(
            &[(1, 10), (2, 20)],
            vec![committed(vec![
                add("t", 1, 1),
                delete("t", 2),
                insert("t", 9, 5, 50),
            ])],
            "1 1 1 1 1",
        ),
        Isolation::RepeatableRead,
    );
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let initial = e.final_state(&case.schema).unwrap();
    let h = execute(&mut e, &case, &ExecOptions::default()).unwrap();
    assert_ne!(h.final_state, initial);
    e.reset().unwrap();
    assert_eq!(e.final_state(&case.schema).unwrap(), initial);
}

/// Three tables of 8 rows each: reset restores every table, again and again
/// (its time is measured by `txfuzz bench`, BENCHMARKS.md "Reset time").
#[test]
fn reset_restores_every_table_repeatedly() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = with_iso(
        kv_case(
            &(1..=8).map(|k| (k, k * 10)).collect::<Vec<_>>(),
            vec![committed(vec![
                add("t", 1, 1),
                add("u", 2, 1),
                delete("w", 3),
            ])],
            "1 1 1 1 1",
        ),
        Isolation::RepeatableRead,
    );
    let base = case.schema.tables[0].clone();
    let data = case.data[0].clone();
    for (i, name) in ["u", "w"].iter().enumerate() {
        let mut t = base.clone();
        t.name = (*name).into();
        case.schema.tables.push(t);
        let mut d = data.clone();
        d.table = (*name).into();
        for r in &mut d.rows {
            r.rid += 100 * (i as i64 + 1);
        }
        case.data.push(d);
    }
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let initial = e.final_state(&case.schema).unwrap();
    let h = execute(&mut e, &case, &ExecOptions::default()).unwrap();
    for table in ["t", "u", "w"] {
        assert_ne!(h.final_state[table], initial[table], "{table}");
    }
    for _ in 0..20 {
        e.reset().unwrap();
        assert_eq!(e.final_state(&case.schema).unwrap(), initial);
    }
    assert_eq!(e.final_state(&case.schema).unwrap()["w"].len(), 8);
}

fn overlapping_updates() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![add("t", 1, 5), select("t", None)]),
        ],
        "1 2 1 1 2 2 2",
    )
}

fn update_after_concurrent_commit() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1), select("t", None)]),
            committed(vec![add("t", 1, 5)]),
        ],
        "1 2 2 2 1 1 1",
    )
}

fn disjoint_writers_and_a_reader() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![add("t", 2, 2)]),
            autocommit(vec![select("t", None)]),
        ],
        "1 2 1 2 1 2 3",
    )
}

fn rolled_back_writer() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            (false, vec![Stmt::begin(), set("t", 1, 99), Stmt::Rollback]),
            committed(vec![add("t", 1, 1), select("t", Some(1))]),
        ],
        "1 1 2 2 1 2 2",
    )
}

#[test]
fn wss_finds_nothing_on_serialisable_cases() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::mariadb(&url);
    for iso in Isolation::ALL {
        for case in [
            overlapping_updates(),
            update_after_concurrent_commit(),
            disjoint_writers_and_a_reader(),
            rolled_back_writer(),
        ] {
            let case = with_iso(case, iso);
            let mut stats = CheckStats::default();
            let (h, findings) = run_case(
                &mut e,
                &case,
                &[OracleKind::Wss],
                &ExecOptions::default(),
                &mut stats,
            )
            .unwrap();
            assert!(
                findings.is_empty(),
                "{iso:?}: {findings:#?}\n{:#?}",
                h.events
            );
        }
    }
}

/// The known issue `mariadb-savepoint-before-first-statement`: at SERIALIZABLE,
/// T1's read after a savepoint (taken before its first statement) takes a
/// shared lock that blocks T2's UPDATE; ROLLBACK TO SAVEPOINT releases it, so
/// T2 commits before T1 does.
#[test]
fn rollback_to_savepoint_releases_the_locks_taken_after_it() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    use txfuzz::model::Stmt;
    let case = with_iso(
        kv_case(
            &[(1, 10), (2, 20)],
            vec![
                (
                    false,
                    vec![
                        Stmt::begin(),
                        Stmt::Savepoint("sp1".into()),
                        select("t", Some(1)),
                        Stmt::RollbackTo("sp1".into()),
                        select("t", Some(2)),
                        Stmt::Commit,
                    ],
                ),
                autocommit(vec![add("t", 1, 5)]),
            ],
            "1 1 1 2 1 1 1",
        ),
        Isolation::Serializable,
    );
    let h = run(&url, &case);
    assert!(
        event_at(&h, at(2, 0), |k| matches!(k, EventKind::Blocked { .. })).is_some(),
        "T2 must first wait for T1's shared lock: {:#?}",
        h.events
    );
    let t2_done = completed(&h, at(2, 0)).unwrap();
    let t1_commit = completed(&h, at(1, 5)).unwrap();
    assert!(
        t2_done < t1_commit,
        "T2's UPDATE resumed only at T1's COMMIT: MariaDB kept the lock (the known issue is fixed: update known-issues.toml)"
    );
    // Contrary to the manual: not a profile fact (the profile says locks are
    // kept), but a known issue, so findings resting on it are known violations.
    assert!(
        !MysqlEngine::connect(&url)
            .unwrap()
            .profile()
            .savepoint_rollback_releases_locks
    );
    assert!(txfuzz::finding::known::KnownIssues::builtin()
        .issues
        .iter()
        .any(|i| i.id == "mariadb-savepoint-before-first-statement"));
}

#[test]
fn autocommit_locking_read_evaluates_its_subquery_in_an_earlier_read_view() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    // T1 sets k=1's v to 7 and inserts k=2 with v=7. T2's autocommit locking
    // read scans k=0 (evaluating its subquery there), waits for k=1's row
    // lock, then reads the outer rows current but evaluates the subquery in a
    // read view from before T1 committed. Serial results: {(1,10)} (T2 first)
    // or {(0,7),(1,7),(2,7)} (T1 first).
    let case = txfuzz::testkit::mariadb_bugs::locking_read_subquery_read_view();
    let h = run(&url, &case);
    assert!(
        event_at(&h, at(2, 0), |k| matches!(k, EventKind::Blocked { .. })).is_some(),
        "the locking read must wait for T1's row lock: {:#?}",
        h.events
    );
    let mut rows = h.outcome(at(2, 0)).unwrap().rows.clone();
    rows.sort();
    eprintln!("{rows:?}");
    let serial = [
        vec![vec![Value::Int(1), Value::Int(10)]],
        vec![
            vec![Value::Int(0), Value::Int(7)],
            vec![Value::Int(1), Value::Int(7)],
            vec![Value::Int(2), Value::Int(7)],
        ],
    ];
    assert!(
        !serial.contains(&rows),
        "MariaDB's result {rows:?} is now serial (the known issue is fixed: update known-issues.toml)"
    );
    assert!(
        MysqlEngine::connect(&url)
            .unwrap()
            .profile()
            .locking_read_subqueries_use_statement_snapshot
    );
    assert!(txfuzz::finding::known::KnownIssues::builtin()
        .issues
        .iter()
        .any(|i| i.id == "innodb-locking-read-subquery-read-view"));
}

/// `SELECT k, v FROM t WHERE k = key FOR UPDATE`
fn select_for_update(t: &str, key: i64) -> Stmt {
    let Stmt::Select(mut s) = select(t, Some(key)) else {
        unreachable!()
    };
    s.lock = Some(txfuzz::model::LockMode::ForUpdate);
    Stmt::Select(s)
}

/// T1 reads k=2 (its first data statement), T3 inserts k=3 and commits, T1
/// locks k=1 `FOR UPDATE`, T2's autocommit UPDATE of k=1 waits for that lock,
/// T1 rolls back to `sp1`, reads the whole table (statement 5) and commits
/// (statement 6). `savepoint_first`: T1 takes `SAVEPOINT sp1` right after
/// BEGIN, before its first data statement; otherwise after its read of k=2.
/// Either way the lock on k=1 is taken after the savepoint.
fn savepoint_and_row_lock(savepoint_first: bool, iso: Isolation) -> TestCase {
    let sp = || Stmt::Savepoint("sp1".into());
    let (first, second) = if savepoint_first {
        (sp(), select("t", Some(2)))
    } else {
        (select("t", Some(2)), sp())
    };
    with_iso(
        kv_case(
            &[(1, 10), (2, 20)],
            vec![
                (
                    false,
                    vec![
                        Stmt::begin(),
                        first,
                        second,
                        select_for_update("t", 1),
                        Stmt::RollbackTo("sp1".into()),
                        select("t", None),
                        Stmt::Commit,
                    ],
                ),
                autocommit(vec![add("t", 1, 5)]),
                autocommit(vec![insert("t", 3, 3, 30)]),
            ],
            "1 1 1 3 1 2 1 1 1",
        ),
        iso,
    )
}

/// T1 committed and T2's UPDATE of k=1 took effect.
fn both_committed(h: &History, iso: Isolation) {
    assert_eq!(h.txn_end(1), Some(TxnEnd::Committed), "{iso:?}");
    assert!(
        h.outcome(at(2, 0)).unwrap().ok(),
        "{iso:?}: {:#?}",
        h.outcomes
    );
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(15)));
}

fn sorted_rows(h: &History, r: StmtRef) -> Vec<Vec<Value>> {
    let mut rows = h
        .outcome(r)
        .unwrap_or_else(|| panic!("no outcome for {r:?}: {:#?}", h.outcomes))
        .rows
        .clone();
    rows.sort();
    rows
}

fn kv_rows(rows: &[(i64, i64)]) -> Vec<Vec<Value>> {
    rows.iter()
        .map(|&(k, v)| vec![Value::Int(k), Value::Int(v)])
        .collect()
}

/// A SAVEPOINT taken before the transaction's first data statement is taken
/// before InnoDB has started its transaction (BEGIN does not start it), so
/// ROLLBACK TO that savepoint rolls back InnoDB's whole transaction: it
/// releases every row lock (here a `FOR UPDATE` lock on k=1, taken after the
/// savepoint) and, at REPEATABLE READ, discards the read view, so T1's next
/// read sees rows committed after its first read. This is what MariaDB 10.11
/// does today; its manual says InnoDB does not release row locks stored after
/// the savepoint (an engine bug; compare
/// `savepoint_after_the_first_statement_keeps_its_locks`).
#[test]
fn savepoint_before_the_first_statement_ends_the_innodb_transaction() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    for iso in [Isolation::Serializable, Isolation::RepeatableRead] {
        let h = run(&url, &savepoint_and_row_lock(true, iso));
        assert!(
            event_at(&h, at(2, 0), |k| matches!(k, EventKind::Blocked { .. })).is_some(),
            "{iso:?}: T2's UPDATE must first wait for T1's FOR UPDATE lock: {:#?}",
            h.events
        );
        let t2_done = completed(&h, at(2, 0)).unwrap();
        let t1_read_after = completed(&h, at(1, 5)).unwrap();
        let t1_commit = completed(&h, at(1, 6)).unwrap();
        assert!(
            t2_done < t1_read_after && t2_done < t1_commit,
            "{iso:?}: T2's UPDATE did not resume at T1's ROLLBACK TO SAVEPOINT: MariaDB now keeps \
             the row locks taken after a savepoint set before the first statement, as its manual \
             says (the engine bug is fixed; update known-issues.toml): {:#?}",
            h.events
        );
        both_committed(&h, iso);
        if iso == Isolation::RepeatableRead {
            // T1's first read was a consistent read of k=2 (it created the read view).
            assert_eq!(sorted_rows(&h, at(1, 2)), kv_rows(&[(2, 20)]));
            assert_eq!(
                sorted_rows(&h, at(1, 5)),
                kv_rows(&[(1, 15), (2, 20), (3, 30)]),
                "REPEATABLE READ: after ROLLBACK TO, T1 no longer sees T3's insert and T2's \
                 update, both committed after its first read: MariaDB now keeps the read view \
                 (the engine bug is fixed; update known-issues.toml)"
            );
        }
    }
}

/// Seed 5 case 7518 (REPEATABLE READ): T2 is `START TRANSACTION READ ONLY`;
/// its first data statement, a `SELECT ... FOR UPDATE`, is refused (1792)
/// before InnoDB joins the transaction, then T2 takes `SAVEPOINT sp1`, reads
/// (its read view), rolls back to `sp1` after T1's COMMIT and reads again:
/// it sees T1's commit, the known savepoint bug. The savepoint counts as
/// taken before the first statement because the refused one never reached
/// InnoDB (measured: a duplicate-key failure instead keeps the read view).
#[test]
fn a_statement_refused_in_a_read_only_transaction_does_not_start_the_innodb_transaction() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case =
        common::replay_case("repeatable-read-case7518-view-read-only-refused-then-savepoint.json");
    let mut e = common::open(&url);
    let (h, mut findings, _) = common::run_defaults(e.as_mut(), &case);
    txfuzz::finding::known::KnownIssues::builtin().mark(&mut findings, &case, &h, e.info());
    let refused = h
        .outcome(at(2, 1))
        .and_then(|o| o.error.as_ref().map(|e| e.class));
    assert_eq!(refused, Some(ErrorClass::ReadOnlyTransaction), "{h:#?}");
    // T2's last read (statement 8) shows T1's UPDATE of c0 = 7, committed
    // after T2's read view was made: the rollback discarded the view.
    let last = h.outcome(at(2, 8)).unwrap();
    assert!(
        last.rows.iter().any(|r| r[0] == Value::Text("ab".into())),
        "MariaDB kept T2's read view: the engine bug is fixed (update known-issues.toml): {last:#?}"
    );
    let view: Vec<_> = findings.iter().filter(|f| f.oracle == "view").collect();
    assert!(!view.is_empty(), "{findings:#?}");
    assert!(
        view.iter().all(|f| f.known.as_ref().map(|k| k.id.as_str())
            == Some("mariadb-savepoint-before-first-statement")),
        "{view:#?}"
    );
}

/// The documented behaviour, once InnoDB's transaction has started (T1 ran a
/// data statement before SAVEPOINT): ROLLBACK TO SAVEPOINT keeps the row lock
/// T1 took after the savepoint, so T2's UPDATE waits until T1 commits, and at
/// REPEATABLE READ T1 keeps its read view.
#[test]
fn savepoint_after_the_first_statement_keeps_its_locks() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    for iso in [Isolation::Serializable, Isolation::RepeatableRead] {
        let h = run(&url, &savepoint_and_row_lock(false, iso));
        assert!(
            event_at(&h, at(2, 0), |k| matches!(k, EventKind::Blocked { .. })).is_some(),
            "{iso:?}: T2's UPDATE must first wait for T1's FOR UPDATE lock: {:#?}",
            h.events
        );
        let t2_done = completed(&h, at(2, 0)).unwrap();
        let t1_commit = completed(&h, at(1, 6)).unwrap();
        assert!(
            t1_commit < t2_done,
            "{iso:?}: T2's UPDATE resumed before T1's COMMIT: MariaDB released a row lock taken \
             after the savepoint although T1's InnoDB transaction had started: {:#?}",
            h.events
        );
        both_committed(&h, iso);
        if iso == Isolation::RepeatableRead {
            assert_eq!(
                sorted_rows(&h, at(1, 5)),
                kv_rows(&[(1, 10), (2, 20)]),
                "REPEATABLE READ: T1 kept its read view across ROLLBACK TO"
            );
        }
    } // The documented behaviour is the profile's: locks survive ROLLBACK TO.
    assert!(
        !common::mariadb(&url)
            .profile()
            .savepoint_rollback_releases_locks
    );
}

/// `UPDATE t SET v = v + delta` (every row).
fn add_to_every_row(t: &str, delta: i64) -> Stmt {
    use txfuzz::model::{Assignment, BinOp, Expr, Update};
    Stmt::Update(Update {
        table: t.into(),
        assignments: vec![Assignment {
            column: "v".into(),
            value: Expr::bin(BinOp::Add, Expr::col("v"), Expr::Lit(Value::Int(delta))),
        }],
        where_: None,
    })
}

/// Unique keys are checked row by row, not at the statement's end: with
/// `v UNIQUE` holding 1 (k=1) and 2 (k=2), `UPDATE t SET v = v + 1` visits k=1
/// first and fails on the duplicate 2, although its end state (2, 3) would be
/// unique; the same update visiting rows in descending `v` order succeeds.
/// (The txfuzz IR has no UPDATE ... ORDER BY, so the ordered updates are raw SQL.)
#[test]
fn unique_keys_are_checked_row_by_row() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = with_iso(
        kv_case(
            &[(1, 1), (2, 2)],
            vec![autocommit(vec![add_to_every_row("t", 1)])],
            "1",
        ),
        Isolation::RepeatableRead,
    );
    case.schema.tables[0].uniques = vec![vec!["v".into()]];
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let h = execute(&mut e, &case, &ExecOptions::default()).unwrap();
    let err = h
        .outcome(at(1, 0))
        .unwrap()
        .error
        .clone()
        .unwrap_or_else(|| {
            panic!(
                "UPDATE t SET v = v + 1 succeeded: MariaDB now checks unique keys at the \
                 statement's end (update the profile): {:#?}",
                h.outcomes
            )
        });
    assert_eq!(err.class, ErrorClass::DuplicateKey, "{err:?}");
    assert!(err.code.starts_with("1062"), "{err:?}");
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(1)));
    assert_eq!(value_of(&h.final_state, "t", 2), Some(Value::Int(2)));

    let mut s = e
        .open_session(Isolation::RepeatableRead, WaitSignal::new())
        .unwrap();
    let asc = s
        .query("UPDATE t SET v = v + 1 ORDER BY v ASC")
        .unwrap_err();
    assert_eq!(asc.class, ErrorClass::DuplicateKey, "{asc:?}");
    let desc = s
        .query("UPDATE t SET v = v + 1 ORDER BY v DESC")
        .unwrap_or_else(|e| panic!("the descending update must succeed: {e:?}"));
    assert_eq!(desc.affected, 2);
    let state = e.final_state(&case.schema).unwrap();
    assert_eq!(value_of(&state, "t", 1), Some(Value::Int(2)));
    assert_eq!(value_of(&state, "t", 2), Some(Value::Int(3)));
    assert!(
        e.profile().unique_checked_per_row.is_some(),
        "the profile must permit order-dependent unique errors"
    );
}

/// The fact behind `temporary_foreign_keys: false`: MariaDB refuses a
/// foreign key between temporary tables (errno 150), so the `view` oracle's
/// scratch tables (temporary) have none and a foreign-key error there is
/// undecided.
#[test]
fn temporary_tables_cannot_have_foreign_keys() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::mariadb(&url);
    let mut s = e
        .open_session(Isolation::RepeatableRead, WaitSignal::new())
        .unwrap();
    s.query("CREATE TEMPORARY TABLE tp (k INT PRIMARY KEY) ENGINE=InnoDB")
        .unwrap();
    let err = s
        .query(
            "CREATE TEMPORARY TABLE tc (k INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES tp (k)) ENGINE=InnoDB",
        )
        .expect_err("a temporary table with a foreign key was created (update the profile)");
    assert!(err.code.starts_with("1005"), "{err:?}");
    assert!(!e.profile().temporary_foreign_keys);
}

/// An error in a later statement of a multi-statement text is an error of
/// the text (load and reset batches rely on it).
#[test]
fn errors_of_later_statements_in_a_text_are_reported() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::mariadb(&url);
    let mut s = e
        .open_session(Isolation::ReadCommitted, WaitSignal::new())
        .unwrap();
    let r = s.query("SELECT 1; SELECT * FROM no_such_table");
    assert!(r.is_err(), "{r:?}");
    assert!(s.query("SET @a = 1; SELECT * FROM no_such_table").is_err());
    assert!(s.query("DO 1; DO 2; SELECT * FROM no_such_table").is_err());
}

/// The URL's database must exist (txfuzz works next to it, in a database of
/// its own): a wrong name is a connection error naming it, not ignored.
#[test]
fn the_url_database_must_exist() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let base = url;
    let (server, _db) = base.rsplit_once('/').unwrap();
    let err = MysqlEngine::connect(&format!("{server}/txfuzz_no_such_db"))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("txfuzz_no_such_db"), "{err}");
}

/// A session's connection goes back to the engine's pool when the session
/// ends, and the next session starts as on a new connection: its open
/// transaction rolled back (the row lock released), session and user
/// variables and temporary tables gone, the connection's sql_mode and the new
/// session's isolation level in force.
#[test]
fn a_pooled_connection_keeps_nothing_of_its_last_session() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = kv_case(&[(1, 10)], vec![], "");
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let scalar =
        |s: &mut Box<dyn txfuzz::engine::Session>, q: &str| s.query(q).unwrap().rows[0][0].clone();
    let mut a = e
        .open_session(Isolation::Serializable, WaitSignal::new())
        .unwrap();
    let id = scalar(&mut a, "SELECT CONNECTION_ID()");
    a.query("SET @left_behind = 1").unwrap();
    a.query("SET SESSION innodb_lock_wait_timeout = 7").unwrap();
    a.query("CREATE TEMPORARY TABLE left_behind (x INT)")
        .unwrap();
    a.query("BEGIN").unwrap();
    a.query("UPDATE t SET v = 99 WHERE k = 1").unwrap();
    drop(a);

    let mut b = e.open_bounded_session(Isolation::ReadCommitted).unwrap();
    assert_eq!(scalar(&mut b, "SELECT CONNECTION_ID()"), id, "not pooled");
    assert_eq!(scalar(&mut b, "SELECT @left_behind"), Value::Null);
    let global = scalar(&mut b, "SELECT @@GLOBAL.innodb_lock_wait_timeout");
    assert_eq!(
        scalar(&mut b, "SELECT @@SESSION.innodb_lock_wait_timeout"),
        global
    );
    assert!(b.query("SELECT * FROM left_behind").is_err());
    let mode = scalar(&mut b, "SELECT @@SESSION.sql_mode");
    assert!(
        mode.to_string().contains("NO_AUTO_VALUE_ON_ZERO"),
        "{mode:?}"
    );
    assert_eq!(
        scalar(&mut b, "SELECT @@SESSION.tx_isolation"),
        Value::Text("READ-COMMITTED".into())
    );
    // The lock is gone (a bounded session would fail on a wait) and so is the write.
    b.query("UPDATE t SET v = 11 WHERE k = 1").unwrap();
    drop(b);
    let state = e.final_state(&case.schema).unwrap();
    assert_eq!(value_of(&state, "t", 1), Some(Value::Int(11)));
}

/// An instrumented statement's steps go to the server in one round trip:
/// each statement's own result comes back, and the server stops at the
/// first error (the steps after it do not run).
#[test]
fn steps_in_one_round_trip_return_each_result_and_stop_at_an_error() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = kv_case(&[(1, 10), (2, 20)], vec![], "");
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let mut s = e.open_bounded_session(Isolation::RepeatableRead).unwrap();
    let r = s.query_each(&["SET @a = 1", "UPDATE t SET v = v + 1", "SELECT @a, 2"]);
    let r: Vec<_> = r.into_iter().map(Result::unwrap).collect();
    assert_eq!(r.len(), 3);
    assert_eq!(r[1].affected, 2, "{r:?}");
    assert!(r[1].rows.is_empty(), "{r:?}");
    assert_eq!(r[2].rows, vec![vec![Value::Int(1), Value::Int(2)]]);

    let r = s.query_each(&["SET @b = 1", "UPDATE no_such_table SET v = 0", "SET @b = 2"]);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[0].is_ok());
    assert!(r[1].as_ref().unwrap_err().code.starts_with("1146"), "{r:?}");
    let b = s.query("SELECT @b").unwrap().rows;
    assert_eq!(b, vec![vec![Value::Int(1)]], "the step after the error ran");

    // A last step without a result set still has its own result.
    let r = s.query_each(&[
        "DELETE FROM t WHERE k = 1",
        "INSERT INTO t (rid, wl, k, v) VALUES (13, 0, 3, 30), (14, 0, 4, 40)",
    ]);
    let r: Vec<_> = r.into_iter().map(Result::unwrap).collect();
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!((r[0].affected, r[1].affected), (1, 2), "{r:?}");
}

/// A kept connection that the server closed while it was idle (here an
/// operator's KILL; also its `wait_timeout`) is not handed to a session: the
/// next session gets a working connection instead of a lost one.
#[test]
fn a_kept_connection_the_server_closed_is_replaced() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = kv_case(&[(1, 10)], vec![], "");
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let id_of = |s: &mut Box<dyn txfuzz::engine::Session>| {
        s.query("SELECT CONNECTION_ID()").unwrap().rows[0][0].clone()
    };
    let mut a = e.open_bounded_session(Isolation::RepeatableRead).unwrap();
    let mut operator = e.open_bounded_session(Isolation::RepeatableRead).unwrap();
    let killed = id_of(&mut a);
    drop(a);
    operator.query(&format!("KILL {killed}")).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let mut b = e.open_bounded_session(Isolation::RepeatableRead).unwrap();
    assert_ne!(id_of(&mut b), killed);
    b.query("UPDATE t SET v = 11 WHERE k = 1").unwrap();
}

/// A session a case abandoned may still hold locks when the next case resets
/// the tables (a server stopped and continued, in `server_faults`). Here
/// session X has updated every row of `c` and then updates `p`, whose row
/// the reset (`DELETE FROM p; DELETE FROM c; INSERT ...` in one transaction)
/// has deleted while it waits for `c`: a deadlock, in which InnoDB rolls back
/// the transaction that changed fewer rows, the reset. The reset runs again
/// once X has ended, and succeeds; it used to fail the campaign (exit 2,
/// "initial rows: Deadlock found").
#[test]
fn a_reset_that_deadlocks_with_an_abandoned_session_runs_again() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::mariadb(&url);
    let children: Vec<(i64, i64)> = (1..=20).map(|k| (k, 1)).collect();
    let case = txfuzz::testkit::constraints::parent_child_case(&[(1, 10)], &children, vec![], "");
    e.load(&case).unwrap();
    let mut x = e.open_bounded_session(Isolation::ReadCommitted).unwrap();
    x.query("BEGIN").unwrap();
    x.query("UPDATE c SET u = k + 100").unwrap();
    let reset = std::thread::spawn(move || {
        let r = e.reset();
        (e, r)
    });
    std::thread::sleep(Duration::from_millis(300));
    let write = x.query("UPDATE p SET v = 11");
    x.query(if write.is_ok() { "COMMIT" } else { "ROLLBACK" })
        .unwrap();
    let (mut e, r) = reset.join().unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert!(
        write.is_ok(),
        "X was the deadlock victim, not the reset: {write:?}"
    );
    let state = e.final_state(&case.schema).unwrap();
    assert_eq!(state["c"].len(), 20, "{state:?}");
    assert!(
        state["c"].iter().all(|r| r.last() == Some(&Value::Null)),
        "the reset's rows: {state:?}"
    );
}

/// A case's tables keep the statistics of their load in every later run: a
/// reset fills them again without `ANALYZE TABLE`, and InnoDB's background
/// recalculation, which would follow a run that deleted most rows (about
/// 10 s later, measured on 10.11.19), is off for them (`STATS_AUTO_RECALC=0`).
/// Without it the run's plans would depend on how long ago the last run was.
#[test]
fn a_reset_keeps_the_statistics_of_the_load() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let rows: Vec<(i64, i64)> = (1..=8).map(|k| (k, 10 * k)).collect();
    let case = kv_case(&rows, vec![], "");
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    let stats_query = format!(
        "SELECT n_rows, CAST(last_update AS CHAR) FROM mysql.innodb_table_stats \
         WHERE database_name = '{}' AND table_name = 't'",
        e.database()
    );
    let stats = |e: &mut MysqlEngine| {
        let mut s = e.open_bounded_session(Isolation::ReadCommitted).unwrap();
        s.query(&stats_query).unwrap().rows
    };
    let loaded = stats(&mut e);
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0][0], Value::Int(8), "{loaded:?}");
    for _ in 0..2 {
        e.reset().unwrap();
        let mut s = e.open_bounded_session(Isolation::ReadCommitted).unwrap();
        s.query("DELETE FROM t WHERE k > 2").unwrap();
    }
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(
        stats(&mut e),
        loaded,
        "the statistics changed after the load"
    );
}

/// `query_all` (the plain twins' statements and `EXPLAIN`s of `keep_plans`)
/// runs every step as one call each would, though the server stops a
/// multi-statement text at its first error: the steps after a refused one
/// still run, each with its own result.
#[test]
fn every_step_runs_though_one_fails() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::mariadb(&url);
    let r = e.query_all(&[
        "SET @x = 1",
        "SELECT * FROM no_such_table",
        "SET @x = @x + 1",
        "SELECT @x",
    ]);
    assert_eq!(r.len(), 4, "{r:?}");
    assert!(r[0].is_ok() && r[2].is_ok(), "{r:?}");
    assert!(r[1].as_ref().unwrap_err().code.starts_with("1146"), "{r:?}");
    assert_eq!(r[3].as_ref().unwrap().rows, vec![vec![Value::Int(2)]]);
}
