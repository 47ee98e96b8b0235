//! Server faults against private MariaDB and PostgreSQL instances that the
//! tests start and stop themselves (own ports, own data directories, loopback
//! only; never the shared servers), and signals to txfuzz itself: server kill
//! with and without restart, SIGSTOP of the server (MariaDB) or of one backend
//! (PostgreSQL: the admin connection, a session), SIGINT of txfuzz. Each test
//! checks the finding written, the exit code, the summary's `stopped` reason,
//! and that no private database/schema, temporary directory or `.tmp` file is
//! left behind. docs/reliability.md lists them. The private instances need
//! root and the servers' binaries (tests/common/private.rs); without them
//! the server tests are skipped, loudly.

mod common;

use common::private::{children, signal, Kind, Private};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Any scenario must end within this (txfuzz must never hang).
const BOUND: Duration = Duration::from_secs(90);

fn txfuzz(db: Option<&str>, out: &Path, args: &[&str]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_txfuzz"));
    cmd.args(["run", "-q", "--seed", "3", "--hang-timeout", "2"])
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(db) = db {
        cmd.args(["--db", db]);
    }
    cmd.spawn().unwrap()
}

/// Waits for txfuzz to end (within [`BOUND`] of `since`): exit code, stderr.
fn finish(mut child: Child, since: Instant) -> (Option<i32>, String) {
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if since.elapsed() > BOUND {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "txfuzz did not end within {BOUND:?}; stderr: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (o.status.code(), stderr)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn findings(out: &Path, kind: &str) -> Vec<PathBuf> {
    files(&out.join("findings"))
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".json") && name.contains(&format!("-crash-{kind}"))
        })
        .collect()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// No `.tmp` file, every crash finding loadable, its `.sql` next to it.
fn assert_tidy(out: &Path) {
    let all = files(out);
    assert!(
        !all.iter()
            .any(|p| p.extension().is_some_and(|e| e == "tmp")),
        "{all:?}"
    );
    for f in findings(out, "") {
        txfuzz::finding::load_case_file(&f).unwrap_or_else(|e| panic!("{e}"));
        assert!(f.with_extension("sql").exists(), "{}", f.display());
    }
}

/// One fault, one finding kind: every crash finding is `crash:kind`
/// (killed: `connection-lost`; frozen: `hang`), wherever the fault struck.
fn assert_only_kind(out: &Path, kind: &str) {
    let all = findings(out, "");
    let other: Vec<&PathBuf> = all
        .iter()
        .filter(|p| !p.to_string_lossy().contains(&format!("-crash-{kind}")))
        .collect();
    assert!(other.is_empty(), "expected only crash:{kind}: {other:?}");
}

/// The summary's `stopped` reason contains `text`.
fn stopped_says(out: &Path, text: &str) {
    let s = summary(out);
    assert!(s["stopped"].as_str().unwrap_or("").contains(text), "{s}");
}

/// Cases run so far (from the summary written every 2 s).
fn cases_run(out: &Path) -> u64 {
    std::fs::read_to_string(out.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["cases"].as_u64())
        .unwrap_or(0)
}

/// A campaign against `server` that has run its first case.
fn under_way(server: &Private, args: &[&str]) -> (tempfile::TempDir, Instant, Child) {
    let out = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let t = txfuzz(Some(&server.url()), out.path(), args);
    wait_for("the first case", || cases_run(out.path()) > 0);
    (out, start, t)
}

// ------------------------------------------------------------------ kills

