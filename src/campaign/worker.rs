//! One campaign worker (`--jobs N` runs N): it claims the next case index of
//! its shard, generates the case, runs it on its own engine (its own database
//! or schema) through every oracle, and hands the result to the collector.
//! The case of an index does not depend on the worker that runs it.

use super::{run_case, CampaignConfig, CampaignError, Limit};
use crate::engine::Engine;
use crate::exec::ExecOptions;
use crate::finding::{render_script_in, FindingRecord};
use crate::gen::pattern::Generation;
use crate::gen::GenConfig;
use crate::model::{History, TestCase};
use crate::oracle::{self, CheckStats, Finding, OracleKind};
use crate::sql::Layout;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the workers of one campaign share.
pub(super) struct Shared<'a> {
    pub cfg: &'a CampaignConfig,
    pub generation: &'a Generation,
    pub oracles: &'a [OracleKind],
    pub gen_cfg: &'a GenConfig,
    pub start: Instant,
    /// The next case of the shard to claim (its `k`, not its index).
    pub next: AtomicU64,
    /// Set when a worker failed or the collector stopped: claim no more.
    pub stop: AtomicBool,
    /// The first error a worker could not go on after.
    pub failure: Mutex<Option<CampaignError>>,
    /// A worker's recovery gave up on the server: no engine asks it
    /// anything more at exit ([`Engine::forget_server`]).
    pub server_gone: AtomicBool,
}

/// A worker's message to the collector.
pub(super) enum Report {
    Case(Box<CaseDone>),
    /// The server went away or hung during `case`; the worker waits for it.
    Recovering {
        case: u64,
    },
    /// The worker stopped the campaign early (why).
    Stopped(String),
}

/// One executed and checked case.
pub(super) struct CaseDone {
    pub case: TestCase,
    pub history: History,
    pub stats: CheckStats,
    /// Each finding as its record and its `.sql` script.
    pub findings: Vec<(FindingRecord, String)>,
    /// A pattern case: the pattern's name and whether its path was hit.
    pub pattern: Option<(String, bool)>,
}

/// Runs cases until the limit, an interrupt, a stop, or an error (which
/// stops the other workers too; so does a panic, which `thread::scope`
/// then carries to the campaign). Worker `job` is pinned to a core when the
/// campaign says so (`pin.rs`).
pub(super) fn work(job: usize, engine: &mut dyn Engine, shared: &Shared, tx: Sender<Report>) {
    let _stop_on_panic = StopOnPanic(&shared.stop);
    if shared.cfg.pin {
        let cpu = super::pin::pin_worker(job);
        tracing::debug!(job, ?cpu, "worker pinned");
    }
    if let Err(e) = work_until_done(engine, shared, &tx) {
        shared.stop.store(true, Ordering::SeqCst);
        if let Ok(mut failure) = shared.failure.lock() {
            failure.get_or_insert(e);
        }
    }
}

/// Sets the stop flag when the worker's thread unwinds, so the other
/// workers stop after their current case instead of running to the limit.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

fn work_until_done(
    engine: &mut dyn Engine,
    shared: &Shared,
    tx: &Sender<Report>,
) -> Result<(), CampaignError> {
    let cfg = shared.cfg;
    while let Some(index) = claim(shared) {
        // How long a re-run of a hung case already waited for the server.
        let mut waited = Duration::ZERO;
        let done = run_index(engine, shared, index, &mut waited)?;
        // The server failed in the judged run, or in an oracle's replay or
        // own session (a crash finding without a lost history).
        let crashed = done.history.lost_connection()
            || done
                .findings
                .iter()
                .any(|(rec, _)| oracle::crash::is_server_failure(&rec.finding));
        if tx.send(Report::Case(Box::new(done))).is_err() {
            break; // the collector is gone: it stopped the campaign
        }
        if crashed {
            // When the campaign is already stopping, `recover` gives up at
            // once: the engine then knows the server is gone and does not
            // wait on it at exit.
            let already = stopping(shared);
            if !already {
                let _ = tx.send(Report::Recovering { case: index });
            }
            let wait = cfg.recover_wait.saturating_sub(waited);
            if let Err(e) = engine.recover(wait, &|| stopping(shared)) {
                shared.server_gone.store(true, Ordering::SeqCst);
                // The first worker to give up says why; after a signal the
                // campaign says "interrupted" itself.
                let first = !shared.stop.swap(true, Ordering::SeqCst);
                if first && !already && crate::interrupt::requested().is_none() {
                    let _ = tx.send(Report::Stopped(format!(
                        "the server did not come back: {e}"
                    )));
                }
                break;
            }
        }
    }
    Ok(())
}

