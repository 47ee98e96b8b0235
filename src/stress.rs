//! Stress mode (IsoRel-style): free-running concurrent sessions, no fixed
//! interleaving. Each session takes the next transaction of a generated workload
//! and runs it statement after statement until the time is up; everything is
//! recorded into one long history for the history-only oracles.

use crate::engine::{Engine, EngineError, EngineProfile, ErrorScope, Session, WaitSignal};
use crate::instrument::{prepare, Prepared, Target};
use crate::model::{
    Event, EventKind, History, Outcome, StmtKind, StmtOutcome, StmtRef, TestCase, Txn, TxnEnd,
    TxnOutcome,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct StressConfig {
    pub sessions: usize,
    pub duration: Duration,
}

/// What one session thread recorded.
#[derive(Default)]
struct Log {
    events: Vec<Event>,
    outcomes: Vec<(u64, StmtOutcome)>,
    ends: Vec<(u32, TxnEnd)>,
    started: Vec<u32>,
}

struct Shared {
    case: TestCase,
    /// How statements are instrumented for this engine (as the executor
    /// prepares them: `Engine::target`, not only the dialect).
    target: Target,
    profile: EngineProfile,
    next: AtomicUsize,
    start: Instant,
    deadline: Instant,
}

impl Shared {
    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }
}

/// Runs `workload` with `cfg.sessions` free-running sessions on `engine`; returns
/// the case trimmed to the transactions that ran, and its history.
pub fn run_stress(
    engine: &mut dyn Engine,
    workload: &TestCase,
    cfg: &StressConfig,
) -> Result<(TestCase, History), EngineError> {
    engine.load_as(workload, crate::sql::Layout::InstrumentedLong)?;
    let mut sessions = Vec::new();
    for _ in 0..cfg.sessions.max(1) {
        sessions.push(engine.open_session(workload.isolation, WaitSignal::new())?);
    }
    let start = Instant::now();
    let shared = Arc::new(Shared {
        case: workload.clone(),
        target: engine.target(),
        profile: engine.profile().clone(),
        next: AtomicUsize::new(0),
        start,
        deadline: start + cfg.duration,
    });
    let handles: Vec<_> = sessions
        .into_iter()
        .map(|mut session| {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let mut log = Log::default();
                run_session(session.as_mut(), &shared, &mut log);
                log
            })
        })
        .collect();
    let logs: Vec<Log> = handles.into_iter().filter_map(|h| h.join().ok()).collect();
    let final_state = engine.final_state(&workload.schema)?;
    Ok(assemble(workload, logs, final_state))
}

fn run_session(session: &mut dyn Session, shared: &Shared, log: &mut Log) {
    while Instant::now() < shared.deadline {
        let i = shared.next.fetch_add(1, Ordering::SeqCst);
        let Some(txn) = shared.case.txns.get(i) else {
            return;
        };
        log.started.push(txn.id);
        run_txn(session, shared, txn, log);
    }
}

fn run_txn(session: &mut dyn Session, shared: &Shared, txn: &Txn, log: &mut Log) {
    for (index, cs) in txn.stmts.iter().enumerate() {
        let r = StmtRef {
            txn: txn.id,
            index: index as u32,
        };
        let p: Prepared = prepare(shared.target, &shared.case.schema, r, cs);
        log.events.push(event(shared, r, EventKind::Submitted));
        let outcome: Outcome = session.run(&p);
        let ok = outcome.ok();
        let at = shared.now_us();
        log.events.push(Event {
            stmt: r,
            kind: EventKind::Completed { ok, resumed: false },
            at_us: at,
        });
        let class = outcome.error.as_ref().map(|e| e.class);
        log.outcomes.push((
            at,
            StmtOutcome {
                stmt: r,
                op: cs.op,
                outcome,
            },
        ));
        if txn.autocommit {
            continue;
        }
        match (class, p.kind) {
            (None, StmtKind::Commit) => log.ends.push((txn.id, TxnEnd::Committed)),
            (_, StmtKind::Rollback) => log.ends.push((txn.id, TxnEnd::RolledBack)),
            (Some(c), k)
                if matches!(k, StmtKind::Commit | StmtKind::Begin)
                    || shared.profile.error_scope(c) == ErrorScope::Transaction =>
            {
                let _ = session.query("ROLLBACK");
                log.events.push(event(shared, r, EventKind::Aborted));
                log.ends.push((txn.id, TxnEnd::Aborted));
                return;
            }
            _ => {}
        }
    }
}

