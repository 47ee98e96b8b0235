//! `--jobs N` and `--shard I/N`: the cases of a seed and count, and the
//! findings they give, do not depend on how many workers ran them or how the
//! campaign was split; `txfuzz merge` joins shards into one campaign.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use txfuzz::campaign::{run_campaign_jobs, CampaignConfig, Summary};
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;
use txfuzz::gen::pattern::Generation;

fn txfuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args(args)
        .output()
        .expect("run txfuzz")
}

/// `txfuzz ARGS`, which must exit with `code`.
fn txfuzz_exits(code: i32, args: &[&str]) -> Output {
    let o = txfuzz(args);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn summary(dir: &Path) -> Summary {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn signatures(s: &Summary) -> BTreeSet<String> {
    s.distinct.iter().map(|d| d.signature.clone()).collect()
}

/// A campaign of `tests` cases on `jobs` SQLite engines that read
/// uncommitted rows (a fault the oracles find), without shadow runs.
fn dirty_read_campaign(jobs: usize, tests: u64, out: &Path) -> Summary {
    let mut engines: Vec<Box<dyn Engine>> = (0..jobs)
        .map(|_| {
            let sqlite: Box<dyn Engine> = Box::new(SqliteEngine::open(None).unwrap());
            Box::new(FaultyEngine::new(sqlite, Fault::DirtyRead)) as Box<dyn Engine>
        })
        .collect();
    let cfg = CampaignConfig {
        shadow: 0.0,
        ..CampaignConfig::new(7, tests, out)
    };
    let workers: Vec<&mut dyn Engine> = engines.iter_mut().map(|e| &mut **e as _).collect();
    run_campaign_jobs(workers, &cfg, &Generation::Random).unwrap()
}

#[test]
fn the_cases_and_findings_of_a_seed_do_not_depend_on_the_number_of_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let one = dirty_read_campaign(1, 150, &tmp.path().join("one"));
    let three = dirty_read_campaign(3, 150, &tmp.path().join("three"));
    assert_eq!((one.cases, three.cases), (150, 150));
    assert_eq!((one.jobs, three.jobs), (1, 3));
    assert_eq!(one.case_digest, three.case_digest);
    assert!(one.violations > 0, "{}", one.render());
    assert_eq!(signatures(&one), signatures(&three), "{}", three.render());
    assert_eq!(one.findings, three.findings);
    // Where the time went: the execution and every oracle that ran.
    for phase in ["generate", "execute", "wss", "sdg", "view", "graph"] {
        assert!(three.phase_s[phase] > 0.0, "{phase}: {:?}", three.phase_s);
    }
    // One findings directory, numbered without gaps.
    let files = std::fs::read_dir(tmp.path().join("three/findings"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".json")
        })
        .count() as u64;
    assert_eq!(
        files,
        three.violations + three.known_violations + three.permitted
    );
}

#[test]
fn the_case_digest_does_not_depend_on_the_order_cases_ran_in() {
    // Shards 1/2 and 0/2 of 40 cases, merged in that order, make the digest
    // of one campaign of 40: the digest is a sum over the cases.
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name);
    for (name, shard) in [("whole", None), ("s1", Some("1/2")), ("s0", Some("0/2"))] {
        let out = dir(name);
        let mut args = vec![
            "run", "--tests", "40", "--seed", "3", "--quiet", "--jobs", "2",
        ];
        args.extend(["--out", out.to_str().unwrap()]);
        if let Some(s) = shard {
            args.extend(["--shard", s]);
        }
        txfuzz_exits(0, &args);
    }
    assert_eq!(summary(&dir("s0")).cases, 20);
    assert_ne!(
        summary(&dir("s0")).case_digest,
        summary(&dir("whole")).case_digest
    );
    let merged = dir("merged");
    txfuzz_exits(
        0,
        &[
            "merge",
            "--out",
            merged.to_str().unwrap(),
            dir("s1").to_str().unwrap(),
            dir("s0").to_str().unwrap(),
        ],
    );
    let m = summary(&merged);
    assert_eq!(m.cases, 40);
    assert_eq!(m.case_digest, summary(&dir("whole")).case_digest);
    assert_eq!(m.shard, None);
    assert!(merged.join("report.html").exists());
}

#[test]
fn merged_pattern_shards_count_the_pattern_cases_of_one_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name).display().to_string();
    let run = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--generator",
            "mixed",
            "--tests",
            "60",
            "--seed",
            "5",
        ];
        args.extend(["--quiet", "--out", out]);
        args.extend(extra);
        txfuzz_exits(0, &args);
    };
    run(&dir("whole"), &[]);
    run(&dir("s0"), &["--shard", "0/2"]);
    run(&dir("s1"), &["--shard", "1/2"]);
    txfuzz_exits(
        0,
        &["merge", "--out", &dir("merged"), &dir("s0"), &dir("s1")],
    );
    let patterns = |d: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(Path::new(d).join("patterns.json")).unwrap())
            .unwrap()
    };
    assert_eq!(patterns(&dir("merged")), patterns(&dir("whole")));
}

