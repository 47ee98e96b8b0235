//! The oracles txfuzz knows, one line each: the line names the oracle (its
//! [`OracleKind`] variant and its name on the command line and in finding
//! files), says whether campaigns run it by default, and points at the
//! [`Oracle`] that implements it. Adding an oracle is its own file with an
//! `impl Oracle` and one line here.

use super::{crash, fidelity, graph, integrity, sdg, view, wss, CheckStats, Finding};
use crate::engine::{Engine, EngineError};
use crate::exec::ExecOptions;
use crate::model::{History, TestCase};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What an oracle is given: the engine (to replay the case or open scratch
/// sessions), the executed case and its history, and the campaign's counters.
pub struct CheckContext<'a> {
    pub engine: &'a mut dyn Engine,
    pub case: &'a TestCase,
    pub history: &'a History,
    pub opts: &'a ExecOptions,
    pub stats: &'a mut CheckStats,
}

/// One oracle: what it needs, and its check of one executed case.
pub trait Oracle: Sync {
    /// Whether it re-executes the case (serial replays, a shadow run), so it
    /// needs a fixed interleaving and resets the engine.
    fn replays(&self) -> bool;
    /// Whether it judges a case whose judged run met an engine's internal
    /// error (a panic, corruption, SQLSTATE XX000). What an engine does
    /// after one is specified nowhere, and a replay's sessions meet it in
    /// other places than the judged run's, so the oracles that compare
    /// replays or a shadow run count such a case undecided
    /// (`internal-error`) and leave it to `crash`.
    fn judges_after_internal_errors(&self) -> bool {
        true
    }
    /// Its findings (before the verdict policy); infrastructure failures are
    /// errors, never findings.
    fn check(&self, cx: CheckContext<'_>) -> Result<Vec<Finding>, EngineError>;
}

macro_rules! registry {
    ($($variant:ident = $name:literal, $default:literal => $oracle:expr;)*) => {
        /// The oracles txfuzz knows (see [`registry`](self)).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum OracleKind {
            $(#[serde(rename = $name)] $variant,)*
        }

        impl OracleKind {
            /// Every oracle, in registry order.
            pub const KNOWN: &'static [OracleKind] = &[$(OracleKind::$variant,)*];

            /// Its name on the command line and in finding files.
            pub fn name(self) -> &'static str {
                match self {
                    $(OracleKind::$variant => $name,)*
                }
            }

            /// Whether campaigns run it when `--oracle` is not given.
            pub fn by_default(self) -> bool {
                match self {
                    $(OracleKind::$variant => $default,)*
                }
            }

            /// Its implementation.
            pub fn oracle(self) -> &'static dyn Oracle {
                match self {
                    $(OracleKind::$variant => &$oracle,)*
                }
            }
        }
    };
}

registry! {
    Wss = "wss", true => wss::WssOracle;
    Graph = "graph", true => graph::GraphOracle;
    Sdg = "sdg", true => sdg::SdgOracle;
    View = "view", true => view::ViewOracle;
    Integrity = "integrity", true => integrity::IntegrityOracle;
    Crash = "crash", true => crash::CrashOracle;
    // The shadow run: campaigns sample it (`--shadow RATE`), `replay` always runs it.
    Fidelity = "fidelity", false => fidelity::FidelityOracle;
}

impl OracleKind {
    /// The oracles campaigns run by default.
    pub fn defaults() -> Vec<OracleKind> {
        Self::KNOWN
            .iter()
            .copied()
            .filter(|o| o.by_default())
            .collect()
    }
    /// Whether the oracle re-executes the case (and so needs a fixed interleaving).
    pub fn replays(self) -> bool {
        self.oracle().replays()
    }
}

impl fmt::Display for OracleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq<&str> for OracleKind {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl FromStr for OracleKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        Self::KNOWN
            .iter()
            .copied()
            .find(|o| o.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::KNOWN.iter().map(|o| o.name()).collect();
                format!("unknown oracle '{s}' (available: {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for &o in OracleKind::KNOWN {
            assert_eq!(o.name().parse::<OracleKind>(), Ok(o));
            assert_eq!(serde_json::to_string(&o).unwrap(), format!("\"{o}\""));
        }
        assert!("nope"
            .parse::<OracleKind>()
            .unwrap_err()
            .contains("available: wss"));
        assert!(!OracleKind::defaults().contains(&OracleKind::Fidelity));
    }
}
