//! The `view` oracle (Troc, ICSE'23), per statement: from the actual schedule,
//! keep a version history of every row ([`versions`]); for each statement,
//! build the view its engine, isolation level and statement kind make visible
//! (the profile's [`visibility`] rules), evaluate the statement on that view in the engine itself
//! ([`scratch`]), predict whether it must block on another transaction's locks
//! or must abort on a write conflict ([`locks`]), and compare with what
//! happened: blocking that must have happened but did not, an abort that must
//! have happened but did not, query results (as bags), rows written, and the
//! final state.
//!
//! Soundness over coverage (the false-positive classes of APTrans §4.3 are
//! designed out): snapshot points are data per engine and checked against the
//! servers. A wait the engine reported is a fact: a statement that takes locks
//! is judged after it, predicted or not. InnoDB writes and locking reads that
//! waited at READ COMMITTED/UNCOMMITTED are judged row by row on the
//! committed states of their run (`statement/resumed.rs`). An unpredicted
//! abort, a statement the scratch evaluation cannot run, or a situation the
//! model does not cover (partial writes of a waiting statement visible at READ
//! UNCOMMITTED, subqueries whose read view differs from the outer rows',
//! INSERTs with subqueries) stops the comparison and makes the case *undecided*; results are compared
//! as bags, LIMIT results only when no row can have been cut. Writes are the
//! difference of the scratch table before and after, so upserts and REPLACE
//! are covered.
//! Statements resumed by one lock release have no observable order: every
//! order is tried ([`orders`]); a violation needs all of them to violate.
//!
//! Counts: `checked` (decided cases), `undecided` (and `undecided_by`
//! reason), `discarded` (`single-transaction`,
//! `lost-connection`: cases the oracle does not look at).

mod checker;
mod commit_keys;
pub mod locks;
mod orders;
pub mod scratch;
mod state;
mod statement;
pub mod undecided;
pub mod versions;
/// The engine's visibility rules, from its profile.
pub use crate::engine::profile::rules as visibility;

use super::{CheckStats, Finding};
use crate::engine::{Engine, EngineError};
use crate::exec::ExecOptions;
use crate::model::{History, TestCase};
pub use undecided::Undecided;

pub const ORACLE: &str = "view";
/// The finding kind of a statement that alone gives a wrong answer
/// (`statement/query_bug.rs`): a query bug, counted apart.
pub const QUERY_BUG: &str = "query-bug";

/// What the oracle concluded about one case.
#[derive(Debug, Default)]
pub struct Conclusion {
    pub findings: Vec<Finding>,
    /// Why the comparison stopped early (`None`: the whole case was compared).
    pub undecided: Option<Undecided>,
    /// The walk stopped at a violation (the last finding); the others claim
    /// documented behaviour and do not stop it.
    pub violation: bool,
    /// Events the walk got through before it stopped (all of them when it
    /// did not): how much of the observed history the order explained.
    pub walked: usize,
}

pub fn check(
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    _opts: &ExecOptions,
    stats: &mut CheckStats,
) -> Result<Vec<Finding>, EngineError> {
    let counts = stats.oracle(ORACLE);
    let discard = if case.txns.len() < 2 {
        Some("single-transaction")
    } else if history.lost_connection() {
        Some("lost-connection")
    } else {
        None
    };
    if let Some(reason) = discard {
        *counts.discarded.entry(reason.to_string()).or_default() += 1;
        return Ok(Vec::new());
    }
    let c = checker::run(engine, case, history)?;
    let counts = stats.oracle(ORACLE);
    match (&c.undecided, c.violation) {
        (Some(reason), false) => {
            counts.undecided += 1;
            *counts.undecided_by.entry(reason.key()).or_default() += 1;
        }
        _ => counts.checked += 1,
    }
    Ok(c.findings)
}

/// The `view` oracle in the registry ([`crate::oracle::registry`]).
pub struct ViewOracle;

impl crate::oracle::Oracle for ViewOracle {
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
