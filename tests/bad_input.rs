//! Bad input gets one clear line and exit 2, never a panic or a silent
//! success: out-of-range flags, empty lists, malformed histories and case
//! files, unusable output paths, a corrupt finding in a report directory.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn txfuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args(args)
        .output()
        .expect("run txfuzz")
}

/// Exit 2 with one line on stderr that contains `needle`.
fn refused(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle), "wanted '{needle}' in: {err}");
}

#[test]
fn out_of_range_flags_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let out = out.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["run", "--hang-timeout", "18446744073709551615"],
            "--hang-timeout",
        ),
        (vec!["run", "--hang-timeout", "0"], "--hang-timeout"),
        (
            vec!["run", "--recover-wait", "500000000000y"],
            "--recover-wait",
        ),
        (vec!["run", "--time", "900000000h"], "--time"),
        (vec!["run", "--isolation", ","], "--isolation"),
        (vec!["run", "--isolation", "serializable,"], "--isolation"),
        (vec!["run", "--oracle", ","], "--oracle"),
        (vec!["stress", "--time", "500000000000y"], "--time"),
        (vec!["run", "--bogus"], "--bogus"),
        (vec!["run", "--tests", "x"], "--tests"),
        (vec!["frobnicate"], "frobnicate"),
    ] {
        let mut a = args.clone();
        a.extend(["--out", out]);
        if args[0] == "frobnicate" {
            a.truncate(1);
        }
        refused(&txfuzz(&a), needle);
    }
    // --help and --version still print in full and succeed.
    let help = txfuzz(&["run", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).lines().count() > 5);
    assert_eq!(txfuzz(&["--version"]).status.code(), Some(0));
}

fn history_with_write_list(wl: &str) -> String {
    format!(
        r#"{{"isolation": "serializable", "txns": [
            {{"id": 1, "session": 1, "status": "committed", "ops": [
                {{"type": "read", "table": "t", "rid": 1, "wl": "{wl}"}}]}}]}}"#
    )
}

#[test]
fn a_malformed_write_list_is_a_format_error_not_a_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.json");
    std::fs::write(&good, history_with_write_list("0")).unwrap();
    assert_eq!(
        txfuzz(&["check", good.to_str().unwrap()]).status.code(),
        Some(0)
    );
    for wl in ["x,y,,", "0,,3", "0,-1", ""] {
        let bad = tmp.path().join("bad.json");
        std::fs::write(&bad, history_with_write_list(wl)).unwrap();
        refused(&txfuzz(&["check", bad.to_str().unwrap()]), "write list");
    }
}

/// A finding file of a real run, edited by `edit`.
fn edited_finding(dir: &Path, edit: impl Fn(&mut serde_json::Value)) -> std::path::PathBuf {
    let out = dir.join("run");
    common::faulty_run(&out);
    let first = std::fs::read_dir(out.join("findings"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .min()
        .unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    edit(&mut v);
    let path = dir.join("edited.json");
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    path
}

/// A change to a finding file's JSON.
type Edit = dyn Fn(&mut serde_json::Value);

#[test]
fn inconsistent_case_files_are_refused_by_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&str, Box<Edit>); 4] = [
        ("format", Box::new(|v| v["format"] = 999.into())),
        (
            "does not define",
            Box::new(|v| {
                let t = &mut v["case"]["schema"]["tables"];
                let first = t[0]["name"].clone();
                // Rename the table in the schema only.
                t[0]["name"] = format!("{}_gone", first.as_str().unwrap()).into();
                if let Some(d) = v["case"]["data"].as_array_mut() {
                    d.clear();
                }
            }),
        ),
        (
            "does not have",
            Box::new(|v| v["history"]["txns"][0]["txn"] = 4242.into()),
        ),
        (
            // Every column renamed in the schema only: the statements name
            // columns it does not define (replay used to run them, and say
            // "not reproduced" over the engine's error).
            "which none of its tables",
            Box::new(|v| {
                for t in v["case"]["schema"]["tables"].as_array_mut().unwrap() {
                    for c in t["columns"].as_array_mut().unwrap() {
                        c["name"] = format!("{}_gone", c["name"].as_str().unwrap()).into();
                    }
                }
            }),
        ),
    ];
    for (needle, edit) in cases {
        let path = edited_finding(tmp.path(), edit);
        refused(&txfuzz(&["replay", path.to_str().unwrap()]), needle);
    }
}