fn event(shared: &Shared, stmt: StmtRef, kind: EventKind) -> Event {
    Event {
        stmt,
        kind,
        at_us: shared.now_us(),
    }
}

/// Merges the session logs into one case and history, in time order.
fn assemble(
    workload: &TestCase,
    logs: Vec<Log>,
    final_state: crate::model::DbState,
) -> (TestCase, History) {
    let mut started: Vec<u32> = logs.iter().flat_map(|l| l.started.clone()).collect();
    started.sort();
    let mut events: Vec<Event> = Vec::new();
    let mut outcomes: Vec<(u64, StmtOutcome)> = Vec::new();
    let mut ends = std::collections::HashMap::new();
    for l in logs {
        events.extend(l.events);
        outcomes.extend(l.outcomes);
        ends.extend(l.ends);
    }
    events.sort_by_key(|e| e.at_us);
    outcomes.sort_by_key(|(at, _)| *at);
    let mut case = workload.clone();
    case.txns.retain(|t| started.binary_search(&t.id).is_ok());
    let mut submitted = std::collections::HashSet::new();
    case.submit_order = events
        .iter()
        .filter(|e| e.kind == EventKind::Submitted && submitted.insert(e.stmt))
        .map(|e| e.stmt)
        .collect();
    for t in &case.txns {
        for index in 0..t.stmts.len() as u32 {
            let r = StmtRef { txn: t.id, index };
            if !submitted.contains(&r) {
                case.submit_order.push(r);
                events.push(Event {
                    stmt: r,
                    kind: EventKind::Skipped,
                    at_us: u64::MAX,
                });
            }
        }
    }
    let history = History {
        isolation: case.isolation,
        events,
        outcomes: outcomes.into_iter().map(|(_, o)| o).collect(),
        txns: case
            .txns
            .iter()
            .map(|t| TxnOutcome {
                txn: t.id,
                end: if t.autocommit {
                    None
                } else {
                    ends.get(&t.id).copied()
                },
            })
            .collect(),
        final_state,
        final_state_error: None,
    };
    (case, history)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sqlite::SqliteEngine;
    use crate::gen::{generate_workload, GenConfig};

    #[test]
    fn free_running_sessions_leave_a_consistent_history() {
        let workload = generate_workload(3, &GenConfig::default(), 400);
        assert!(workload.validate().is_ok());
        let mut e = SqliteEngine::open(None).unwrap();
        let cfg = StressConfig {
            sessions: 3,
            duration: Duration::from_millis(700),
        };
        let (case, h) = run_stress(&mut e, &workload, &cfg).unwrap();
        case.validate().unwrap();
        assert!(
            case.txns.len() > 10,
            "only {} transactions ran",
            case.txns.len()
        );
        // Every explicit transaction that ran has ended one way or another.
        for t in case.txns.iter().filter(|t| !t.autocommit) {
            assert!(h.txn_end(t.id).is_some(), "T{} has no end", t.id);
        }
        // Each row of the final state was written by a committed operation or is initial.
        let committed_ops: std::collections::HashSet<String> = h
            .outcomes
            .iter()
            .filter(|o| {
                o.outcome.ok()
                    && case
                        .txn(o.stmt.txn)
                        .is_some_and(|t| t.autocommit || h.txn_end(t.id) == Some(TxnEnd::Committed))
            })
            .map(|o| o.op.to_string())
            .collect();
        for v in h.final_versions().unwrap() {
            let last = v.wl.last().to_string();
            assert!(
                last == "0" || committed_ops.contains(&last),
                "row written by {last}"
            );
        }
    }
}
