//! The `crash` oracle (partial): hangs, lost connections and internal errors seen
//! in the history. Server crash detection and error-log capture come with the
//! server engines.

use super::Finding;
use crate::model::{ErrorClass, EventKind, History};
use serde_json::json;

pub fn check(history: &History) -> Vec<Finding> {
    let mut out = Vec::new();
    let hung: Vec<_> = history
        .events
        .iter()
        .filter(|e| e.kind == EventKind::TimedOut)
        .map(|e| e.stmt)
        .collect();
    if !hung.is_empty() {
        out.push(
            Finding::new(
                crate::oracle::OracleKind::Crash,
                "hang",
                format!(
                    "{} statement(s) neither finished nor waited on a lock within the hang timeout",
                    hung.len()
                ),
                json!({ "statements": hung }),
            )
            .about(hung.iter().copied()),
        );
    }
    if let Some(e) = &history.final_state_error {
        // `EngineError::Hung`, or a deadline missed: the server stopped answering.
        let kind = if e.starts_with(crate::engine::HUNG) || e.contains(crate::engine::NO_ANSWER) {
            "hang"
        } else {
            "connection-lost"
        };
        if let (Some(first), "hang") = (out.first_mut(), kind) {
            // One fault, one finding: the statements that hung already say it.
            first.evidence["final_state_error"] = json!(e);
            return out;
        }
        out.push(Finding::new(
            crate::oracle::OracleKind::Crash,
            kind,
            format!("the final state could not be read: {e}"),
            json!({ "error": e }),
        ));
        return out;
    }
    for o in &history.outcomes {
        let Some(e) = &o.outcome.error else { continue };
        let kind = match e.class {
            ErrorClass::Internal => "internal-error",
            ErrorClass::ConnectionLost if e.code == crate::engine::DEADLINE_CODE => "hang",
            ErrorClass::ConnectionLost => "connection-lost",
            _ => continue,
        };
        out.push(
            Finding::new(
                crate::oracle::OracleKind::Crash,
                kind,
                format!("op {} failed with {} ({})", o.op, e.code, e.message),
                json!({ "stmt": o.stmt, "error": e }),
            )
            .about([o.stmt]),
        );
    }
    out
}

/// The `crash` oracle in the registry ([`crate::oracle::registry`]).
pub struct CrashOracle;

impl crate::oracle::Oracle for CrashOracle {
    fn replays(&self) -> bool {
        false
    }
    fn check(
        &self,
        cx: crate::oracle::CheckContext<'_>,
    ) -> Result<Vec<Finding>, crate::engine::EngineError> {
        Ok(check(cx.history))
    }
}
