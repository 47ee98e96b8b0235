//! `txfuzz check HISTORY.json`: the offline dependency-graph checker (Elle-like),
//! with the engine's profile, the verdict policy and the known issues the
//! campaign uses (a finding file's recorded verdict is re-derived and compared),
//! and `txfuzz bench-check`: its scalability benchmark on synthetic histories.

use super::UsageError;
use crate::engine::EngineProfile;
use crate::model::{EngineInfo, History, Isolation, TestCase, WriteList};
use crate::oracle::graph::{self, CheckHistory, CheckTxn, FinalRow, Op, TxnStatus};
use crate::oracle::{Finding, Verdict};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// A checker history (docs/history-format.md), a txfuzz finding file or a
    /// stress history (`stress-history.json`).
    pub history: PathBuf,
    /// Level to check against (default: the history's, else serializable).
    #[arg(long)]
    pub isolation: Option<String>,
    /// Write one JSON file per finding into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub known: super::KnownArgs,
}

/// What a file to check holds.
pub struct Loaded {
    pub history: CheckHistory,
    /// For a finding file or stress history: the case, what happened, the engine.
    pub recorded: Option<(TestCase, History, Option<EngineInfo>)>,
    /// For a finding file: the finding the campaign made.
    pub finding: Option<Finding>,
}

/// A finding file or a stress history: a case plus what happened.
#[derive(serde::Deserialize)]
struct Recorded {
    /// A finding file's format (a stress history has none).
    format: Option<u32>,
    case: TestCase,
    history: History,
    engine: Option<EngineInfo>,
    finding: Option<Finding>,
}

/// Loads either format; the error is one line. The file is parsed as it is
/// read (twice: once to tell the formats apart, keeping nothing; a pipe is
/// read once into memory), with a size limit ([`crate::input`]).
pub fn load(path: &std::path::Path) -> Result<Loaded, String> {
    use crate::input::{Skip, Source, HISTORY_LIMIT};
    #[derive(serde::Deserialize)]
    struct Probe {
        case: Option<Skip>,
        history: Option<Skip>,
    }
    let (probe, source): (Probe, Source) = Source::probe(path, HISTORY_LIMIT, "a JSON object")?;
    if probe.case.is_some() && probe.history.is_some() {
        let r: Recorded = source.json("a finding file or stress history")?;
        crate::finding::check_formats(path, r.format, &r.case)?;
        crate::finding::validate_case(path, &r.case)?;
        let name = r.engine.as_ref().map(|e| e.name.as_str());
        Ok(Loaded {
            history: CheckHistory::from_case(&r.case, &r.history, name),
            recorded: Some((r.case, r.history, r.engine)),
            finding: r.finding,
        })
    } else {
        let history: CheckHistory = source.json("a checker history")?;
        history
            .validate()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Loaded {
            history,
            recorded: None,
            finding: None,
        })
    }
}

