//! Oracles: each answers one question about an executed case, independently.
//! A [`Finding`] is a verdict with evidence; infrastructure failures are
//! [`EngineError`]s, never findings.

pub mod compare;
pub mod crash;
pub mod graph;
pub mod wss;

use crate::engine::{Engine, EngineError};
use crate::exec::ExecOptions;
use crate::model::{History, TestCase};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Whether a finding is a bug or behaviour the engine documents as permitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Violation,
    Permitted,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// `wss`, `crash`, ...
    pub oracle: String,
    /// What kind of discrepancy, e.g. `tx-final-state`, `hang`.
    pub kind: String,
    pub verdict: Verdict,
    /// One line a person reads first.
    pub summary: String,
    /// Machine-readable details (diffs, serial order, statements involved).
    pub evidence: serde_json::Value,
}

/// The oracles txfuzz knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OracleKind {
    Wss,
    Graph,
    Crash,
}

impl OracleKind {
    pub const ALL: [OracleKind; 3] = [OracleKind::Wss, OracleKind::Graph, OracleKind::Crash];
    /// Whether the oracle re-executes the case (and so needs a fixed interleaving).
    pub fn replays(self) -> bool {
        matches!(self, OracleKind::Wss)
    }
    pub fn name(self) -> &'static str {
        match self {
            OracleKind::Wss => "wss",
            OracleKind::Graph => "graph",
            OracleKind::Crash => "crash",
        }
    }
}

impl fmt::Display for OracleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for OracleKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "wss" => Ok(OracleKind::Wss),
            "crash" => Ok(OracleKind::Crash),
            "graph" => Ok(OracleKind::Graph),
            "sdg" | "view" => Err(format!(
                "oracle '{s}' is not implemented yet (available: wss, graph, crash)"
            )),
            _ => Err(format!(
                "unknown oracle '{s}' (available: wss, graph, crash)"
            )),
        }
    }
}

/// Statistics an oracle run contributes to the campaign summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckStats {
    /// Re-executions of the case (serial replays).
    pub replays: u64,
    /// Checks that could not be decided soundly (e.g. stmt-level with ROLLBACK TO).
    pub undecided: u64,
}

/// Runs one oracle on an executed case. Oracles that re-execute reset `engine`.
pub fn check(
    kind: OracleKind,
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    opts: &ExecOptions,
    stats: &mut CheckStats,
) -> Result<Vec<Finding>, EngineError> {
    match kind {
        OracleKind::Wss => wss::check(engine, case, history, opts, stats),
        OracleKind::Graph => Ok(graph::check(engine, case, history)),
        OracleKind::Crash => Ok(crash::check(history)),
    }
}