fn kill_without_restart(kind: Kind) {
    let Some(mut server) = Private::start(kind) else {
        return;
    };
    let (out, start, t) = under_way(&server, &["--time", "60s", "--recover-wait", "2s"]);
    server.kill();
    let (code, stderr) = finish(t, start);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("waiting up to"), "said nothing: {stderr}");
    stopped_says(out.path(), "did not come back");
    let crash = findings(out.path(), "");
    assert!(
        !crash.is_empty(),
        "no crash finding: {:?}",
        files(out.path())
    );
    assert_only_kind(out.path(), "connection-lost");
    // The tested server's own log, or why there is none; never another's.
    let f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&crash[0]).unwrap()).unwrap();
    let evidence = &f["finding"]["evidence"];
    match kind {
        // The private instance logs to its own --log-error file (MySQL's
        // in its root): the finding's tail ends as that file does.
        Kind::Mariadb | Kind::Mysql => {
            let tail = evidence["server_log"].as_str().unwrap_or_default();
            let own = std::fs::read_to_string(server.error_log()).unwrap();
            let last = own.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
            assert!(tail.contains(last), "{evidence}\nnot the tail of:\n{own}");
        }
        // Without logging_collector the server names no log file.
        Kind::Postgres => assert!(
            evidence["server_log_note"]
                .as_str()
                .is_some_and(|n| n.contains("log")),
            "{evidence}"
        ),
    }
    assert_tidy(out.path());
}

fn kill_and_restart(kind: Kind) {
    let Some(mut server) = Private::start(kind) else {
        return;
    };
    let (out, start, t) = under_way(
        &server,
        // Enough cases that the campaign is still running when the server is
        // killed (150 once were; pooled connections made them take 2 s).
        &[
            "--tests",
            "1000",
            "--recover-wait",
            "40s",
            "--oracle",
            "wss",
        ],
    );
    server.kill();
    std::thread::sleep(Duration::from_secs(1));
    server.launch();
    let (code, stderr) = finish(t, start);
    assert_eq!(code, Some(1), "{stderr}");
    let s = summary(out.path());
    assert!(s["stopped"].is_null(), "{s}");
    assert_eq!(s["cases"].as_u64(), Some(1000), "{s}");
    assert!(!findings(out.path(), "").is_empty(), "no crash finding");
    assert_eq!(server.leftovers(), Vec::<String>::new());
    assert_tidy(out.path());
}

#[test]
fn mariadb_killed_without_restart() {
    kill_without_restart(Kind::Mariadb);
}

/// MySQL 9.7 in its root: the crash finding carries the log of the server
/// it ran on, read through that server's root (issue 57), not the host's.
#[test]
fn mysql_killed_without_restart() {
    kill_without_restart(Kind::Mysql);
}

#[test]
fn postgres_killed_without_restart() {
    kill_without_restart(Kind::Postgres);
}

#[test]
fn mariadb_killed_and_restarted() {
    kill_and_restart(Kind::Mariadb);
}

#[test]
fn postgres_killed_and_restarted() {
    kill_and_restart(Kind::Postgres);
}

// --------------------------------------------------------------- SIGSTOP

/// Stops `target()` (a process of the server), continues it once a crash
/// finding of kind `expect` (`""`: any) is written; the campaign goes on to
/// its limit.
fn stop_then_continue(kind: Kind, expect: &str, target: impl Fn(&Private) -> Option<u32>) {
    let Some(server) = Private::start(kind) else {
        return;
    };
    let (out, start, t) = under_way(
        &server,
        &["--time", "25s", "--recover-wait", "30s", "--oracle", "wss"],
    );
    // A session's backend lives for one case: it may be gone before it is
    // stopped; then try the next one.
    let mut hung = false;
    for _ in 0..10 {
        let Some(pid) = target(&server) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        signal("STOP", pid);
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until && findings(out.path(), expect).is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
        signal("CONT", pid);
        if !findings(out.path(), expect).is_empty() {
            hung = true;
            break;
        }
    }
    assert!(hung, "no {expect} crash finding: {:?}", files(out.path()));
    assert_only_kind(out.path(), "hang");
    let (code, stderr) = finish(t, start);
    assert_eq!(code, Some(1), "{stderr}");
    let s = summary(out.path());
    assert!(s["stopped"].is_null(), "{s}");
    assert_eq!(server.leftovers(), Vec::<String>::new());
    assert_tidy(out.path());
}

#[test]
fn mariadb_stopped_then_continued() {
    // The whole server is stopped: a statement that misses its deadline and
    // a connection attempt that misses it (the kernel accepts, nobody
    // answers the handshake) are both a `hang`, wherever the campaign was.
    stop_then_continue(Kind::Mariadb, "hang", |s| Some(s.pid()));
}

