//! `txfuzz run --reduce` and `txfuzz report` end to end, and the HTML page
//! rendered in headless Chromium (Debian's `chromium`; scripts/test.sh installs
//! it): a screenshot that decodes to a non-blank page of the requested size, and
//! the rendered DOM with the summary numbers, the signature headings and the
//! cycle's SVG. Without Chromium the report is written and checked but not
//! rendered, and the test says so (SKIPPED; under `TXFUZZ_REQUIRE_SERVERS=1`,
//! as in scripts/test.sh, it fails instead).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use txfuzz::finding::{write_atomic, FindingRecord, FINDING_FORMAT};
use txfuzz::model::{EngineInfo, Isolation};
use txfuzz::oracle::graph::{findings, CheckHistory, CheckTxn, Op, TxnStatus};

fn txfuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args(args)
        .output()
        .expect("run txfuzz")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A MariaDB REPEATABLE READ lost update (Hermitage P4) as a graph finding, with
/// markup in its summary to check escaping.
fn lost_update_record() -> FindingRecord {
    let read = |rid| Op::Read {
        table: "t".into(),
        rid,
        wl: "0".parse().unwrap(),
        op: None,
    };
    let upd = |op, before: &str| Op::Write {
        op,
        table: "t".into(),
        rid: 1,
        before: Some(before.parse().unwrap()),
        after: Some(format!("{before},{op}").parse().unwrap()),
        undone: false,
    };
    let t = |id, ops| CheckTxn {
        id,
        session: id,
        status: TxnStatus::Committed,
        label: None,
        savepoint_rollback: false,
        ops,
    };
    let h = CheckHistory {
        format: 1,
        isolation: None,
        engine: None,
        txns: vec![
            t(1, vec![read(1), upd(3, "0")]),
            t(2, vec![read(1), upd(7, "0,3")]),
        ],
        final_state: None,
    };
    let mut all = findings(&h, Isolation::RepeatableRead);
    let mariadb = txfuzz::engine::mysql::profile(&Default::default());
    txfuzz::oracle::verdict::apply(&mut all, &mariadb, Isolation::RepeatableRead);
    let mut finding = all
        .into_iter()
        .find(|f| f.kind == "lost-update")
        .expect("lost update");
    finding.summary.push_str(" <script>alert('x')</script>");
    let mut case = txfuzz::testkit::hermitage::p4();
    case.isolation = Isolation::RepeatableRead;
    FindingRecord {
        format: FINDING_FORMAT,
        txfuzz_version: "test".into(),
        finding,
        engine: EngineInfo {
            name: "mariadb".into(),
            version: "10.11".into(),
            url: "mysql://txfuzz@127.0.0.1:3306/test".into(),
            settings: Default::default(),
        },
        case,
        history: txfuzz::testkit::empty_history(Isolation::RepeatableRead),
        replay: String::new(),
        releases: None,
    }
}

fn headless(chromium: &Path, page: &Path, profile: &Path, extra: &[String]) -> Output {
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.extend(extra.iter().cloned());
    args.push(format!("file://{}", page.display()));
    Command::new(chromium)
        .args(&args)
        .output()
        .expect("run chromium")
}

/// Width and height from a PNG's signature and IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.len() > 33, "PNG too short");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

