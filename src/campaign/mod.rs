//! Campaigns: generate, execute and check cases until a count or a duration is
//! reached, writing each finding the moment it is made and `summary.json` as the
//! campaign goes. `--jobs N` runs N workers (`worker.rs`), each on its own
//! engine, feeding one collector (`collect.rs`); `--shard I/N` runs a share
//! of the case indexes (`shard.rs`), and `merge.rs` joins shards' output.

mod collect;
pub mod merge;
mod pattern_stats;
mod pin;
pub mod repair;
mod shard;
mod summary;
mod worker;

pub use shard::Shard;
pub use summary::{FirstFound, Incomplete, Summary};

use crate::engine::{Engine, EngineError};
use crate::exec::{execute_checked, ExecOptions};
use crate::finding::known::KnownIssues;
use crate::finding::{write_atomic, FindingStore};
use crate::gen::pattern::Generation;
use crate::gen::GenConfig;
use crate::model::{History, Isolation, TestCase};
use crate::oracle::{self, CheckStats, Finding, OracleKind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Tests(u64),
    Time(Duration),
}

#[derive(Clone, Debug)]
pub struct CampaignConfig {
    pub seed: u64,
    pub limit: Limit,
    /// `None`: every level the engine supports.
    pub isolations: Option<Vec<Isolation>>,
    /// `--isolation` named `mixed`: cases whose transactions each draw their
    /// own level (all of them when no level is named besides, else one
    /// case in as many as the named levels plus one).
    pub mixed: bool,
    /// `--setting`: per-session settings each session draws a value of.
    pub settings: Vec<crate::gen::SettingChoice>,
    /// `--until-known`: stop once each of these known issues was found.
    pub until_known: Option<UntilKnown>,
    pub oracles: Vec<OracleKind>,
    pub out: PathBuf,
    pub exec: ExecOptions,
    pub progress: bool,
    /// After the server went away: how long to wait for it to come back before
    /// stopping the campaign.
    pub recover_wait: Duration,
    /// Known engine bugs: matching violations are marked `known`.
    pub known: KnownIssues,
    /// The share of cases (0..=1) that also get a shadow run without
    /// instrumentation (`oracle::fidelity`); chosen by a hash of seed and index.
    pub shadow: f64,
    /// The share of the case indexes to run (`--shard I/N`).
    pub shard: Shard,
    /// Pin each worker, and the session threads it starts, to one core
    /// (`pin.rs`; the command line does unless `--no-pin`).
    pub pin: bool,
}

/// `--until-known`: the known issues a campaign runs until it has found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UntilKnown {
    /// Every entry that covers the engine and its version and whose settings
    /// the engine has or the campaign's sessions draw.
    All,
    Ids(Vec<String>),
}

impl std::str::FromStr for UntilKnown {
    type Err = String;
    fn from_str(s: &str) -> Result<UntilKnown, String> {
        if s == "all" {
            return Ok(UntilKnown::All);
        }
        let ids: Vec<String> = s.split(',').map(|id| id.trim().to_string()).collect();
        if ids.iter().any(String::is_empty) {
            return Err(format!("'{s}': `all` or a comma list of known-issue ids"));
        }
        Ok(UntilKnown::Ids(ids))
    }
}

impl UntilKnown {
    /// The ids this campaign looks for, or why it cannot look for them.
    pub fn resolve(
        &self,
        known: &KnownIssues,
        engine: &crate::model::EngineInfo,
        drawn: &[crate::gen::SettingChoice],
    ) -> Result<Vec<String>, String> {
        let ids: Vec<String> = match self {
            UntilKnown::All => known
                .issues
                .iter()
                .filter(|i| i.reachable(engine, drawn))
                .map(|i| i.id.clone())
                .collect(),
            UntilKnown::Ids(ids) => {
                for id in ids {
                    let Some(issue) = known.issues.iter().find(|i| &i.id == id) else {
                        return Err(format!(
                            "'{id}' is no known issue (known-issues.toml, --known)"
                        ));
                    };
                    if !issue.covers(engine) {
                        return Err(format!(
                            "'{id}' does not cover {} {}",
                            engine.name, engine.version
                        ));
                    }
                }
                ids.clone()
            }
        };
        if ids.is_empty() {
            return Err(format!(
                "no known issue covers {} {} with these settings",
                engine.name, engine.version
            ));
        }
        Ok(ids)
    }
}