/// Hangs the campaign counted as not reproduced (`crash` undecided
/// `hang-not-reproduced`, from the summary written every 2 s).
fn hangs_not_reproduced(out: &Path) -> u64 {
    std::fs::read_to_string(out.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["oracle_counts"]["crash"]["undecided_by"]["hang-not-reproduced"].as_u64())
        .unwrap_or(0)
}

/// Stops `target()` (a process of the server) for `stop_for`, longer than
/// the hang timeout, then continues it: the case under way hangs, the
/// server answers again within a hang timeout, the case runs again to its
/// end, and the hang is counted as not reproduced, with no finding; the
/// campaign goes on to its limit. (Stopped until txfuzz gives up waiting,
/// it is a finding: `stop_then_continue`.)
fn stopped_briefly(kind: Kind, stop_for: Duration, target: impl Fn(&Private) -> Option<u32>) {
    let Some(server) = Private::start(kind) else {
        return;
    };
    let (out, start, t) = under_way(
        &server,
        &["--time", "25s", "--recover-wait", "30s", "--oracle", "wss"],
    );
    for _ in 0..10 {
        let Some(pid) = target(&server) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        signal("STOP", pid);
        std::thread::sleep(stop_for);
        signal("CONT", pid);
        break;
    }
    wait_for("a hang counted as not reproduced", || {
        hangs_not_reproduced(out.path()) > 0
    });
    let (code, stderr) = finish(t, start);
    assert!(
        findings(out.path(), "").is_empty(),
        "{:?}",
        files(out.path())
    );
    // Any other finding, whole: what went wrong is in it.
    let other: Vec<String> = files(&out.path().join("findings"))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(code, Some(0), "{stderr}\n{}", other.join("\n"));
    let s = summary(out.path());
    assert!(s["stopped"].is_null(), "{s}");
    assert!(s["cases"].as_u64().unwrap() > 1, "{s}");
    assert_eq!(server.leftovers(), Vec::<String>::new());
    assert_tidy(out.path());
}

#[test]
fn mariadb_stopped_briefly() {
    // The whole server, for a little longer than the hang timeout (2 s):
    // what a machine that stalls every process for a moment does.
    stopped_briefly(Kind::Mariadb, Duration::from_millis(2500), |s| {
        Some(s.pid())
    });
}

#[test]
fn postgres_admin_backend_stopped_then_continued() {
    // Only the admin connection's backend, for 8 s: new connections still
    // work, so meanwhile the case runs again to its end.
    stopped_briefly(Kind::Postgres, Duration::from_secs(8), |s| {
        s.backend("admin")
    });
}