/// A finding's case alone (the current case format, 2) replays; a bare
/// case of a format this txfuzz does not know is refused with a sentence.
#[test]
fn a_bare_case_replays_and_an_unknown_case_format_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let finding = edited_finding(tmp.path(), |_| {});
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&finding).unwrap()).unwrap();
    let mut case = v["case"].clone();
    assert_eq!(case["format"], 2);
    let path = tmp.path().join("case.json");
    std::fs::write(&path, serde_json::to_vec(&case).unwrap()).unwrap();
    let o = txfuzz(&["replay", path.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("replayed case"),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    case["format"] = 3.into();
    std::fs::write(&path, serde_json::to_vec(&case).unwrap()).unwrap();
    refused(
        &txfuzz(&["replay", path.to_str().unwrap()]),
        "unsupported case format 3",
    );
}

#[test]
fn output_paths_that_cannot_be_used_are_named_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let f = file.to_str().unwrap();
    refused(&txfuzz(&["run", "--tests", "1", "--out", f]), f);
    let finding = edited_finding(tmp.path(), |_| {});
    let started = std::time::Instant::now();
    let sub = file.join("sub");
    refused(
        &txfuzz(&[
            "reduce",
            finding.to_str().unwrap(),
            "--out",
            sub.to_str().unwrap(),
        ]),
        f,
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn a_corrupt_finding_does_not_stop_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    common::faulty_run(&out);
    let bad = out.join("findings").join("0000-corrupt.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let o = txfuzz(&["report", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("0000-corrupt.json"), "{err}");
    assert!(out.join("report.html").exists());
}

/// A URL that asks for TLS is refused before any connection: txfuzz's
/// drivers run without TLS (README, "Engines"). No server is needed.
#[test]
fn a_url_that_asks_for_tls_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    for url in [
        "postgres://postgres@127.0.0.1:1/test?sslmode=require",
        "mysql://root@127.0.0.1:1/test?require_ssl=true",
    ] {
        let o = txfuzz(&[
            "run",
            "--db",
            url,
            "--tests",
            "1",
            "--out",
            out.to_str().unwrap(),
        ]);
        refused(&o, "TLS is not supported");
    }
}

/// A known-issues file whose entry names an engine txfuzz does not know (a
/// typo that would disable the entry) is refused before the campaign.
#[test]
fn a_known_issue_with_a_misspelt_engine_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let known = tmp.path().join("mine.toml");
    std::fs::write(
        &known,
        "[[issue]]\nid = \"x\"\nengines = [\"mariadbb\"]\nsignature = \"*\"\nreference = \"r\"\ndescription = \"d\"\n",
    )
    .unwrap();
    let out = tmp.path().join("o");
    let o = txfuzz(&[
        "run",
        "--tests",
        "1",
        "--known",
        known.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&o, "unknown engine 'mariadbb'");
}

/// Endless or random input is refused at once with one line (it used to be
/// read whole: `check /dev/zero` grew to 24 GB before the kernel killed it).
#[test]
fn endless_and_random_input_files_are_refused() {
    for args in [
        ["check", "/dev/zero"],
        ["replay", "/dev/zero"],
        ["check", "/dev/urandom"],
        ["replay", "/dev/urandom"],
        ["reduce", "/dev/zero"],
    ] {
        let start = std::time::Instant::now();
        let o = txfuzz(&args);
        refused(&o, "/dev/");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{args:?} took {:?}",
            start.elapsed()
        );
    }
}

