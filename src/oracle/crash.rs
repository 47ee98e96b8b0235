//! The `crash` oracle (partial): hangs, lost connections and internal errors seen
//! in the history. Server crash detection and error-log capture come with the
//! server engines.

use super::Finding;
use crate::model::{ErrorClass, EventKind, History};
use serde_json::json;

/// The crash finding of a server that failed while a case was set up or
/// checked (no history of its own beyond the error): a `hang` when it stopped
/// answering, else `connection-lost` ([`EngineError::crash_kind`]).
pub fn server_failure(e: &crate::engine::EngineError) -> Finding {
    let kind = e.crash_kind();
    let what = if kind == "hang" {
        "the server stopped answering"
    } else {
        "the connection to the server was lost"
    };
    Finding::new(
        crate::oracle::OracleKind::Crash,
        kind,
        format!("{what} while setting up or checking the case: {e}"),
        json!({ "error": e.to_string() }),
    )
}

/// Whether `f` says the server failed (hung or went away).
pub fn is_server_failure(f: &Finding) -> bool {
    f.oracle == crate::oracle::OracleKind::Crash
        && matches!(f.kind.as_str(), "hang" | "connection-lost")
}

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
        let kind = if crate::engine::says_hung(e) {
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
    let hang_reported = !hung.is_empty();
    for o in &history.outcomes {
        let Some(e) = &o.outcome.error else { continue };
        let kind = match e.class {
            ErrorClass::Internal => "internal-error",
            ErrorClass::ConnectionLost if e.code == crate::engine::DEADLINE_CODE => "hang",
            ErrorClass::ConnectionLost => "connection-lost",
            _ => continue,
        };
        if e.code == crate::engine::AFTER_PANIC_CODE {
            // One fault, one finding: a statement its broken session (one
            // per transaction) refused after the panic is evidence of that
            // panic's finding.
            let after = json!({ "stmt": o.stmt, "error": e });
            let same_session = |f: &&mut Finding| {
                f.kind == "internal-error" && f.involved.iter().any(|r| r.txn == o.stmt.txn)
            };
            if let Some(first) = out.iter_mut().rev().find(same_session) {
                match first.evidence["refused_after"].as_array_mut() {
                    Some(list) => list.push(after),
                    None => first.evidence["refused_after"] = json!([after]),
                }
                continue;
            }
        }
        if hang_reported && e.class == ErrorClass::ConnectionLost {
            // One fault, one finding: a session given up after the hang (its
            // connection dropped, its thread gone) fails because of it.
            let after = json!({ "stmt": o.stmt, "error": e });
            let first = &mut out[0].evidence;
            match first["failed_after"].as_array_mut() {
                Some(list) => list.push(after),
                None => first["failed_after"] = json!([after]),
            }
            continue;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Event, Isolation, Outcome, StmtError, StmtOutcome, StmtRef};

    fn failed(txn: u32, class: ErrorClass, code: &str) -> StmtOutcome {
        StmtOutcome {
            stmt: StmtRef { txn, index: 1 },
            op: txn,
            outcome: Outcome::failed(StmtError {
                class,
                code: code.into(),
                message: "failed".into(),
            }),
        }
    }

    fn lost(txn: u32, code: &str) -> StmtOutcome {
        failed(txn, ErrorClass::ConnectionLost, code)
    }

    fn history(outcomes: Vec<StmtOutcome>, timed_out: bool) -> History {
        History {
            isolation: Isolation::ReadCommitted,
            events: timed_out
                .then_some(Event {
                    stmt: StmtRef { txn: 1, index: 0 },
                    kind: EventKind::TimedOut,
                    at_us: 0,
                })
                .into_iter()
                .collect(),
            outcomes,
            txns: Vec::new(),
            final_state: Default::default(),
            final_state_error: None,
        }
    }

    fn kinds(h: &History) -> Vec<String> {
        check(h).iter().map(|f| f.kind.clone()).collect()
    }

    #[test]
    fn sessions_failing_after_a_hang_are_part_of_its_finding() {
        let h = history(vec![lost(2, "session"), lost(3, "io")], true);
        let found = check(&h);
        assert_eq!(kinds(&h), ["hang"]);
        assert_eq!(
            found[0].evidence["failed_after"].as_array().unwrap().len(),
            2
        );
        // Without the hang, a lost connection is its own finding.
        let h = history(vec![lost(2, "io")], false);
        assert_eq!(kinds(&h), ["connection-lost"]);
    }

    fn internal(txn: u32, code: &str) -> StmtOutcome {
        failed(txn, ErrorClass::Internal, code)
    }

    #[test]
    fn statements_refused_after_a_panic_are_part_of_its_finding() {
        let after = crate::engine::AFTER_PANIC_CODE;
        // The panicking session's next statement, refused.
        let refused = StmtOutcome {
            stmt: StmtRef { txn: 1, index: 2 },
            ..internal(1, after)
        };
        let h = history(vec![internal(1, "panic"), refused], false);
        let found = check(&h);
        assert_eq!(kinds(&h), ["internal-error"]);
        assert_eq!(
            found[0].evidence["refused_after"].as_array().unwrap().len(),
            1
        );
        // Two panics are two findings.
        let h = history(vec![internal(1, "panic"), internal(2, "panic")], false);
        assert_eq!(kinds(&h), ["internal-error", "internal-error"]);
    }
}