/// Whether the campaign is stopping: a worker gave up or failed, or a signal.
fn stopping(shared: &Shared) -> bool {
    shared.stop.load(Ordering::SeqCst) || crate::interrupt::requested().is_some()
}

/// The next case index to run, or `None` when the campaign is over.
fn claim(shared: &Shared) -> Option<u64> {
    if stopping(shared) {
        return None;
    }
    let cfg = shared.cfg;
    if let Limit::Time(d) = cfg.limit {
        if shared.start.elapsed() >= d {
            return None;
        }
    }
    let k = shared.next.fetch_add(1, Ordering::SeqCst);
    let index = cfg.shard.case_index(k)?;
    match cfg.limit {
        Limit::Tests(n) if index >= n => None,
        _ => Some(index),
    }
}

fn run_index(
    engine: &mut dyn Engine,
    shared: &Shared,
    index: u64,
    waited: &mut Duration,
) -> Result<CaseDone, CampaignError> {
    let cfg = shared.cfg;
    let mut stats = CheckStats::default();
    let generating = Instant::now();
    let (case, pattern) = shared.generation.case(cfg.seed, index, shared.gen_cfg);
    stats.time("generate", generating);
    let case_start = Instant::now();
    let mut case_oracles = shared.oracles.to_vec();
    if oracle::fidelity::sampled(cfg.seed, index, cfg.shadow) {
        case_oracles.push(OracleKind::Fidelity);
    }
    let (history, mut findings) =
        run_until_no_hang(engine, shared, &case, &case_oracles, &mut stats, waited)?;
    let mut hit = None;
    if let (Some((p, b)), false) = (&pattern, history.lost_connection()) {
        let report = oracle::pattern::check(p, b, &case, &history);
        hit = Some((p.name.clone(), report.path_hit));
        oracle::pattern::annotate(&mut findings, &report, p);
    }
    cfg.known
        .mark(&mut findings, &case, &history, engine.info());
    tracing::debug!(
        case = case.index,
        ms = case_start.elapsed().as_millis() as u64,
        blocked = history.blocked_events(),
        "case done"
    );
    let plain = !findings.is_empty()
        && plain_reproduces(engine, &case, &history, &findings, &cfg.exec, &mut stats);
    let findings = records(engine, &case, &history, findings, plain);
    Ok(CaseDone {
        case,
        history,
        stats,
        findings,
        pattern: hit,
    })
}

/// How many times a case whose run hung is run again, once the server
/// answers again within a hang timeout. A hang is a finding when every run
/// of the case hangs, or the server still does not answer; one that does
/// not come back belongs to the machine, not the case (seen: cases of
/// different workers hung within the same seconds, the server silent for
/// over 10 s, while a compiler ran beside the campaign; none of those cases
/// hung when run again, BENCHMARKS.md "hangs that do not come back"). It is
/// counted as `crash` undecided `hang-not-reproduced`, and the case is
/// judged on the run that completed.
const HANG_RERUNS: usize = 2;

fn is_hang(f: &Finding) -> bool {
    f.oracle == OracleKind::Crash && f.kind == "hang"
}

