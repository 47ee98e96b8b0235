//! Anomaly-pattern-guided generation (APTrans): the pattern language, the
//! catalogue, generated cases, and — against the real servers — that each
//! built-in pattern's case, run at a level whose engine lets it through,
//! produces exactly the pattern's dependency path (hit rate per pattern).

mod common;

use txfuzz::campaign::run_case;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::gen::pattern::{catalogue, generate, levels, parse, parse_file, path};
use txfuzz::model::Isolation;
use txfuzz::oracle::pattern as detect;
use txfuzz::oracle::{CheckStats, OracleKind, Verdict};

#[test]
fn parses_valid_patterns() {
    let p = parse("lu", "R1[x0] W2[x1] C2 W1[x2] C1").unwrap();
    assert_eq!(p.ops.len(), 5);
    assert_eq!(p.to_string(), "R1[x0] W2[x1] C2 W1[x2] C1");
    assert_eq!(p.txn_count(), 2);
    let q = parse("tight", "R1[x0]W2[x1]C2W1[x2]C1").unwrap();
    assert_eq!(
        q.ops,
        p.ops
            .iter()
            .map(|o| {
                let mut o = o.clone();
                o.column = q
                    .ops
                    .iter()
                    .find(|x| x.to_string() == o.to_string())
                    .unwrap()
                    .column;
                o
            })
            .collect::<Vec<_>>()
    );
    let r = parse("dr", "W1[acct1] R2[acct1] A1 C2").unwrap();
    assert_eq!(r.items(), vec!["acct".to_string()]);
    assert_eq!(path::type_constraints(&p)[0].reads, 1);
    assert_eq!(path::schedule(&p), vec![1, 2, 2, 1, 1]);
}

#[test]
fn malformed_patterns_have_clear_errors() {
    let cases = [
        ("R1[x0 W2[x1] C1 C2", "expected ']' at column 6"),
        ("R1x0] C1", "expected '[' at column 3"),
        (
            "Q1 C1",
            "expected an operation R, W, C or A, found 'Q' at column 1",
        ),
        (
            "R[x0] C1",
            "expected a transaction number after 'R' at column 2",
        ),
        (
            "R1[0] C1",
            "expected a data item name (lowercase letters) at column 4",
        ),
        (
            "R1[x] C1",
            "expected a version number after 'x' at column 5",
        ),
        (
            "R1[x0] C1 W1[x1]",
            "W1[x1]: transaction 1 already ended at column 11",
        ),
        (
            "W1[x2] C1",
            "W1[x2]: expected version x1 (versions of x number its writes in order) at column 1",
        ),
        (
            "R1[x1] C1",
            "R1[x1]: no earlier write installs version x1 at column 1",
        ),
        (
            "R1[x0] W2[x1] C2",
            "transaction 1 never commits (C1) or aborts (A1) at column 17",
        ),
        (
            "R9[x0] C9",
            "transaction number 9 out of range 1..=5 at column 2",
        ),
        (
            "R1[x0] C1 R3[x0] C3",
            "transactions must be numbered 1..3, but T2 has no operation at column 1",
        ),
        ("C1", "C1: transaction 1 has no read or write at column 1"),
        ("", "empty pattern at column 1"),
        ("C1[x0]", "commit and abort take no data item at column 3"),
    ];
    for (text, want) in cases {
        let e = parse("p", text).unwrap_err();
        assert_eq!(e.to_string(), want, "{text}");
    }
}

#[test]
fn pattern_files() {
    let ps = parse_file(
        "# mine\nlu: R1[x0] W2[x1] C2 W1[x2] C1\n\nws: R1[x0] R2[y0] W1[y1] W2[x1] C1 C2 # skew\n",
    )
    .unwrap();
    assert_eq!(ps.len(), 2);
    assert_eq!(ps[1].name, "ws");
    let e = parse_file("ok: R1[x0] C1\nbad: R1[x0 C1\n").unwrap_err();
    assert_eq!(e, "line 2: pattern 'bad': expected ']' at column 11");
    assert!(parse_file("R1[x0] C1")
        .unwrap_err()
        .contains("expected 'name: pattern'"));
    assert!(parse_file("# nothing\n")
        .unwrap_err()
        .contains("no pattern"));
    assert!(parse_file("a: R1[x0] C1\na: R1[x0] C1")
        .unwrap_err()
        .contains("twice"));
}

