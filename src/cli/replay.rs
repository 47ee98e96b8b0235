//! `txfuzz replay CASE.json`: re-execute a stored finding or case and re-check it.

use super::{parse_list, EngineArgs, UsageError};
use crate::campaign::run_case;
use crate::exec::ExecOptions;
use crate::finding::{load_case_file, CaseFile};
use crate::oracle::{fidelity, CheckStats, OracleKind};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// A finding JSON written by `txfuzz run`, or a bare case JSON.
    pub case: PathBuf,
    /// Database URL: sqlite:PATH (default: a temporary SQLite database),
    /// mysql://user@host:port/db, postgres://user@host:port/db. Repeat it to
    /// replay a finding on several servers (releases): the finding file then
    /// records the versions it reproduces on and those it does not.
    #[arg(long = "db", value_name = "DB")]
    pub dbs: Vec<String>,
    /// Self-test: wrap the engine in a fault injector.
    #[arg(long, hide = true)]
    pub fault: Option<String>,
    /// Oracles to run (default: the finding's oracle, or all for a bare case);
    /// the shadow run without instrumentation (`fidelity`) always runs too.
    #[arg(long)]
    pub oracle: Option<String>,
    #[command(flatten)]
    pub known: super::KnownArgs,
}

/// How many times a finding whose schedule has a serving race is run before
/// it counts as not reproduced.
const RACE_ATTEMPTS: usize = 8;

pub fn replay(args: ReplayArgs) -> Result<ExitCode, UsageError> {
    let mut file = load_case_file(&args.case).map_err(UsageError)?;
    if args.dbs.len() < 2 {
        let engine = EngineArgs {
            db: args.dbs.first().cloned(),
            fault: args.fault.clone(),
        };
        let r = replay_on(&args, &engine, &mut file)?;
        return Ok(exit_code(r.reproduced));
    }
    let CaseFile::Finding(_) = &file else {
        return Err(UsageError(
            "several --db replay a finding file (a bare case has nothing to reproduce)".into(),
        ));
    };
    let mut releases = crate::finding::Releases::default();
    for db in &args.dbs {
        let engine = EngineArgs {
            db: Some(db.clone()),
            fault: args.fault.clone(),
        };
        // Each engine upgrades its own copy (a format-1 BEGIN).
        let mut one = file.clone();
        let r = replay_on(&args, &engine, &mut one)?;
        let release = format!("{} {}", r.engine.name, r.engine.version);
        match r.reproduced {
            true => releases.reproduces.push(release),
            false => releases.does_not.push(release),
        }
    }
    println!("{}", releases.summary());
    if let CaseFile::Finding(rec) = &mut file {
        rec.releases = Some(releases.clone());
        let json = serde_json::to_vec_pretty(&**rec).map_err(|e| UsageError(e.to_string()))?;
        crate::finding::write_atomic(&args.case, &json).map_err(|e| {
            UsageError(format!(
                "cannot record the releases in {}: {e}",
                args.case.display()
            ))
        })?;
        println!("recorded in {}", args.case.display());
    }
    Ok(exit_code(!releases.reproduces.is_empty()))
}