/// A session's backend lives for one case (milliseconds), too short to find
/// through `pg_stat_activity`: every backend the postmaster starts after the
/// campaign is under way (sessions, and the connections of replays) is
/// stopped as soon as it appears, until a crash finding is written. A backend
/// stopped during its connection handshake or later: either way the case is
/// a `hang` finding and the campaign goes on.
#[test]
fn postgres_session_backend_stopped_then_continued() {
    let Some(server) = Private::start(Kind::Postgres) else {
        return;
    };
    let (out, start, t) = under_way(
        &server,
        &["--time", "25s", "--recover-wait", "30s", "--oracle", "wss"],
    );
    let postmaster = server.pid();
    let baseline = children(postmaster);
    let mut stopped = Vec::new();
    let until = Instant::now() + Duration::from_secs(30);
    while findings(out.path(), "").is_empty() && Instant::now() < until {
        for p in children(postmaster) {
            if !baseline.contains(&p) && !stopped.contains(&p) {
                signal("STOP", p);
                stopped.push(p);
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    for &p in &stopped {
        signal("CONT", p);
    }
    assert!(
        !findings(out.path(), "").is_empty(),
        "no crash finding after stopping {} backend(s)",
        stopped.len()
    );
    assert_only_kind(out.path(), "hang");
    let (code, stderr) = finish(t, start);
    assert_eq!(code, Some(1), "{stderr}");
    let s = summary(out.path());
    assert!(s["stopped"].is_null(), "{s}");
    assert_eq!(server.leftovers(), Vec::<String>::new());
    assert_tidy(out.path());
}

/// The whole server stops and never continues while txfuzz runs: txfuzz
/// stops by its deadlines; its database is removed by the next run once the
/// server answers again. Every oracle runs: their own sessions (view's
/// scratch tables, integrity's checks) are bounded too (view's scratch
/// session once waited forever on a frozen server).
fn stopped_for_good(kind: Kind) {
    let Some(server) = Private::start(kind) else {
        return;
    };
    let (out, start, t) = under_way(&server, &["--time", "60s", "--recover-wait", "3s"]);
    let frozen = Instant::now();
    let pids = freeze(&server);
    let (code, stderr) = finish(t, start);
    let took = frozen.elapsed();
    thaw(&pids);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        took < STOPPED_FOR_GOOD_EXIT,
        "exit {took:?} after the freeze, bound {STOPPED_FOR_GOOD_EXIT:?}"
    );
    stopped_says(out.path(), "did not come back");
    assert!(!findings(out.path(), "").is_empty(), "no crash finding");
    assert_only_kind(out.path(), "hang");
    // Under -q with stderr a pipe: the server-went-away line, no log lines
    // (the lock-wait monitor used to warn every 3 s), no colour codes.
    assert!(!stderr.contains('\x1b'), "{stderr}");
    assert!(!stderr.contains("WARN"), "{stderr}");
    assert_tidy(out.path());
    // What could not be dropped then is dropped by the next run.
    wait_for("the server to answer", || server.answers());
    let out2 = tempfile::tempdir().unwrap();
    let t = txfuzz(Some(&server.url()), out2.path(), &["--tests", "1"]);
    let (code, stderr) = finish(t, Instant::now());
    assert!(matches!(code, Some(0 | 1)), "{stderr}");
    assert_eq!(server.leftovers(), Vec::<String>::new(), "{stderr}");
}

/// How long after a freeze for good the campaign exits: the case under way
/// ends by its hang timeout (or the stall timeout, 3 s, when every statement
/// left waits on a lock) and a cancel's connect timeout (3 s), then recovery
/// waits `--recover-wait` and its last attempt one more connect timeout.
/// Here (`--hang-timeout 2 --recover-wait 3s`): 2 + 3 + 3 + 3 + 3 = 14 s,
/// and 6 s of slack (the server tests run side by side on two cores: 19 s
/// seen once on PostgreSQL then, 15-17 s alone). (Measured with `--hang-timeout 5 --recover-wait 20s`:
/// 30-33 s, the bound 34 s; it was 27-45 s when each oracle after a hung one
/// waited a hang timeout of its own.)
const STOPPED_FOR_GOOD_EXIT: Duration = Duration::from_secs(20);

/// The server freezes for good. `freeze` returns the paused processes.
fn freeze(server: &Private) -> Vec<u32> {
    let pids: Vec<u32> = std::iter::once(server.pid())
        .chain(children(server.pid()))
        .collect();
    for &p in &pids {
        signal("STOP", p);
    }
    pids
}

fn thaw(pids: &[u32]) {
    for &p in pids {
        signal("CONT", p);
    }
}

/// Ctrl-C while the workers wait for a frozen server ends the campaign within
/// the hang timeouts of the case under way, not after `--recover-wait`, and
/// the summary says it was interrupted (it used to wait out the whole recover
/// wait and say "did not come back").
#[test]
fn mariadb_interrupted_while_recovering() {
    let Some(server) = Private::start(Kind::Mariadb) else {
        return;
    };
    let (out, _, t) = under_way(
        &server,
        &[
            "--time",
            "80s",
            "--recover-wait",
            "80s",
            "--jobs",
            "2",
            "--oracle",
            "wss",
        ],
    );
    let pids = freeze(&server);
    wait_for("a crash finding", || !findings(out.path(), "").is_empty());
    std::thread::sleep(Duration::from_secs(1));
    let signalled = Instant::now();
    signal("INT", t.id());
    let (code, stderr) = finish(t, signalled);
    let took = signalled.elapsed();
    thaw(&pids);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took < Duration::from_secs(10), "exit {took:?} after SIGINT");
    stopped_says(out.path(), "interrupted by SIGINT");
    assert_tidy(out.path());
}

/// How long after SIGINT a campaign whose server froze one second earlier
/// may take to exit: the case under way ends when its running statement
/// misses the hang timeout, or, when every statement left waits on a lock,
/// after the stall timeout (3 s); the cancel that cannot connect takes one
/// connect timeout (3 s), a last connection attempt another; after that
/// nothing waits on the server (no further oracle, shadow run, recovery,
/// session reset or clean-up round trip). With `--hang-timeout 2`: 2 + 3 +
/// 3 + 3 = 11 s from the freeze, 10 s from the signal, and 4 s of slack (the
/// server tests run side by side on two cores). It used to be 4-43 s with `--hang-timeout 5`: each oracle
/// after the hung one, the shadow run, and each session's reset waited a
/// hang timeout of its own.
const INTERRUPTED_FREEZE_EXIT: Duration = Duration::from_secs(14);

/// Ctrl-C one second into a freeze, with the default oracles and two
/// workers, the freeze landing at a different point of a case each time
/// (statements, oracles' replays, view's scratch, the shadow run): every
/// exit is within [`INTERRUPTED_FREEZE_EXIT`] of the signal, says it was
/// interrupted, and leaves nothing behind.
#[test]
fn mariadb_interrupted_one_second_into_a_freeze() {
    let Some(server) = Private::start(Kind::Mariadb) else {
        return;
    };
    let mut took = Vec::new();
    for round in 0..6u64 {
        let args = ["--time", "80s", "--recover-wait", "20s", "--shadow", "1.0"];
        let (out, _, t) = under_way(&server, &args);
        std::thread::sleep(Duration::from_millis(150 * round));
        let pids = freeze(&server);
        std::thread::sleep(Duration::from_secs(1));
        let signalled = Instant::now();
        signal("INT", t.id());
        let (code, stderr) = finish(t, signalled);
        took.push(signalled.elapsed());
        thaw(&pids);
        assert_eq!(code, Some(130), "{stderr}");
        stopped_says(out.path(), "interrupted by SIGINT");
        assert_tidy(out.path());
        wait_for("the server to answer", || server.answers());
    }
    eprintln!("exits after SIGINT: {took:?}");
    let slowest = took.iter().max().copied().unwrap_or_default();
    assert!(
        slowest < INTERRUPTED_FREEZE_EXIT,
        "exits after SIGINT {took:?}, bound {INTERRUPTED_FREEZE_EXIT:?}"
    );
}

/// With two workers and a server frozen for good, the campaign stops once the
/// first worker gives up: the other does not wait a recover wait of its own
/// (it used to: about twice `--recover-wait`).
#[test]
fn mariadb_workers_give_up_together() {
    let Some(server) = Private::start(Kind::Mariadb) else {
        return;
    };
    let (out, _, t) = under_way(
        &server,
        &[
            "--time",
            "80s",
            "--recover-wait",
            "20s",
            "--jobs",
            "2",
            "--oracle",
            "wss",
        ],
    );
    let frozen = Instant::now();
    let pids = freeze(&server);
    let (code, stderr) = finish(t, frozen);
    let took = frozen.elapsed();
    thaw(&pids);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        took < Duration::from_secs(30),
        "exit {took:?} after the freeze (recover wait 20 s, hang timeout 2 s)"
    );
    stopped_says(out.path(), "did not come back");
    assert_tidy(out.path());
}