#[test]
fn catalogue_is_complete_and_tagged() {
    let all = catalogue::all();
    assert_eq!(all.len(), 46);
    let mut names: Vec<&str> = all.iter().map(|b| b.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 46);
    let expect = [
        ("dirty-write", None),
        ("dirty-read", Some("G1a")),
        ("lost-update", Some("lost-update")),
        ("non-repeatable-read", Some("G-single")),
        ("read-skew", Some("read-skew")),
        ("write-skew", Some("write-skew")),
        ("aptrans-3", Some("G1b")),
        ("aptrans-4", Some("G0")),
        ("aptrans-20", Some("G1c")),
        ("aptrans-38", Some("write-skew")),
    ];
    for (name, anomaly) in expect {
        let p = catalogue::builtin(name).unwrap().pattern();
        assert_eq!(
            path::expected_anomaly(&p).map(|a| a.name()),
            anomaly,
            "{name}"
        );
    }
    let dw = catalogue::builtin("dirty-write").unwrap();
    assert_eq!(
        path::forbidden_in(&dw.pattern(), dw.paper_forbids),
        Isolation::ALL.to_vec()
    );
    let lu = catalogue::builtin("lost-update").unwrap();
    assert_eq!(
        path::forbidden_in(&lu.pattern(), lu.paper_forbids),
        vec![Isolation::RepeatableRead, Isolation::Serializable]
    );
    let e: Vec<String> = path::expected_edges(&lu.pattern())
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(e, ["T2 -ww[x]-> T1", "T1 -rw[x]-> T2"]);
}

#[test]
fn every_builtin_generates_valid_deterministic_cases() {
    for p in catalogue::patterns() {
        for seed in 0..10 {
            let (case, b) = generate::generate(seed, 3, &p, &[Isolation::RepeatableRead]);
            case.validate()
                .unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(b.ops.len(), p.ops.len());
            assert_eq!(
                generate::generate(seed, 3, &p, &[Isolation::RepeatableRead]).0,
                case
            );
        }
    }
}

/// Fault-free SQLite (serializable) never violates anything on pattern cases.
#[test]
fn sqlite_pattern_cases_have_no_violation() {
    let mut e = txfuzz::engine::open(None).unwrap();
    for p in catalogue::patterns() {
        for seed in 0..3 {
            let (case, _) = generate::generate(seed, 0, &p, &[Isolation::Serializable]);
            let (_, f) = run_case(
                e.as_mut(),
                &case,
                &OracleKind::defaults(),
                &ExecOptions::default(),
                &mut CheckStats::default(),
            )
            .unwrap();
            assert!(
                f.iter().all(|f| f.verdict != Verdict::Violation),
                "{}: {f:#?}",
                p.name
            );
        }
    }
}

const SEEDS: u64 = 20;

/// Runs every built-in whose permitting target is on `engine_name`: hit rate
/// must be at least 70%. Patterns no engine level runs as written (a write
/// must wait for a lock) must never hit. Returns the report lines.
fn hit_rates(e: &mut dyn Engine, engine_name: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut low = Vec::new();
    for p in catalogue::patterns() {
        let target = levels::permitting_target(&p);
        let (level, runnable) = match target {
            Some(t) if t.engine == engine_name => (t.level, true),
            Some(_) => continue,
            None if engine_name == "mariadb" => (Isolation::RepeatableRead, false),
            None => (Isolation::ReadCommitted, false),
        };
        let mut hits = 0;
        let mut miss = None;
        for seed in 0..SEEDS {
            let (case, b) = generate::generate(seed, 1, &p, &[level]);
            let (h, f) = run_case(
                e,
                &case,
                &[OracleKind::Crash, OracleKind::Graph],
                &ExecOptions::default(),
                &mut CheckStats::default(),
            )
            .unwrap();
            assert!(
                f.iter().all(|f| f.verdict != Verdict::Violation),
                "{} {level}: {f:#?}",
                p.name
            );
            let r = detect::check(&p, &b, &case, &h);
            if r.path_hit {
                hits += 1;
                if let Some(a) = r.expected_anomaly {
                    assert!(r.graph_anomalies.contains(&a), "{}: {r:#?}", p.name);
                }
            } else {
                miss = r.miss.clone();
            }
        }
        let line = format!(
            "{engine_name} {level} {:<20} {hits}/{SEEDS} runnable={runnable} {}",
            p.name,
            miss.unwrap_or_default()
        );
        eprintln!("{line}");
        if runnable && hits * 100 < SEEDS * 70 || !runnable && hits > 0 {
            low.push(line.clone());
        }
        lines.push(line);
    }
    assert!(low.is_empty(), "hit rates off target:\n{}", low.join("\n"));
    lines
}

#[test]
fn mariadb_pattern_hit_rates() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    let lines = hit_rates(e.as_mut(), "mariadb");
    assert!(lines.len() > 20);
}

#[test]
fn postgres_pattern_hit_rates() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let mut e = common::open(&url);
    let lines = hit_rates(e.as_mut(), "postgres");
    assert!(!lines.is_empty());
}