/// 1 when the finding reproduced (or a bare case violates), else 0.
fn exit_code(reproduced: bool) -> ExitCode {
    if reproduced {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// What one replay found, on which engine.
struct Replayed {
    reproduced: bool,
    engine: crate::model::EngineInfo,
}

/// Replays `file` on the engine `engine_args` opens; prints what happened.
fn replay_on(
    args: &ReplayArgs,
    engine_args: &EngineArgs,
    file: &mut CaseFile,
) -> Result<Replayed, UsageError> {
    let expected = match &*file {
        CaseFile::Finding(r) => Some((r.finding.oracle, r.finding.kind.clone())),
        CaseFile::Case(_) => None,
    };
    let oracles = replay_oracles(args.oracle.as_deref(), expected.as_ref())?;
    let mut engine = open_for(engine_args, file)?;
    let case = file.case();
    let known = args.known.load()?;
    let recorded_race = match &*file {
        CaseFile::Finding(r) => fidelity::race(&r.history),
        CaseFile::Case(_) => None,
    };
    // A schedule in which two statements waited at once (or were resumed
    // together) may run another way each time: the engine chooses which
    // waiter it serves first. Such a finding gets a few attempts.
    let mut attempt = 0;
    let (history, mut findings, stats) = loop {
        attempt += 1;
        let mut stats = CheckStats::default();
        let (history, findings) = run_case(
            engine.as_mut(),
            case,
            &oracles,
            &ExecOptions::default(),
            &mut stats,
        )?;
        let found = expected
            .as_ref()
            .is_some_and(|(o, k)| findings.iter().any(|f| &f.oracle == o && &f.kind == k));
        let race = recorded_race.or_else(|| fidelity::race(&history));
        match race {
            Some(why) if expected.is_some() && !found && attempt < RACE_ATTEMPTS => {
                println!(
                    "attempt {attempt}: not reproduced; the schedule has {} (the engine chooses which waiter it serves first), trying again",
                    why.key()
                );
            }
            _ => break (history, findings, stats),
        }
    };
    println!(
        "replayed case {} (seed {}) on {} {}: {} events, {} blocked, {} aborts",
        case.index,
        case.seed,
        engine.info().name,
        engine.info().version,
        history.events.len(),
        history.blocked_events(),
        history.aborts()
    );
    known.mark(&mut findings, case, &history, engine.info());
    let shadow = shadow_verdict(&stats, &findings);
    println!("shadow run without instrumentation: {shadow}");
    print_findings(&findings);
    let reproduced = print_verdict(args, file, &findings, expected.as_ref(), attempt);
    Ok(Replayed {
        reproduced,
        engine: engine.info().clone(),
    })
}

/// One line per finding of the replay, with its known issue or permission.
fn print_findings(findings: &[crate::oracle::Finding]) {
    for f in findings {
        let tag = match (&f.known, &f.permitted_by) {
            (Some(k), _) => format!(" (known: {}, {})", k.id, k.reference),
            (None, Some(p)) => format!(" (by {})", p.fact),
            _ => String::new(),
        };
        println!(
            "  [{}:{}] {:?}{tag}: {}",
            f.oracle, f.kind, f.verdict, f.summary
        );
    }
}

/// Prints and returns the replay's verdict: for a finding file whether it
/// reproduced (`expected`: its oracle and kind), for a bare case whether it
/// violates (the `--known` policy).
fn print_verdict(
    args: &ReplayArgs,
    file: &CaseFile,
    findings: &[crate::oracle::Finding],
    expected: Option<&(OracleKind, String)>,
    attempt: usize,
) -> bool {
    let new = findings.iter().filter(|f| f.is_new_violation()).count() as u64;
    let known_n = findings.iter().filter(|f| f.is_known_violation()).count() as u64;
    let Some((o, k)) = expected else {
        println!("{new} violation(s), {known_n} known");
        return args.known.fails(new, known_n);
    };
    let Some(now) = findings.iter().find(|f| &f.oracle == o && &f.kind == k) else {
        println!("not reproduced: {o}:{k}");
        return false;
    };
    let then = match file {
        CaseFile::Finding(r) => r.finding.verdict_text(),
        CaseFile::Case(_) => String::new(),
    };
    let tries = if attempt > 1 {
        format!(", on attempt {attempt}")
    } else {
        String::new()
    };
    let now = now.verdict_text();
    println!("reproduced: {o}:{k} ({now}; recorded: {then}{tries})");
    true
}

/// The oracles a replay runs: `--oracle`, else the finding's oracle, else
/// the defaults; the shadow run without instrumentation (`fidelity`) always.
fn replay_oracles(
    list: Option<&str>,
    expected: Option<&(OracleKind, String)>,
) -> Result<Vec<OracleKind>, UsageError> {
    let mut oracles = match (list, expected) {
        (Some(list), _) => parse_list::<OracleKind>(list)?,
        (None, Some((o, _))) => vec![*o],
        (None, None) => OracleKind::defaults(),
    };
    // Every replay also runs the case without instrumentation.
    if !oracles.contains(&OracleKind::Fidelity) {
        oracles.push(OracleKind::Fidelity);
    }
    Ok(oracles)
}

/// What the shadow run without instrumentation said: agrees, differs (a
/// fidelity finding) or undecided (why); empty if it did not run.
fn shadow_verdict(stats: &CheckStats, findings: &[crate::oracle::Finding]) -> String {
    stats
        .per_oracle
        .get(crate::oracle::fidelity::NAME)
        .map(|c| match (c.checked, c.undecided_by.keys().next()) {
            (_, Some(why)) => format!("undecided ({why})"),
            _ if findings
                .iter()
                .any(|f| f.oracle == crate::oracle::OracleKind::Fidelity) =>
            {
                "differs (see the fidelity finding)".to_string()
            }
            _ => "agrees".to_string(),
        })
        .unwrap_or_default()
}

/// Opens the engine a stored finding or case runs on: `--db` (required for a
/// finding recorded on a server), wrapped in the fault recorded in the
/// finding's engine settings; checks that the case can run there.
pub(super) fn open_for(
    args: &EngineArgs,
    file: &mut CaseFile,
) -> Result<Box<dyn crate::engine::Engine>, UsageError> {
    let recorded_fault = match file {
        CaseFile::Finding(r) => r.engine.settings.get("fault").cloned(),
        CaseFile::Case(_) => None,
    };
    let mut args = args.clone();
    if let (None, CaseFile::Finding(r)) = (&args.db, &*file) {
        let embedded = crate::engine::registry::profile_of(&r.engine).is_ok_and(|p| p.embedded);
        if !embedded {
            return Err(UsageError(format!(
                "this finding was recorded on {} ({}); pass --db URL to replay it there",
                r.engine.name, r.engine.url
            )));
        }
        // A new temporary database of the recorded kind (`turso-mvcc:`),
        // not the default SQLite.
        if let Some((scheme, _)) = r.engine.url.split_once(':') {
            args.db = Some(format!("{scheme}:"));
        }
    }
    let engine = args.open(recorded_fault.as_deref())?;
    // A bare case of format 1: its BEGIN meant this engine's first mode.
    file.case_mut()
        .upgrade(engine.profile().features.start_modes[0]);
    let case = file.case();
    for cs in case.txns.iter().flat_map(|t| &t.stmts) {
        let why = match &cs.stmt {
            crate::model::Stmt::Begin(b) => engine.profile().begin_problem(b),
            _ => None,
        };
        if let Some(why) = why.or_else(|| crate::sql::unsupported(engine.dialect(), &cs.stmt)) {
            return Err(UsageError(format!(
                "op {} cannot run on this engine: {why}",
                cs.op
            )));
        }
    }
    if let Some(why) = crate::sql::nul_problem(engine.dialect(), case) {
        return Err(UsageError(why));
    }
    for t in &case.txns {
        for (name, value) in &t.settings {
            if let Some(why) = engine.profile().setting_problem(name, value) {
                return Err(UsageError(format!("session T{}: {why}", t.id)));
            }
        }
    }
    if let Some(level) = case
        .levels()
        .into_iter()
        .find(|l| !engine.profile().isolations.contains(l))
    {
        return Err(UsageError(format!(
            "{} does not support isolation level {level}",
            engine.info().name,
        )));
    }
    Ok(engine)
}