/// The default `--shadow` rate.
pub const DEFAULT_SHADOW: f64 = 0.1;

impl CampaignConfig {
    /// `tests` cases of `seed` into `out`, with the default oracles, every
    /// level, the default shadow rate, no progress bar and no known issues
    /// (what a library user or a test starts from).
    pub fn new(seed: u64, tests: u64, out: &std::path::Path) -> CampaignConfig {
        CampaignConfig {
            seed,
            limit: Limit::Tests(tests),
            isolations: None,
            mixed: false,
            settings: Vec::new(),
            until_known: None,
            oracles: OracleKind::defaults(),
            out: out.to_path_buf(),
            exec: ExecOptions::default(),
            progress: false,
            recover_wait: Duration::from_secs(1),
            known: KnownIssues::default(),
            shadow: DEFAULT_SHADOW,
            shard: Shard::WHOLE,
            pin: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write to the output directory: {0}")]
    Output(#[from] std::io::Error),
}

/// The isolation levels to test: the requested ones, all supported by the engine.
pub fn resolve_isolations(
    engine: &dyn Engine,
    requested: Option<&[Isolation]>,
) -> Result<Vec<Isolation>, String> {
    let supported = &engine.profile().isolations;
    match requested {
        None => Ok(supported.clone()),
        Some(req) => {
            if let Some(bad) = req.iter().find(|i| !supported.contains(i)) {
                let names: Vec<&str> = supported.iter().map(|i| i.name()).collect();
                return Err(format!(
                    "{} does not support isolation level {bad} (supported: {})",
                    engine.info().name,
                    names.join(", ")
                ));
            }
            Ok(req.to_vec())
        }
    }
}

/// Runs one case through execution and every oracle.
pub fn run_case(
    engine: &mut dyn Engine,
    case: &TestCase,
    oracles: &[OracleKind],
    exec: &ExecOptions,
    stats: &mut CheckStats,
) -> Result<(History, Vec<Finding>), EngineError> {
    let executing = Instant::now();
    engine.load(case)?;
    let history = execute_checked(engine, case, exec)?;
    stats.time("execute", executing);
    if history.lost_connection() {
        // The server went away: only the crash oracle can say anything.
        let mut findings = oracle::crash::check(&history);
        if let Some(f) = findings.first_mut() {
            attach_server_log(engine, &mut f.evidence);
        }
        return Ok((history, findings));
    }
    let mut findings = Vec::new();
    // The shadow run reloads the case without instrumentation: last.
    let mut order = oracles.to_vec();
    order.sort_by_key(|o| *o == OracleKind::Fidelity);
    order.dedup();
    for o in order {
        // After a SIGINT, or once the server failed during an oracle, the
        // case is judged no further: on a server that stopped answering,
        // each oracle would wait out a deadline of its own
        // (docs/reliability.md, "SIGINT while ..."). The findings already
        // made are kept.
        let server_failed = findings.iter().any(oracle::crash::is_server_failure);
        if server_failed || crate::interrupt::requested().is_some() {
            break;
        }
        tracing::debug!(case = case.index, oracle = o.name(), "oracle starts");
        let checking = Instant::now();
        match oracle::check(o, engine, case, &history, exec, stats) {
            Ok(found) => findings.extend(found),
            Err(e) if e.is_server_failure() => findings.push(oracle::crash::server_failure(&e)),
            Err(e) => return Err(e),
        }
        stats.time(o.name(), checking);
    }
    // A server lost during an oracle's replay (`sdg` makes the crash
    // finding there) is evidenced by its log like one lost in the judged run.
    for f in &mut findings {
        let logged =
            f.evidence.get("server_log").is_some() || f.evidence.get("server_log_note").is_some();
        if oracle::crash::is_server_failure(f) && !logged {
            attach_server_log(engine, &mut f.evidence);
        }
    }
    Ok((history, findings))
}

pub fn run_campaign(
    engine: &mut dyn Engine,
    cfg: &CampaignConfig,
) -> Result<Summary, CampaignError> {
    run_campaign_with(engine, cfg, &Generation::Random)
}

/// [`run_campaign`] with a chosen generator (`--generator random|pattern|mixed`).
/// Pattern cases run the crash oracle first (explicit detection), then the
/// others; their `graph` findings carry the pattern report (implicit detection,
/// [`crate::oracle::pattern::annotate`]); `DIR/patterns.json` counts path hits.
pub fn run_campaign_with(
    engine: &mut dyn Engine,
    cfg: &CampaignConfig,
    generation: &Generation,
) -> Result<Summary, CampaignError> {
    run_campaign_jobs(vec![engine], cfg, generation)
}

/// [`run_campaign_with`] on several engines at once (`--jobs`): one worker
/// per engine, each with its own database or schema, claiming the next case
/// index, so the cases run for a seed and count do not depend on the number
/// of engines. The engines must be of one kind and version (the first one's
/// profile decides the levels and the SQL generated).
pub fn run_campaign_jobs(
    mut engines: Vec<&mut dyn Engine>,
    cfg: &CampaignConfig,
    generation: &Generation,
) -> Result<Summary, CampaignError> {
    let Some(first) = engines.first() else {
        return Err(CampaignError::Usage("a campaign needs an engine".into()));
    };
    let mut oracles = cfg.oracles.clone();
    if !matches!(generation, Generation::Random) {
        oracles.sort_by_key(|o| *o != OracleKind::Crash);
    }
    let isolations =
        resolve_isolations(&**first, cfg.isolations.as_deref()).map_err(CampaignError::Usage)?;
    let mixed_share = match (cfg.mixed, &cfg.isolations) {
        (false, _) => None,
        (true, None) => Some((1, 1)),
        (true, Some(named)) => Some((1, named.len() as u64 + 1)),
    };
    for choice in &cfg.settings {
        for value in &choice.values {
            if let Some(why) = first.profile().setting_problem(&choice.name, value) {
                return Err(CampaignError::Usage(format!("--setting {why}")));
            }
        }
    }
    let gen_cfg = GenConfig {
        isolations: isolations.clone(),
        features: first.profile().features,
        mixed_share,
        settings: cfg.settings.clone(),
        server_settings: first.info().settings.clone(),
        ..GenConfig::default()
    };
    let mut summary = Summary::new(first.info().clone(), cfg, &isolations);
    summary.jobs = engines.len();
    if let Some(until) = &cfg.until_known {
        summary.until_known = until
            .resolve(&cfg.known, first.info(), &cfg.settings)
            .map_err(|e| CampaignError::Usage(format!("--until-known {e}")))?;
    }
    let mut store = FindingStore::create(&cfg.out).map_err(|e| output_error(&cfg.out, e))?;
    summary.first_finding = store.next_number();
    for engine in engines.iter_mut() {
        // Every round trip of the engine's own connections is bounded too.
        engine.set_deadline(cfg.exec.hang_timeout);
    }
    let start = Instant::now();
    // From the start: a run killed early still says what it was.
    write_summary(&cfg.out, &summary)?;
    let progress = progress_bar(cfg);
    let mut hits = pattern_stats::Hits::default();
    let shared = worker::Shared {
        cfg,
        generation,
        oracles: &oracles,
        gen_cfg: &gen_cfg,
        start,
        next: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
        server_gone: AtomicBool::new(false),
    };
    let collector = collect::Collector {
        cfg,
        store: &mut store,
        summary: &mut summary,
        hits: &mut hits,
        progress: &progress,
        start,
        stop: &shared.stop,
    };
    let result = run_workers(engines, &shared, collector);
    progress.finish_and_clear();
    let failure = shared.failure.into_inner().ok().flatten();
    let result = result.and(failure.map_or(Ok(()), Err));
    finish_campaign(cfg, generation, summary, &hits, start, result)
}

/// One thread per engine running [`worker::work`], and the collector on
/// this thread until every worker is done.
fn run_workers(
    mut engines: Vec<&mut dyn Engine>,
    shared: &worker::Shared,
    mut collector: collect::Collector,
) -> Result<(), CampaignError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::thread::scope(|scope| {
        for (job, engine) in engines.iter_mut().enumerate() {
            let tx = tx.clone();
            let engine: &mut dyn Engine = &mut **engine;
            scope.spawn(move || worker::work(job, engine, shared, tx));
        }
        drop(tx);
        let result = collector.run(rx);
        // An output error: the workers stop after their current case.
        shared.stop.store(true, Ordering::SeqCst);
        result
    });
    // One worker gave up on the server: the others' engines do not wait on
    // it at exit either (a frozen server would hold each a deadline).
    if shared.server_gone.load(Ordering::SeqCst) {
        engines.iter_mut().for_each(|e| e.forget_server());
    }
    result
}

/// Says why the campaign stopped early, if it did, and writes the final
/// `summary.json` and `patterns.json`.
fn finish_campaign(
    cfg: &CampaignConfig,
    generation: &Generation,
    mut summary: Summary,
    hits: &pattern_stats::Hits,
    start: Instant,
    result: Result<(), CampaignError>,
) -> Result<Summary, CampaignError> {
    if let Err(e) = &result {
        summary.stopped = Some(e.to_string());
    }
    if let (Some(sig), None) = (crate::interrupt::requested(), &summary.stopped) {
        summary.stopped = Some(format!(
            "interrupted by {} after {} case(s)",
            crate::interrupt::name(sig),
            summary.cases
        ));
    }
    summary.finish(start.elapsed());
    let written = hits
        .write(&cfg.out, generation.name())
        .and_then(|()| write_summary(&cfg.out, &summary));
    result?;
    written?;
    Ok(summary)
}

/// A line for the user: above the progress bar, or on stderr when there is
/// none (`-q`, no terminal: CI, nohup).
fn say(progress: &indicatif::ProgressBar, line: String) {
    if progress.is_hidden() {
        eprintln!("{line}");
    } else {
        progress.println(line);
    }
}

fn output_error(out: &std::path::Path, e: std::io::Error) -> CampaignError {
    if e.kind() == std::io::ErrorKind::ResourceBusy {
        return CampaignError::Usage(e.to_string());
    }
    CampaignError::Output(std::io::Error::new(
        e.kind(),
        format!("{}: {e}", out.display()),
    ))
}

/// The tail of the server's log as crash evidence, or why there is none.
fn attach_server_log(engine: &dyn Engine, evidence: &mut serde_json::Value) {
    match engine.server_log_tail() {
        Ok(tail) => evidence["server_log"] = serde_json::Value::String(tail),
        Err(why) => evidence["server_log_note"] = serde_json::Value::String(why),
    }
}

/// A crash finding for a case whose execution failed because the server could
/// not be reached (no history beyond the error).
pub(super) fn unreachable_finding(
    engine: &dyn Engine,
    case: &TestCase,
    e: &EngineError,
) -> (History, Vec<Finding>) {
    let history = History {
        isolation: case.isolation,
        events: Vec::new(),
        outcomes: Vec::new(),
        txns: Vec::new(),
        final_state: Default::default(),
        final_state_error: Some(e.to_string()),
    };
    let mut finding = oracle::crash::server_failure(e);
    attach_server_log(engine, &mut finding.evidence);
    (history, vec![finding])
}

fn write_summary(out: &std::path::Path, summary: &Summary) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(summary).map_err(std::io::Error::other)?;
    write_atomic(&out.join("summary.json"), &json)
}

fn progress_bar(cfg: &CampaignConfig) -> indicatif::ProgressBar {
    if !cfg.progress {
        return indicatif::ProgressBar::hidden();
    }
    let bar = match cfg.limit {
        Limit::Tests(n) => indicatif::ProgressBar::new(cfg.shard.cases_of(n)),
        Limit::Time(_) => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} cases ({per_sec}) {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}