/// `txfuzz export` refuses what it cannot export, with the reason: another
/// engine's finding for mtr, a finding whose correct output is not one
/// result, a file that is no finding, an unknown format, an unusable
/// output directory.
#[test]
fn exports_that_cannot_be_made_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out = out.to_str().unwrap();
    let sqlite = edited_finding(tmp.path(), |_| {});
    refused(
        &txfuzz(&[
            "export",
            sqlite.to_str().unwrap(),
            "--format",
            "mtr",
            "--out",
            out,
        ]),
        "mtr exports mariadb/mysql findings",
    );
    refused(
        &txfuzz(&[
            "export",
            sqlite.to_str().unwrap(),
            "--format",
            "isolation",
            "--out",
            out,
        ]),
        "isolation exports postgres findings",
    );
    let graph = edited_finding(tmp.path(), |v| {
        v["engine"]["name"] = "mariadb".into();
        v["finding"]["oracle"] = "graph".into();
        v["finding"]["kind"] = "lost-update".into();
    });
    refused(
        &txfuzz(&[
            "export",
            graph.to_str().unwrap(),
            "--format",
            "mtr",
            "--out",
            out,
        ]),
        "graph:lost-update finding is not built yet",
    );
    refused(
        &txfuzz(&["export", "/dev/zero", "--format", "mtr", "--out", out]),
        "/dev/zero",
    );
    refused(
        &txfuzz(&[
            "export",
            sqlite.to_str().unwrap(),
            "--format",
            "tap",
            "--out",
            out,
        ]),
        "--format",
    );
    let view = edited_finding(tmp.path(), |v| {
        v["engine"]["name"] = "mariadb".into();
        v["finding"]["oracle"] = "view".into();
        v["finding"]["kind"] = "result".into();
        v["finding"]["evidence"] =
            serde_json::json!({"expected": {"rows": []}, "actual": {"rows": []}});
        v["finding"]["involved"] = serde_json::json!([{"txn": 1, "index": 1}]);
    });
    refused(
        &txfuzz(&[
            "export",
            view.to_str().unwrap(),
            "--format",
            "mtr",
            "--out",
            "/dev/null/x",
        ]),
        "/dev/null/x",
    );
}

/// An unsupported format, of the finding or of the case inside it, is
/// refused by every command that reads findings (`check` and `export`
/// used to accept it), and a finding file given through a pipe replays
/// and checks (it used to be read twice, and the second read found it
/// empty: "not a finding file").
#[test]
fn unsupported_formats_are_refused_by_every_reader_and_pipes_are_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("export");
    let out = out.to_str().unwrap();
    for (field, needle) in [
        ("/format", "unsupported finding format 7"),
        ("/case/format", "unsupported case format 7"),
    ] {
        let f = edited_finding(tmp.path(), |v| *v.pointer_mut(field).unwrap() = 7.into());
        let f = f.to_str().unwrap();
        refused(&txfuzz(&["check", f]), needle);
        refused(
            &txfuzz(&["export", f, "--format", "script", "--out", out]),
            needle,
        );
        refused(&txfuzz(&["replay", f]), needle);
    }
    let finding = edited_finding(tmp.path(), |_| {});
    for args in [vec!["check", "/dev/stdin"], vec!["replay", "/dev/stdin"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let bytes = std::fs::read(&finding).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&bytes);
        });
        let o = child.wait_with_output().unwrap();
        writer.join().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("is not"), "{args:?}: {err}");
        assert!(o.status.code().is_some_and(|c| c != 2), "{args:?}: {err}");
    }
}

/// A second campaign on a locked `--out` is refused before it connects:
/// with the first one's lock held and a server URL where nothing listens,
/// the refusal names the lock, not the connection (it used to connect, and
/// on MariaDB change a global setting, first).
#[test]
fn a_locked_out_directory_is_refused_before_any_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let _held = txfuzz::finding::lock_dir(&out).unwrap();
    let o = txfuzz(&[
        "run",
        "--db",
        "mysql://txfuzz@127.0.0.1:1/test",
        "--tests",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&o, "another txfuzz campaign");
}
