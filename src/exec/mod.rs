//! The deterministic execution protocol (docs/design.md §3): statements are
//! submitted one at a time in the case's submit order; after each, the driver
//! waits until the statement completes or the engine confirms it waits for a lock.
//! A blocked session's later statements wait until it resumes; after a COMMIT,
//! ROLLBACK or abort the driver waits until every blocked statement has either
//! resumed or been re-confirmed as waiting. The [`History`] records the schedule
//! the engine actually produced.

mod deadline;
mod driver;
mod worker;

use crate::engine::{Engine, EngineError};
use crate::instrument::{prepare_case, Prepared};
use crate::model::{History, StmtRef, TestCase};
use std::collections::HashMap;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct ExecOptions {
    /// A statement neither finished nor waiting on a lock after this long is a
    /// hang: it is cancelled and recorded as timed out.
    pub hang_timeout: Duration,
    /// When every remaining statement waits on a lock and the engine resolves
    /// nothing for this long, the most recently blocked statement is cancelled.
    pub stall_timeout: Duration,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            hang_timeout: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(3),
        }
    }
}

/// Runs `case` on `engine` (which must hold the case's initial state) and records
/// what happened.
pub fn execute(
    engine: &mut dyn Engine,
    case: &TestCase,
    opts: &ExecOptions,
) -> Result<History, EngineError> {
    let prepared = prepare_case(engine.target(), case);
    execute_prepared(engine, case, &prepared, opts)
}

/// The run the oracles judge: as [`execute`], after [`Engine::keep_plans`]
/// has put back as written each statement whose instrumentation would change
/// how the engine runs it. (Re-executions built by the oracles — serial
/// replays, `sdg`'s version-set reads — need every statement observed.)
pub fn execute_checked(
    engine: &mut dyn Engine,
    case: &TestCase,
    opts: &ExecOptions,
) -> Result<History, EngineError> {
    let mut prepared = prepare_case(engine.target(), case);
    engine.keep_plans(case, &mut prepared)?;
    execute_prepared(engine, case, &prepared, opts)
}

/// As [`execute`], with statements already prepared (replays reuse them).
pub fn execute_prepared(
    engine: &mut dyn Engine,
    case: &TestCase,
    prepared: &HashMap<StmtRef, Prepared>,
    opts: &ExecOptions,
) -> Result<History, EngineError> {
    let mut history = driver::Driver::start(engine, case, prepared, opts)?.run(engine)?;
    // A cursor's steps' rows belong to its open (`model::cursor`).
    let insensitive = engine.profile().features.cursors_insensitive;
    crate::model::cursor::settle(case, &mut history, insensitive);
    Ok(history)
}

/// As [`execute`], for an oracle's serial replay: a replay the server failed
/// during (a statement that neither ended nor waited, a connection lost, the
/// final state unread) says nothing about the case, yet compared it looks
/// like a difference (its final state is then empty). Its failure is
/// returned as the error instead, and the campaign records the crash and
/// runs the case again.
pub fn execute_replay(
    engine: &mut dyn Engine,
    case: &TestCase,
    opts: &ExecOptions,
) -> Result<History, EngineError> {
    let history = execute(engine, case, opts)?;
    match server_failure(&history) {
        Some(e) => Err(e),
        None => Ok(history),
    }
}

/// The server failure a history records, if any (as `oracle::crash` reads it).
pub fn server_failure(h: &History) -> Option<EngineError> {
    use crate::engine::{says_hung, DEADLINE_CODE};
    use crate::model::{ErrorClass, EventKind};
    if let Some(e) = &h.final_state_error {
        return Some(if says_hung(e) {
            EngineError::Hung(format!("reading the final state of a replay: {e}"))
        } else {
            EngineError::Lost(format!("reading the final state of a replay: {e}"))
        });
    }
    if let Some(e) = h.events.iter().find(|e| e.kind == EventKind::TimedOut) {
        return Some(EngineError::Hung(format!(
            "statement {:?} of a replay neither finished nor waited on a lock",
            e.stmt
        )));
    }
    h.outcomes.iter().find_map(|o| {
        let e = o.outcome.error.as_ref()?;
        let what = format!("op {} of a replay: {} ({})", o.op, e.message, e.code);
        match e.class {
            ErrorClass::ConnectionLost if e.code == DEADLINE_CODE => Some(EngineError::Hung(what)),
            ErrorClass::ConnectionLost => Some(EngineError::Lost(what)),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests;