/// What re-judging a recorded finding gave.
enum Rechecked {
    Finding(Box<Finding>),
    /// The current oracles would not report it (with why).
    NotReported(&'static str),
}

/// The verdict of a recorded finding under the current profile, verdict
/// policy and known issues: the `graph` checker's own finding of that kind
/// for a `graph` finding, the recorded claim judged again for the others.
fn recheck(
    recorded: &Finding,
    graph_findings: &[Finding],
    profile: Option<&EngineProfile>,
    level: Isolation,
    case: &TestCase,
    history: &History,
) -> Rechecked {
    if recorded.oracle == crate::oracle::OracleKind::Graph {
        return match graph_findings.iter().find(|f| f.kind == recorded.kind) {
            Some(f) => Rechecked::Finding(Box::new(f.clone())),
            None => Rechecked::NotReported("not found by the offline graph checker"),
        };
    }
    if recorded.oracle == crate::oracle::OracleKind::Wss
        && profile.is_some_and(|p| {
            !p.write_conflicts_detected.contains(&level)
                && crate::oracle::commit_order::unsound_reason(case, history, p).is_some()
        })
    {
        return Rechecked::NotReported(
            "undecided now: at this level wss judges only cases whose writes each saw the units committed before their own",
        );
    }
    if recorded.claim.is_none() && recorded.verdict == Verdict::Permitted {
        return Rechecked::NotReported(
            "recorded before findings carried claims: its permission cannot be re-derived",
        );
    }
    let mut f = recorded.clone();
    f.verdict = Verdict::Violation;
    f.permitted_by = None;
    if let Some(p) = profile {
        match case.mixed_levels() {
            true => crate::oracle::verdict::apply_to_case(std::slice::from_mut(&mut f), p, case),
            false => crate::oracle::verdict::apply(std::slice::from_mut(&mut f), p, level),
        }
    }
    Rechecked::Finding(Box::new(f))
}

pub fn check(args: CheckArgs) -> Result<ExitCode, UsageError> {
    let loaded = load(&args.history).map_err(UsageError)?;
    let h = &loaded.history;
    let level = match &args.isolation {
        Some(l) => l.parse::<Isolation>()?,
        None => h.isolation.unwrap_or(Isolation::Serializable),
    };
    let (engine_info, profile) = engine_profile(&loaded);
    let known = args.known.load()?;
    let start = Instant::now();
    let analysis = graph::analyse(h);
    // A recorded case of mixed levels is judged by its sessions' levels.
    let mixed = loaded
        .recorded
        .as_ref()
        .map(|(case, _, _)| case)
        .filter(|case| case.mixed_levels() && args.isolation.is_none());
    let mut findings = match mixed {
        Some(case) => graph::of_case(&analysis, case),
        None => graph::to_findings(&analysis, level),
    };
    if let Some(p) = &profile {
        match mixed {
            Some(case) => crate::oracle::verdict::apply_to_case(&mut findings, p, case),
            None => crate::oracle::verdict::apply(&mut findings, p, level),
        }
    }
    if let (Some((case, history, _)), Some(info)) = (&loaded.recorded, &engine_info) {
        known.mark(&mut findings, case, history, info);
    }
    println!(
        "checked {} transactions ({} committed, {} rows, {} edges) at {level} in {:.3} s",
        analysis.stats.txns,
        analysis.stats.committed,
        analysis.stats.rows,
        analysis.stats.edges,
        start.elapsed().as_secs_f64()
    );
    print_findings(&findings);
    let rechecked = report_recheck(
        &loaded,
        &findings,
        engine_info.as_ref(),
        profile.as_ref(),
        level,
        &known,
    );
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)?;
        for (i, f) in findings.iter().enumerate() {
            let p = dir.join(format!("{:04}-graph-{}.json", i + 1, f.kind));
            std::fs::write(&p, serde_json::to_string_pretty(f)?)?;
        }
    }
    let all: Vec<&Finding> = findings.iter().chain(rechecked.iter()).collect();
    let (new, known_n, permitted) = verdict_counts(&all);
    println!("{new} violation(s), {known_n} known, {permitted} permitted");
    Ok(if args.known.fails(new, known_n) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The engine a file names and its profile: from the recorded engine
/// (settings included), or from the history's engine name; without one
/// nothing is permitted.
fn engine_profile(loaded: &Loaded) -> (Option<EngineInfo>, Option<EngineProfile>) {
    let engine_info = match (&loaded.recorded, &loaded.history.engine) {
        (Some((_, _, Some(info))), _) => Some(info.clone()),
        (_, Some(name)) => Some(EngineInfo {
            name: name.clone(),
            ..EngineInfo::default()
        }),
        _ => None,
    };
    let profile = match engine_info
        .as_ref()
        .map(crate::engine::registry::profile_of)
    {
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => {
            // A history from another tool may name any engine.
            println!("note: {e}; nothing is permitted");
            None
        }
        None => None,
    };
    (engine_info, profile)
}

/// Prints each graph finding with its explanation and notes.
fn print_findings(findings: &[Finding]) {
    for f in findings {
        println!("[graph:{}] {}: {}", f.kind, f.verdict_text(), f.summary);
        if let Some(ex) = f.evidence["explanation"].as_array() {
            for s in ex {
                println!("    {}", s.as_str().unwrap_or_default());
            }
        }
        if let Some(n) = f.evidence["unobserved_reads"].as_str() {
            println!("    note: {n}");
        }
    }
}

/// For a finding file: re-derives the recorded finding's verdict and prints
/// it beside the campaign's; the re-derived finding when it is not among the
/// graph findings already.
fn report_recheck(
    loaded: &Loaded,
    findings: &[Finding],
    engine_info: Option<&EngineInfo>,
    profile: Option<&EngineProfile>,
    level: Isolation,
    known: &crate::finding::known::KnownIssues,
) -> Option<Finding> {
    let (Some(rec), Some((case, history, _))) = (&loaded.finding, &loaded.recorded) else {
        return None;
    };
    match recheck(rec, findings, profile, level, case, history) {
        Rechecked::Finding(mut f) => {
            if let Some(info) = engine_info {
                known.mark(std::slice::from_mut(&mut *f), case, history, info);
            }
            let (now, then) = (f.verdict_text(), rec.verdict_text());
            let agree = if now == then { "agrees" } else { "DIFFERS" };
            println!(
                "recorded finding [{}:{}]: {now}; the campaign said: {then} ({agree})",
                rec.oracle, rec.kind
            );
            // A graph finding is already among `findings`.
            if rec.oracle != crate::oracle::OracleKind::Graph {
                return Some(*f);
            }
            None
        }
        Rechecked::NotReported(why) => {
            println!(
                "recorded finding [{}:{}]: {why}; the campaign said: {}",
                rec.oracle,
                rec.kind,
                rec.verdict_text()
            );
            None
        }
    }
}

/// New violations, known violations and permitted findings among `all`.
fn verdict_counts(all: &[&Finding]) -> (u64, u64, usize) {
    let count = |known: bool| {
        all.iter()
            .filter(|f| {
                if known {
                    f.is_known_violation()
                } else {
                    f.is_new_violation()
                }
            })
            .count() as u64
    };
    let (new, known_n) = (count(false), count(true));
    let permitted = all
        .iter()
        .filter(|f| f.verdict == Verdict::Permitted)
        .count();
    (new, known_n, permitted)
}

#[derive(clap::Args, Debug)]
pub struct BenchCheckArgs {
    /// Committed transactions in the synthetic history.
    #[arg(long, default_value_t = 100_000)]
    pub txns: usize,
    /// Also time JSON serialisation and parsing of the history.
    #[arg(long)]
    pub json: bool,
}

/// A serial (hence acyclic) synthetic history: `n` transactions of 3 reads and
/// 2 updates over `n / 10` rows, in 64 sessions.
pub fn synthetic(n: usize, seed: u64) -> CheckHistory {
    let rows = (n / 10).max(10);
    let mut wl: Vec<WriteList> = vec![WriteList::initial(); rows];
    let mut x = seed | 1;
    let mut rnd = move |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let mut op = 0u32;
    let mut txns = Vec::with_capacity(n);
    for i in 0..n {
        let mut ops = Vec::with_capacity(5);
        for _ in 0..3 {
            let r = rnd(rows);
            op += 1;
            ops.push(Op::Read {
                table: "t".into(),
                rid: r as i64,
                wl: wl[r].clone(),
                op: Some(op),
            });
        }
        for _ in 0..2 {
            let r = rnd(rows);
            op += 1;
            let before = wl[r].clone();
            wl[r] = before.then(op);
            ops.push(Op::Write {
                op,
                table: "t".into(),
                rid: r as i64,
                before: Some(before),
                after: Some(wl[r].clone()),
                undone: false,
            });
        }
        txns.push(CheckTxn {
            id: i as u64 + 1,
            session: (i % 64) as u64,
            status: TxnStatus::Committed,
            label: None,
            savepoint_rollback: false,
            ops,
        });
    }
    let final_state = wl
        .into_iter()
        .enumerate()
        .map(|(r, wl)| FinalRow {
            table: "t".into(),
            rid: r as i64,
            wl,
        })
        .collect();
    CheckHistory {
        format: graph::history::CHECK_FORMAT,
        isolation: Some(Isolation::Serializable),
        engine: None,
        txns,
        final_state: Some(final_state),
    }
}

/// Peak resident memory (VmHWM) in MiB.
pub fn peak_mib() -> f64 {
    status_mib("VmHWM:")
}

/// A memory figure of `/proc/self/status` (`VmHWM:`, `VmRSS:`) in MiB.
fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(field)).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