#[test]
fn run_reduce_then_report_renders_in_headless_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = txfuzz(&[
        "run",
        "--tests",
        "200",
        "--seed",
        "5",
        "--fault",
        "lose-write",
        "--reduce",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("reduced "), "{}", text(&o));
    // Each reduced finding whose correct outcome is one state is exported
    // as a Python program next to it (tests/export_script.rs runs them).
    assert!(text(&o).contains(".py)"), "{}", text(&o));
    let exported = std::fs::read_dir(out.join("findings"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "py")
        })
        .count();
    assert!(exported > 0, "{}", text(&o));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let distinct = summary["distinct"].as_array().unwrap();
    assert!(!distinct.is_empty());
    assert!(!summary["timeline"].as_array().unwrap().is_empty());
    let example = PathBuf::from(distinct[0]["example"].as_str().unwrap());
    let reduced = txfuzz::report::reduced_path(&example);
    assert!(reduced.exists(), "{} missing", reduced.display());
    assert!(reduced.with_extension("sql").exists());
    // `txfuzz reduce` on the same finding.
    let red_dir = tmp.path().join("red");
    let o = txfuzz(&[
        "reduce",
        example.to_str().unwrap(),
        "--out",
        red_dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("before:") && text(&o).contains("after:"));
    assert!(red_dir.join("reduced.json").exists() && red_dir.join("reduced.sql").exists());

    // A graph finding with a cycle joins the campaign's findings.
    let rec = lost_update_record();
    let json = serde_json::to_vec_pretty(&rec).unwrap();
    write_atomic(
        &out.join("findings/9999-case0-graph-lost-update.json"),
        &json,
    )
    .unwrap();

    let o = txfuzz(&["report", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = out.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script>alert"), "unescaped markup");
    assert!(!html.contains("http://") || !html.contains("src=\"http"));
    report_md_opens_with_what_needs_a_person(&out);

    let Some(chromium) = common::chromium() else {
        return;
    };
    let profile = tmp.path().join("chromium-profile");
    let png = tmp.path().join("report.png");
    let o = headless(
        &chromium,
        &page,
        &profile,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1200,1600".into(),
        ],
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}): {}", text(&o)));
    assert_eq!(png_size(&bytes), (1200, 1600));
    // A blank 1200x1600 page compresses to a few kB; text and charts do not.
    assert!(
        bytes.len() > 30_000,
        "screenshot looks blank: {} bytes",
        bytes.len()
    );
    if let Ok(keep) = std::env::var("TXFUZZ_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }

    let o = headless(&chromium, &page, &profile, &["--dump-dom".into()]);
    assert!(o.status.success(), "{}", text(&o));
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    let cases = summary["cases"].as_u64().unwrap().to_string();
    assert!(dom.contains("Campaign summary"), "{dom}");
    assert!(
        dom.contains(&format!("<td>{cases}</td>")),
        "cases count missing"
    );
    assert!(dom.contains(&format!("<td>{}</td>", summary["violations"])));
    assert!(dom.contains("wss:tx-final-state") || dom.contains("wss:stmt-final-state"));
    assert!(
        dom.contains("graph:lost-update"),
        "lost-update heading missing"
    );
    assert!(dom.contains("reduced from"), "reduced case missing");
    assert!(dom.contains("class=\"throughput\""));
    let cycle = dom.find("class=\"cycle\"").expect("cycle svg");
    let svg = &dom[cycle..cycle + dom[cycle..].find("</svg>").unwrap()];
    assert!(svg.contains(">T1<") && svg.contains(">T2<"), "{svg}");
    assert!(svg.contains("ww t#1") && svg.contains("rw t#1"), "{svg}");
    assert!(dom.contains("&lt;script&gt;alert"));
}

/// A campaign killed between writing a finding and the next summary flush
/// (every 2 s) leaves a summary that misses it, and one killed between a
/// finding's `.json` and its `.sql` leaves no script. `txfuzz report` completes
/// both from the finding files and says so; the summary's counts then equal
/// the files'.
#[test]
fn report_completes_the_output_of_a_killed_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    common::faulty_run(&out);
    let read = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let full = read(&out.join("summary.json"));
    let files: Vec<String> = full["finding_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(files.len() >= 2, "{full}");
    // The summary as a flush before the last finding wrote it.
    let last = PathBuf::from(files.last().unwrap());
    let rec = read(&last);
    let f = &rec["finding"];
    let mut stale = full.clone();
    stale["finding_files"].as_array_mut().unwrap().pop();
    let (oracle, kind) = (f["oracle"].as_str().unwrap(), f["kind"].as_str().unwrap());
    let n = stale["findings"][oracle][kind].as_u64().unwrap();
    stale["findings"][oracle][kind] = (n - 1).into();
    let counter = match (f["verdict"].as_str().unwrap(), f["known"].is_null()) {
        ("permitted", _) => "permitted",
        (_, false) => "known_violations",
        _ if oracle == "fidelity" => "fidelity",
        _ if kind == "query-bug" => "query_bugs",
        _ => "violations",
    };
    stale[counter] = (stale[counter].as_u64().unwrap() - 1).into();
    std::fs::write(out.join("summary.json"), stale.to_string()).unwrap();
    std::fs::remove_file(last.with_extension("sql")).unwrap();

    let o = txfuzz(&["report", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("1 finding(s) added"), "{}", text(&o));
    assert!(
        last.with_extension("sql").exists(),
        "the script is written again"
    );
    let repaired = read(&out.join("summary.json"));
    for key in [
        "violations",
        "known_violations",
        "permitted",
        "fidelity",
        "query_bugs",
        "findings",
    ] {
        assert_eq!(repaired[key], full[key], "{key}");
    }
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["finding_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                Path::new(f.as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    };
    assert_eq!(names(&repaired), names(&full));
    assert_eq!(repaired["completed_from_files"], 1);
    assert!(
        repaired["stopped"].as_str().unwrap().contains("killed"),
        "{repaired}"
    );
    // A second report has nothing left to do.
    let o = txfuzz(&["report", out.to_str().unwrap()]);
    assert!(!text(&o).contains("added"), "{}", text(&o));
}

/// `report.md` groups the findings by root cause: the new violations first
/// (each with a bug report that exists and holds its reproduction and
/// evidence), then known bugs, fidelity and permitted behaviour. The lost
/// writes of the fault are new violations of a few oracle kinds, far fewer
/// than their statement mixes.
fn report_md_opens_with_what_needs_a_person(out: &std::path::Path) {
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let order: Vec<usize> = [
        "## Needs a person",
        "## Known engine bugs",
        "## Fidelity",
        "## Permitted behaviour",
    ]
    .iter()
    .map(|h| md.find(h).unwrap_or_else(|| panic!("no {h} in:\n{md}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{md}");
    let links: Vec<&str> = md
        .lines()
        .filter_map(|l| l.split("](").nth(1))
        .filter_map(|rest| rest.split(')').next())
        .filter(|p| p.starts_with("reports/"))
        .collect();
    assert!(!links.is_empty(), "{md}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let signatures = summary["distinct"].as_array().unwrap().len();
    assert!(
        links.len() < signatures,
        "{} causes, {signatures} signatures",
        links.len()
    );
    for link in links {
        let bug = std::fs::read_to_string(out.join(link)).unwrap();
        for part in [
            "- Engine: sqlite",
            "- Isolation level:",
            "## Observed and expected",
            "## Reproduce",
            "## Evidence",
        ] {
            assert!(bug.contains(part), "{link} has no {part}:\n{bug}");
        }
    }
}