/// Runs `case` through `oracles`; while its run hangs, up to
/// [`HANG_RERUNS`] times again on a recovered engine. Returns the last
/// run's history and findings; `stats` counts every run's time and replays;
/// `waited` is how long a recovery that failed waited for the server (a part
/// of the `--recover-wait` the worker then waits after the hang finding).
fn run_until_no_hang(
    engine: &mut dyn Engine,
    shared: &Shared,
    case: &TestCase,
    oracles: &[OracleKind],
    stats: &mut CheckStats,
    waited: &mut Duration,
) -> Result<(History, Vec<Finding>), CampaignError> {
    let cfg = shared.cfg;
    let mut runs = 0;
    loop {
        let mut run = CheckStats::default();
        let (history, mut findings) = match run_case(engine, case, oracles, &cfg.exec, &mut run) {
            Ok(done) => done,
            Err(e) if e.is_server_failure() => super::unreachable_finding(engine, case, &e),
            Err(e) => return Err(e.into()),
        };
        runs += 1;
        let hung = findings.iter().any(is_hang);
        let replays = stats.replays + run.replays;
        let mut seconds = std::mem::take(&mut stats.seconds);
        for (phase, s) in &run.seconds {
            *seconds.entry(phase.clone()).or_default() += s;
        }
        *stats = CheckStats {
            replays,
            seconds,
            ..run
        };
        if !hung {
            if runs > 1 {
                tracing::warn!(
                    case = case.index,
                    runs,
                    "the case's run hung, and ran to its end when run again: not a finding"
                );
                let counts = stats.oracle("crash");
                counts.undecided += 1;
                *counts
                    .undecided_by
                    .entry("hang-not-reproduced".into())
                    .or_default() += 1;
            }
            return Ok((history, findings));
        }
        // A server that does not answer again within a hang timeout is
        // still not answering: that is the finding (the worker then waits
        // the rest of `--recover-wait` for it, as after any server failure).
        let give_up = || stopping(shared);
        let wait = cfg.exec.hang_timeout.min(cfg.recover_wait);
        let mut recovered = || {
            let start = Instant::now();
            let done = engine.recover(wait, &give_up);
            *waited = if done.is_ok() {
                Duration::ZERO
            } else {
                start.elapsed()
            };
            done.is_ok()
        };
        if runs > HANG_RERUNS || give_up() || !recovered() {
            for f in findings.iter_mut().filter(|f| is_hang(f)) {
                f.evidence["runs_hung"] = runs.into();
            }
            return Ok((history, findings));
        }
    }
}

/// Whether the case's findings reproduce without the hidden columns: its
/// shadow run (the campaign's, or one run now for a case with findings)
/// agrees with the judged run. Then its `.sql` scripts show the plain
/// tables, as the person wrote them.
fn plain_reproduces(
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    findings: &[Finding],
    opts: &ExecOptions,
    stats: &mut CheckStats,
) -> bool {
    let fidelity = OracleKind::Fidelity;
    // A server that failed during the case (a crash finding from a replay
    // or an oracle's own session) is not asked for a shadow run; nor is one
    // after a SIGINT (the server may be why the user pressed it).
    let failed = |f: &Finding| f.oracle == fidelity || oracle::crash::is_server_failure(f);
    if history.lost_connection()
        || findings.iter().any(failed)
        || crate::interrupt::requested().is_some()
    {
        return false;
    }
    if let Some(counts) = stats.per_oracle.get(&fidelity.to_string()) {
        return counts.checked == 1;
    }
    stats.replays += 1;
    matches!(
        oracle::fidelity::shadow(engine, case, history, opts),
        Ok(oracle::fidelity::Comparison::Agree)
    )
}

/// The finding records of a case, each with its `.sql` script (`plain`:
/// on the case's own tables, see [`plain_reproduces`]).
fn records(
    engine: &dyn Engine,
    case: &TestCase,
    history: &History,
    findings: Vec<Finding>,
    plain: bool,
) -> Vec<(FindingRecord, String)> {
    let layout = if plain {
        Layout::Plain
    } else {
        Layout::Instrumented
    };
    findings
        .into_iter()
        .map(|f| {
            let rec = FindingRecord::new(f, engine.info().clone(), case.clone(), history.clone());
            let header = rec.script_header();
            let script = render_script_in(engine.dialect(), case, Some(history), &header, layout);
            (rec, script)
        })
        .collect()
}