#[test]
fn mariadb_stopped_for_good() {
    stopped_for_good(Kind::Mariadb);
}

#[test]
fn postgres_stopped_for_good() {
    stopped_for_good(Kind::Postgres);
}

// ---------------------------------------------------------------- SIGINT

fn sqlite_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in [PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with("txfuzz-sqlite-")
            {
                out.push(e.path());
            }
        }
    }
    out
}

/// SQLite campaigns of these tests run one at a time (the temporary
/// database check counts directories).
static SQLITE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn interrupted(server: Option<&Private>) {
    let _one = server
        .is_none()
        .then(|| SQLITE.lock().unwrap_or_else(|e| e.into_inner()));
    let out = tempfile::tempdir().unwrap();
    let before = sqlite_dirs();
    let start = Instant::now();
    let url = server.map(Private::url);
    let t = txfuzz(url.as_deref(), out.path(), &["--time", "60s"]);
    wait_for("cases before the signal", || cases_run(out.path()) > 0);
    signal("INT", t.id());
    let (code, stderr) = finish(t, start);
    assert_eq!(code, Some(130), "{stderr}");
    stopped_says(out.path(), "interrupted by SIGINT");
    assert_tidy(out.path());
    match server {
        Some(server) => {
            assert_eq!(server.leftovers(), Vec::<String>::new());
            if server.kind == Kind::Mariadb {
                // The global setting txfuzz turned on is off again.
                let v = server.query("SELECT @@GLOBAL.innodb_status_output_locks");
                assert_eq!(v, Some(vec!["0".to_string()]));
            }
        }
        None => {
            let new: Vec<PathBuf> = sqlite_dirs()
                .into_iter()
                .filter(|d| !before.contains(d))
                .collect();
            assert!(new.is_empty(), "temporary databases left: {new:?}");
        }
    }
}