pub fn bench_check(args: BenchCheckArgs) -> Result<ExitCode, UsageError> {
    let t0 = Instant::now();
    let mut h = synthetic(args.txns, 0x9e37_79b9_7f4a_7c15);
    let gen_s = t0.elapsed().as_secs_f64();
    let history_mib = status_mib("VmRSS:");
    let mut json_s = None;
    if args.json {
        let t = Instant::now();
        let text = WriteList::sharing(|| serde_json::to_string(&h))?;
        drop(h);
        h = CheckHistory::from_json(&text)?;
        json_s = Some((text.len(), t.elapsed().as_secs_f64()));
    }
    let t = Instant::now();
    let a = graph::analyse(&h);
    let check_s = t.elapsed().as_secs_f64();
    let found = a.anomalies.len();
    println!(
        "bench-check: {} txns, {} rows, {} reads, {} writes, {} edges: check {:.3} s (generate {:.3} s{}), peak RSS {:.0} MiB (history {:.0} MiB), {} anomalies",
        a.stats.txns,
        a.stats.rows,
        a.stats.reads,
        a.stats.writes,
        a.stats.edges,
        check_s,
        gen_s,
        json_s
            .map(|(b, s)| format!(", JSON {:.0} MB serialise+parse {s:.3} s", b as f64 / 1e6))
            .unwrap_or_default(),
        peak_mib(),
        history_mib,
        found
    );
    Ok(if found > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
