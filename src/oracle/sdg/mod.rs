//! The `sdg` oracle (TxCheck, OSDI'23): statement-dependency graphs and
//! semantically equivalent non-transactional replays.
//!
//! 1. Instrument: a version-set read (VSR) before every data statement
//!    ([`vsr`]).
//! 2. Execute on a reset database; while a statement waited for a lock,
//!    re-execute in the recorded order without the statements blocking
//!    separated from their VSRs ([`schedule`], blocking scheduling).
//! 3. Build the statement-dependency graph ([`deps`]); while it has a cycle,
//!    remove a random statement on a cycle and re-execute (graph decycling).
//! 4. Execute the committed statements in a random topological order as
//!    autocommit statements of one session on a reset database, and compare
//!    every statement's result (as a bag), error class and written rows, then
//!    the final state.
//!
//! Cases that cannot be made stable and acyclic in [`MAX_ROUNDS`] executions
//! are discarded (counted by reason); cases that cannot be compared soundly
//! are undecided (counted, never reported). Transaction-level isolation
//! checks are the `graph` oracle's: this one has no cycle checker of its own.

pub mod clock;
pub mod deps;
pub mod order;
pub mod replay;
pub mod schedule;
pub mod vsr;

use super::{CheckStats, Finding};
use crate::engine::{Engine, EngineError};
use crate::exec::{execute, ExecOptions};
use crate::model::edit::remove_ops;
use crate::model::{History, TestCase};
use crate::rng::Rng;
use deps::{Sdg, Undecided};
use vsr::VsrCase;

/// Executions (blocking scheduling and decycling rounds) per case.
pub const MAX_ROUNDS: usize = 8;

pub(crate) const NAME: &str = "sdg";

/// Why a case was given up before the replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Discard {
    Blocking,
    Decycling,
}

impl Discard {
    fn name(self) -> &'static str {
        match self {
            Discard::Blocking => "blocking",
            Discard::Decycling => "decycling",
        }
    }
}

/// A refined case that ran without blocking and whose graph is acyclic.
pub struct Refined {
    pub vsr: VsrCase,
    pub history: History,
    pub graph: Sdg,
    /// Statements removed on the way: `(op, "blocking" | "decycling")`.
    pub removed: Vec<(u32, &'static str)>,
}

enum Refinement {
    Done(Box<Refined>),
    Discarded(Discard),
    Undecided(Undecided),
    /// The server went away during a refinement round.
    Lost(History),
}

/// Runs rounds of execution, blocking scheduling and decycling.
fn refine(
    engine: &mut dyn Engine,
    case: &TestCase,
    opts: &ExecOptions,
    rng: &mut Rng,
    stats: &mut CheckStats,
) -> Result<Refinement, EngineError> {
    let profile = engine.profile().clone();
    let mut v = vsr::instrument(case, |txn| profile.rule_of(case, txn));
    let mut removed: Vec<(u32, &'static str)> = Vec::new();
    let mut last = Discard::Blocking;
    for _ in 0..MAX_ROUNDS {
        engine.reset()?;
        let h = execute(engine, &v.case, opts)?;
        stats.replays += 1;
        if h.lost_connection() {
            return Ok(Refinement::Lost(h));
        }
        if !schedule::stable(&h) {
            last = Discard::Blocking;
            match schedule::reschedule(&v, &h) {
                Some((next, dropped)) => {
                    removed.extend(dropped.into_iter().map(|op| (op, "blocking")));
                    v = next;
                    continue;
                }
                None => return Ok(Refinement::Discarded(Discard::Blocking)),
            }
        }
        let g = match deps::build(&v, &h) {
            Ok(g) => g,
            Err(why) => return Ok(Refinement::Undecided(why)),
        };
        let cyclic = order::cyclic_nodes(&g);
        if cyclic.is_empty() {
            return Ok(Refinement::Done(Box::new(Refined {
                vsr: v,
                history: h,
                graph: g,
                removed,
            })));
        }
        last = Discard::Decycling;
        let victim = cyclic[rng.below(cyclic.len() as u64) as usize];
        removed.push((victim, "decycling"));
        match remove_target(&v, victim) {
            Some(next) => v = next,
            None => return Ok(Refinement::Discarded(Discard::Decycling)),
        }
    }
    Ok(Refinement::Discarded(last))
}

/// `v` without statement `op` and its VSRs.
fn remove_target(v: &VsrCase, op: u32) -> Option<VsrCase> {
    let mut vsrs = v.vsrs.clone();
    let mut remove = vsrs.remove(&op).unwrap_or_default();
    remove.push(op);
    if vsrs.is_empty() {
        return None;
    }
    Some(VsrCase {
        case: remove_ops(&v.case, &remove)?,
        vsrs,
    })
}

/// Counts a case that cannot be compared soundly; reports nothing.
pub(crate) fn undecided(
    stats: &mut CheckStats,
    case: &TestCase,
    key: &'static str,
    why: &str,
) -> Vec<Finding> {
    tracing::debug!(case = case.index, why, "sdg undecided");
    let counts = stats.oracle(NAME);
    counts.undecided += 1;
    *counts.undecided_by.entry(key.to_string()).or_default() += 1;
    Vec::new()
}

pub fn check(
    engine: &mut dyn Engine,
    case: &TestCase,
    _history: &History,
    opts: &ExecOptions,
    stats: &mut CheckStats,
) -> Result<Vec<Finding>, EngineError> {
    if !case
        .txns
        .iter()
        .flat_map(|t| &t.stmts)
        .any(|s| s.stmt.kind().is_data())
    {
        return Ok(Vec::new());
    }
    let mut rng = Rng::new(case.seed ^ 0x5d9_7c4e, case.index);
    let refined = match refine(engine, case, opts, &mut rng, stats)? {
        Refinement::Done(r) => r,
        Refinement::Discarded(why) => {
            *stats
                .oracle(NAME)
                .discarded
                .entry(why.name().into())
                .or_default() += 1;
            return Ok(Vec::new());
        }
        Refinement::Undecided(why) => return Ok(undecided(stats, case, why.key, &why.detail)),
        Refinement::Lost(h) => {
            let mut found = super::crash::check(&h);
            for f in &mut found {
                f.evidence["during"] = "sdg refinement round".into();
            }
            return Ok(found);
        }
    };
    replay::check_refined(engine, case, &refined, opts, &mut rng, stats)
}

/// The `sdg` oracle in the registry ([`crate::oracle::registry`]).
pub struct SdgOracle;

impl crate::oracle::Oracle for SdgOracle {
    fn replays(&self) -> bool {
        true
    }
    fn judges_after_internal_errors(&self) -> bool {
        false
    }
    fn check(
        &self,
        cx: crate::oracle::CheckContext<'_>,
    ) -> Result<Vec<Finding>, crate::engine::EngineError> {
        check(cx.engine, cx.case, cx.history, cx.opts, cx.stats)
    }
}

#[cfg(test)]
mod tests;