#[test]
fn shards_merged_give_the_cases_and_findings_of_one_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name);
    let run = |out: &Path, extra: &[&str]| {
        let mut args = vec!["run", "--tests", "150", "--seed", "7", "--quiet"];
        args.extend(["--fault", "dirty-read", "--shadow", "0"]);
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(extra);
        txfuzz(&args)
    };
    // Exit 1: the fault's violations (a shard may hold none of them).
    let whole = run(&dir("whole"), &["--jobs", "1"]);
    assert_eq!(
        whole.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    // Three shard processes at once, as on three machines.
    std::thread::scope(|s| {
        for i in 0..3 {
            let out = dir(&format!("shard{i}"));
            let shard = format!("{i}/3");
            s.spawn(move || {
                let o = run(&out, &["--jobs", "1", "--shard", &shard]);
                let code = o.status.code();
                assert!(
                    matches!(code, Some(0 | 1)),
                    "{code:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            });
        }
    });
    let merged = dir("merged");
    let mut args = vec!["merge", "--out", merged.to_str().unwrap()];
    let shards: Vec<String> = (0..3)
        .map(|i| dir(&format!("shard{i}")).display().to_string())
        .collect();
    args.extend(shards.iter().map(String::as_str));
    let o = txfuzz_exits(1, &args);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("merged shard(s) 0/3, 1/3, 2/3"), "{stdout}");

    let (whole, m) = (summary(&dir("whole")), summary(&merged));
    assert_eq!(m.cases, 150);
    assert_eq!(m.case_digest, whole.case_digest);
    assert_eq!(signatures(&m), signatures(&whole));
    assert_eq!(m.findings, whole.findings);
    assert_eq!(m.violations, whole.violations);
    assert_eq!(m.jobs, 3);
    // Every finding is in the merged directory, each replayable from there.
    assert_eq!(m.finding_files.len() as u64, m.violations);
    for f in &m.finding_files {
        assert!(f.starts_with(merged.to_str().unwrap()), "{f}");
        let rec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert!(rec["replay"].as_str().unwrap().contains(f.as_str()));
        assert!(Path::new(&f.replace(".json", ".sql")).exists());
    }
    for d in &m.distinct {
        assert!(d.example.starts_with(merged.to_str().unwrap()));
    }
    assert!(merged.join("report.html").exists());
}

#[test]
fn merge_takes_the_findings_of_a_directorys_last_campaign_only() {
    // A shard run twice into one directory (a retried pod): the directory
    // keeps the first run's findings, the merge takes the second's.
    let tmp = tempfile::tempdir().unwrap();
    let shard = tmp.path().join("shard");
    let mut runs = Vec::new();
    for _ in 0..2 {
        txfuzz_exits(
            1,
            &[
                "run",
                "--tests",
                "60",
                "--seed",
                "7",
                "--fault",
                "dirty-read",
                "--shadow",
                "0",
                "--quiet",
                "--out",
                shard.to_str().unwrap(),
            ],
        );
        runs.push(summary(&shard).violations);
    }
    let last = summary(&shard);
    let on_disk = std::fs::read_dir(shard.join("findings")).unwrap().count() as u64;
    assert_eq!(
        on_disk,
        4 * last.violations,
        "two runs, .json and .sql each"
    );
    let merged = tmp.path().join("merged");
    txfuzz_exits(
        1,
        &[
            "merge",
            "--out",
            merged.to_str().unwrap(),
            shard.to_str().unwrap(),
        ],
    );
    let m = summary(&merged);
    assert_eq!(m.violations, last.violations);
    assert_eq!(m.finding_files.len() as u64, last.violations);
    assert_eq!(signatures(&m), signatures(&last));
}

#[test]
fn merge_refuses_parts_of_different_campaigns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name).display().to_string();
    for (name, seed, shard) in [("a", "1", "0/2"), ("b", "2", "1/2"), ("c", "1", "1/3")] {
        txfuzz_exits(
            0,
            &[
                "run",
                "--tests",
                "6",
                "--seed",
                seed,
                "--shard",
                shard,
                "--quiet",
                "--out",
                &dir(name),
            ],
        );
    }
    for (parts, says) in [
        (vec![dir("a"), dir("b")], "seed"),
        (vec![dir("a"), dir("c")], "shards of one split"),
        (vec![dir("a"), dir("a")], "given twice"),
        (vec![dir("a"), dir("none")], "cannot read"),
    ] {
        let out = tmp.path().join(format!("m-{says}"));
        let mut args = vec![
            "merge".to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        args.extend(parts);
        let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // An incomplete set merges, and says so: in summary.json (`incomplete`
    // with the missing shards), in report.html, on stderr, and with exit 3
    // (it used to exit 0 with a line on stdout only).
    let o = txfuzz(&["merge", "--out", &dir("half"), &dir("a")]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard(s) 1/2 are missing"));
    let s = summary(Path::new(&dir("half")));
    let inc = s
        .incomplete
        .expect("summary.json marks the merge incomplete");
    assert_eq!(
        inc.missing_shards,
        vec![txfuzz::campaign::Shard { index: 1, count: 2 }]
    );
    let html = std::fs::read_to_string(Path::new(&dir("half")).join("report.html")).unwrap();
    assert!(
        html.contains("Incomplete merge: shard(s) 1/2 are missing"),
        "no mark in the report"
    );
}

#[test]
fn bad_jobs_and_shards_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().display().to_string();
    for (args, says) in [
        (vec!["--jobs", "0"], "--jobs"),
        (vec!["--jobs", "100000"], "--jobs"),
        (vec!["--shard", "3/3"], "shard"),
        (vec!["--shard", "x"], "shard"),
    ] {
        let mut all = vec!["run", "--tests", "1", "--out", &out];
        all.extend(args);
        let o = txfuzz(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(says), "{all:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_database_file_given_by_path_gets_one_file_per_job() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let out = tmp.path().join("out");
    let url = format!("sqlite:{}", db.display());
    txfuzz_exits(
        0,
        &[
            "run",
            "--tests",
            "10",
            "--seed",
            "1",
            "--jobs",
            "2",
            "--quiet",
            "--db",
            &url,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(db.exists());
    assert!(tmp.path().join("x.db-job1").exists());
    assert_eq!(summary(&out).jobs, 2);
}
