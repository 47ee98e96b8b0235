//! `txfuzz export --format isolation`: findings as PostgreSQL
//! isolationtester specs, run by pg_isolation_regress against the suite's
//! server. PostgreSQL has no live bug for txfuzz, so a fault (a stale read)
//! makes the finding: the exported spec expects the correct rows and passes
//! on PostgreSQL; the same schedule with the faulty observed rows fails on
//! those rows alone. Generated cases exported as observed pass.

mod common;

use common::isolation::{self, IsoTest};
use txfuzz::campaign::run_case;
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::export::{export, isolation::render, Format};
use txfuzz::finding::FindingRecord;
use txfuzz::model::{Isolation, TestCase};
use txfuzz::oracle::{CheckStats, OracleKind};
use txfuzz::testkit::*;

/// READ COMMITTED: T1 begins, T2 sets k=1 to 7 and commits, T1 reads k=1
/// (it must see 7), T1 commits.
fn read_after_commit() -> TestCase {
    let mut c = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![select("t", Some(1))]),
            committed(vec![set("t", 1, 7)]),
        ],
        "1 2 2 2 1 1",
    );
    c.isolation = Isolation::ReadCommitted;
    c
}

#[test]
fn a_stale_read_exported_passes_on_postgres_and_its_observed_rows_fail() {
    let Some(url) = common::pg_url() else { return };
    let Some(runner) = isolation::runner() else {
        return;
    };
    let case = read_after_commit();
    let mut e = FaultyEngine::new(common::open(&url), Fault::StaleRead);
    let mut stats = CheckStats::default();
    let (h, findings) = run_case(
        &mut e,
        &case,
        &[OracleKind::View],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    let f = findings
        .iter()
        .find(|f| f.kind == "result")
        .unwrap_or_else(|| panic!("no view:result finding: {findings:#?}\n{h:#?}"))
        .clone();
    let rec = FindingRecord::new(f, e.info().clone(), case.clone(), h);
    let files = export(&rec, Format::Isolation, "stale_read").unwrap();
    let pick = |ext: &str| {
        files
            .iter()
            .find(|f| f.name.ends_with(ext))
            .unwrap()
            .contents
            .clone()
    };
    let (spec, observed) = render(&rec.case, &rec.history, None, &[]).unwrap();
    let tests = [
        IsoTest {
            name: "stale_read".into(),
            spec: pick(".spec"),
            expected: pick(".out"),
        },
        IsoTest {
            name: "stale_read_observed".into(),
            spec,
            expected: observed.clone(),
        },
    ];
    let run = isolation::run(&runner, &url, &tests);
    assert_eq!(run.passed, ["stale_read"], "{}", run.log);
    assert_eq!(run.failed, ["stale_read_observed"], "{}", run.log);
    // The observed run differs from PostgreSQL's in the stale row's table
    // alone (its column is narrower with 7 than with 10).
    let actual = &run.results["stale_read_observed"];
    assert_eq!(
        common::lines_only_in(&observed, actual),
        ["k| v", "-+--", "1|10"],
        "{}",
        run.log
    );
    assert_eq!(
        common::lines_only_in(actual, &observed),
        ["k|v", "-+-", "1|7"],
        "{}",
        run.log
    );
}

/// Generated PostgreSQL cases, exported with their observed outputs, pass
/// in pg_isolation_regress: the spec's steps, waits and the printed results
/// are PostgreSQL's.
#[test]
fn generated_cases_exported_as_observed_pass_in_isolationtester() {
    let Some(url) = common::pg_url() else { return };
    let Some(runner) = isolation::runner() else {
        return;
    };
    let mut e = common::open(&url);
    let mut tests = Vec::new();
    let mut waits = 0;
    for (index, case, h) in common::plain_schedules(e.as_mut(), 31, 40) {
        let Ok((spec, expected)) = render(&case, &h, None, &[]) else {
            continue;
        };
        waits += usize::from(expected.contains("<waiting ...>"));
        tests.push(IsoTest {
            name: format!("gen_{index}"),
            spec,
            expected,
        });
    }
    assert!(
        tests.len() >= 25 && waits >= 3,
        "{} tests, {waits} with a lock wait",
        tests.len()
    );
    let run = isolation::run(&runner, &url, &tests);
    let shown: Vec<String> = run
        .failed
        .iter()
        .map(|n| {
            let expected = &tests.iter().find(|t| &t.name == n).unwrap().expected;
            let actual = run.results.get(n).map_or("", String::as_str);
            format!(
                "{n}: expected {:?}, got {:?}",
                common::lines_only_in(expected, actual),
                common::lines_only_in(actual, expected)
            )
        })
        .collect();
    common::assert_mostly_pass(&shown, tests.len(), &run.log);
}

/// An `integrity` finding on the final state (from a fault: an orphan made
/// outside the schedule) is exported with constraint checks in a session
/// of their own; PostgreSQL keeps the key, so the spec passes.
#[test]
fn an_integrity_finding_exports_constraint_checks_that_postgres_passes() {
    let Some(url) = common::pg_url() else { return };
    let Some(runner) = isolation::runner() else {
        return;
    };
    let case = txfuzz::testkit::constraints::parent_child_case(
        &[(1, 10), (2, 20)],
        &[(5, 2)],
        vec![committed(vec![txfuzz::testkit::constraints::insert_child(
            102, 7, 1,
        )])],
        "1 1 1",
    );
    let mut e = FaultyEngine::new(common::open(&url), Fault::Orphan);
    let mut stats = CheckStats::default();
    let (h, findings) = run_case(
        &mut e,
        &case,
        &[OracleKind::Integrity],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    let f = findings
        .iter()
        .find(|f| f.kind == "foreign-key")
        .unwrap_or_else(|| panic!("{findings:#?}"))
        .clone();
    let rec = FindingRecord::new(f, e.info().clone(), case, h);
    let files = export(&rec, Format::Isolation, "orphan").unwrap();
    let test = IsoTest {
        name: "orphan".into(),
        spec: files[0].contents.clone(),
        expected: files[1].contents.clone(),
    };
    assert!(test.spec.contains("session check"), "{}", test.spec);
    let run = isolation::run(&runner, &url, std::slice::from_ref(&test));
    assert_eq!(run.passed, ["orphan"], "{}", run.log);
}

/// A final-state finding (a write lost by a fault) is exported with reads
/// of the final state a correct engine leaves, in byte order; PostgreSQL
/// loses no write, so the spec passes.
#[test]
fn a_final_state_finding_exports_the_state_postgres_leaves() {
    let Some(url) = common::pg_url() else { return };
    let Some(runner) = isolation::runner() else {
        return;
    };
    let mut e = FaultyEngine::new(common::open(&url), Fault::LoseWrite);
    let rec = common::exportable_finding(&mut e, 5, 200, "tx-final-state", Format::Isolation);
    let files = export(&rec, Format::Isolation, "lost_write").unwrap();
    let test = IsoTest {
        name: "lost_write".into(),
        spec: files[0].contents.clone(),
        expected: files[1].contents.clone(),
    };
    assert!(test.spec.contains("step final_0"), "{}", test.spec);
    let run = isolation::run(&runner, &url, std::slice::from_ref(&test));
    assert_eq!(run.passed, ["lost_write"], "{}\n{}", run.log, test.spec);
}