#[test]
fn sqlite_interrupted() {
    interrupted(None);
}

#[test]
fn mariadb_interrupted() {
    let Some(server) = Private::start(Kind::Mariadb) else {
        return;
    };
    interrupted(Some(&server));
}

#[test]
fn postgres_interrupted() {
    let Some(server) = Private::start(Kind::Postgres) else {
        return;
    };
    interrupted(Some(&server));
}

/// Two campaigns share one MariaDB: the one that ends first leaves the
/// global `innodb_status_output_locks` ON for the other (it used to turn it
/// OFF, and the other then named the blocker of 3-4 of ~23 waits), and says
/// so; the last one turns it OFF, and says so.
#[test]
fn two_campaigns_share_the_global_setting() {
    let Some(server) = Private::start(Kind::Mariadb) else {
        return;
    };
    let setting = || server.query("SELECT @@GLOBAL.innodb_status_output_locks");
    assert_eq!(setting(), Some(vec!["0".to_string()]));
    let (out_a, start_a, a) = under_way(&server, &["--time", "25s", "--oracle", "wss"]);
    let out_b = tempfile::tempdir().unwrap();
    let b = txfuzz(
        Some(&server.url()),
        out_b.path(),
        &["--tests", "20", "--oracle", "wss"],
    );
    let (code, stderr_b) = finish(b, Instant::now());
    assert!(matches!(code, Some(0 | 1)), "{stderr_b}");
    assert!(
        cases_run(out_a.path()) > 0 && a_is_running(&server),
        "the first campaign ended before the second"
    );
    assert_eq!(setting(), Some(vec!["1".to_string()]), "{stderr_b}");
    assert!(
        stderr_b.contains("left the server-global innodb_status_output_locks ON"),
        "{stderr_b}"
    );
    let (code, stderr_a) = finish(a, start_a);
    assert!(matches!(code, Some(0 | 1)), "{stderr_a}");
    assert!(
        stderr_a.contains("turned the server-global innodb_status_output_locks ON"),
        "{stderr_a}"
    );
    assert!(stderr_a.contains("back OFF"), "{stderr_a}");
    assert_eq!(setting(), Some(vec!["0".to_string()]));
    assert_eq!(server.leftovers(), Vec::<String>::new());
}

/// Whether a txfuzz database other than the marker is on `server`.
fn a_is_running(server: &Private) -> bool {
    server
        .leftovers()
        .iter()
        .any(|d| d != "txfuzz_restore_status_locks")
}

#[test]
fn one_output_directory_takes_one_campaign() {
    let _one = SQLITE.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let first = txfuzz(None, out.path(), &["--time", "20s"]);
    wait_for("the first campaign", || {
        out.path().join("summary.json").exists()
    });
    let second = txfuzz(None, out.path(), &["--tests", "1"]);
    let (code, stderr) = finish(second, Instant::now());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&out.path().display().to_string()),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    signal("INT", first.id());
    let (code, _) = finish(first, Instant::now());
    assert_eq!(code, Some(130));
}
