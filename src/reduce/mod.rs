//! Automatic test-case reduction (delta debugging). A candidate is a smaller
//! valid case; it is kept when re-executing it on the engine with the finding's
//! oracle gives a finding with the same signature: by default the core
//! ([`Signature::core`]: oracle, kind, verdict, engine with its injected fault,
//! level); with `keep_features` the full [`Signature`] (also the statement
//! kinds and clauses involved). Each candidate runs up to `repeats` times
//! (kept on the first success) to tolerate nondeterminism.
//!
//! Passes, looped to a fixpoint within a budget of executions and time:
//! transactions, statements, tables (with the statements that mention them),
//! initial rows (ddmin style: remove halves, then quarters, ... then single
//! items), statement simplifications (predicates, select items, clauses),
//! unreferenced columns, and secondary indexes/constraints.

pub mod files;
pub mod simplify;

use crate::campaign::run_case;
use crate::engine::{Engine, EngineError};
use crate::exec::ExecOptions;
use crate::finding::known::KnownIssues;
use crate::finding::{data_stmts, signature, FindingRecord, Signature};
use crate::model::edit;
use crate::model::{EngineInfo, History, TestCase};
use crate::oracle::{CheckStats, Finding, OracleKind};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ReduceConfig {
    /// Most executions of candidates (each repeat counts).
    pub max_runs: u32,
    pub max_time: Duration,
    /// Executions per candidate before it counts as not reproducing.
    pub repeats: u32,
    /// Keep the full signature (statement kinds and clauses too), not only
    /// its core.
    pub keep_features: bool,
    pub exec: ExecOptions,
    /// Known issues: a known violation must stay the same known issue, a new
    /// one must stay new.
    pub known: KnownIssues,
}

impl Default for ReduceConfig {
    fn default() -> Self {
        ReduceConfig {
            max_runs: 400,
            max_time: Duration::from_secs(300),
            repeats: 3,
            keep_features: false,
            exec: ExecOptions::default(),
            known: KnownIssues::builtin(),
        }
    }
}

/// The outcome of a reduction.
#[derive(Clone, Debug)]
pub struct Reduced {
    /// The reduced case with the history and finding of its last successful run.
    pub record: FindingRecord,
    /// The signature of the original finding (its core, or all of it with
    /// `keep_features`, is the reduced finding's too).
    pub signature: Signature,
    /// Data statements (BEGIN/COMMIT/ROLLBACK/SAVEPOINT not counted) before/after.
    pub stmts_before: usize,
    pub stmts_after: usize,
    pub txns_before: usize,
    pub txns_after: usize,
    /// Executions used, and candidates kept.
    pub runs: u32,
    pub accepted: u32,
    /// Whether the budget ran out before a fixpoint.
    pub exhausted: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ReduceError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Usage(String),
}

/// Reduces the case of `rec` on `engine` (which must behave as the engine that
/// made the finding: same server, same injected fault).
pub fn reduce(
    engine: &mut dyn Engine,
    rec: &FindingRecord,
    cfg: &ReduceConfig,
) -> Result<Reduced, ReduceError> {
    let oracle: OracleKind = rec.finding.oracle;
    rec.case.validate().map_err(ReduceError::Usage)?;
    let info = engine.info().clone();
    let target = signature(&rec.finding, &rec.case, &info);
    let info_for_known = info.clone();
    let mut r = Reducer {
        engine,
        info,
        oracle,
        target: target.clone(),
        // Judged now, with this run's list: a file may predate an entry.
        target_known: cfg
            .known
            .find(&rec.finding, &rec.case, &rec.history, &info_for_known)
            .map(|k| k.id.clone()),
        cfg,
        start: Instant::now(),
        runs: 0,
        accepted: 0,
        last: None,
    };
    if !r.test(&rec.case)? {
        return Err(ReduceError::Usage(format!(
            "the finding did not reproduce in {} run(s) (signature {})",
            cfg.repeats,
            target.key()
        )));
    }
    r.accepted = 0;
    let mut cur = rec.case.clone();
    while r.budget_left() {
        if !r.pass(&mut cur)? {
            break;
        }
    }
    let exhausted = !r.budget_left();
    let Some((history, finding)) = r.last.take() else {
        return Err(ReduceError::Usage(
            "the finding did not reproduce on this engine; nothing to reduce".into(),
        ));
    };
    let mut finding = finding;
    // The reduced case runs once more without instrumentation: a reduced
    // finding whose shadow differs may be txfuzz's doing, not the engine's.
    if oracle != OracleKind::Fidelity {
        let shadow = crate::oracle::fidelity::shadow(r.engine, &cur, &history, &cfg.exec)?;
        if let Some(ev) = finding.evidence.as_object_mut() {
            ev.insert("shadow".into(), shadow.to_json());
        }
    }
    let record = FindingRecord::new(finding, r.info.clone(), cur.clone(), history);
    Ok(Reduced {
        signature: target,
        stmts_before: data_stmts(&rec.case),
        stmts_after: data_stmts(&cur),
        txns_before: rec.case.txns.len(),
        txns_after: cur.txns.len(),
        runs: r.runs,
        accepted: r.accepted,
        exhausted,
        record,
    })
}

impl Reducer<'_> {
    /// One pass of every reduction (transactions, statements, tables, rows,
    /// simplifications, columns, constraints) on `cur`: whether any applied.
    fn pass(&mut self, cur: &mut TestCase) -> Result<bool, ReduceError> {
        let mut changed = false;
        changed |= self.ddmin(cur, &|c| c.txns.iter().map(|t| t.id).collect(), &|c, x| {
            edit::remove_txns(c, x)
        })?;
        changed |= self.ddmin(cur, &edit::removable_ops, &edit::remove_ops)?;
        changed |= self.ddmin(
            cur,
            &|c| c.schema.tables.iter().map(|t| t.name.clone()).collect(),
            &|c, x: &[String]| {
                x.iter()
                    .try_fold(c.clone(), |c, t| edit::remove_table(&c, t))
            },
        )?;
        changed |= self.ddmin(cur, &edit::rows, &edit::remove_rows)?;
        changed |= self.simplify(cur)?;
        changed |= self.ddmin(cur, &edit::unreferenced_columns, &edit::remove_columns)?;
        changed |= self.ddmin(cur, &edit::constraints, &edit::remove_constraints)?;
        Ok(changed)
    }
}

type Items<T> = dyn Fn(&TestCase) -> Vec<T>;
type Remove<T> = dyn Fn(&TestCase, &[T]) -> Option<TestCase>;

struct Reducer<'a> {
    engine: &'a mut dyn Engine,
    info: EngineInfo,
    oracle: OracleKind,
    target: Signature,
    /// The known issue the finding matched (`None`: a new violation).
    target_known: Option<String>,
    cfg: &'a ReduceConfig,
    start: Instant,
    runs: u32,
    accepted: u32,
    /// History and finding of the last case that reproduced.
    last: Option<(History, Finding)>,
}

impl Reducer<'_> {
    fn budget_left(&self) -> bool {
        self.runs < self.cfg.max_runs && self.start.elapsed() < self.cfg.max_time
    }

    /// Whether `case` reproduces the target signature (up to `repeats` runs).
    fn test(&mut self, case: &TestCase) -> Result<bool, EngineError> {
        if case.validate().is_err() {
            return Ok(false);
        }
        for _ in 0..self.cfg.repeats.max(1) {
            if !self.budget_left() {
                return Ok(false);
            }
            self.runs += 1;
            let mut stats = CheckStats::default();
            match run_case(
                self.engine,
                case,
                &[self.oracle],
                &self.cfg.exec,
                &mut stats,
            ) {
                Ok((history, mut findings)) => {
                    self.cfg
                        .known
                        .mark(&mut findings, case, &history, &self.info);
                    let hit = findings.into_iter().find(|f| {
                        let s = signature(f, case, &self.info);
                        let same = match self.cfg.keep_features {
                            true => s == self.target,
                            false => s.core() == self.target.core(),
                        };
                        same && f.known.as_ref().map(|k| &k.id) == self.target_known.as_ref()
                    });
                    if let Some(f) = hit {
                        self.last = Some((history, f));
                        self.accepted += 1;
                        return Ok(true);
                    }
                }
                // The candidate cannot be set up (e.g. a foreign key lost its
                // parent row): deterministic, not worth repeating.
                Err(EngineError::Setup(_) | EngineError::Usage(_)) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }

    /// Removes chunks of items (halves, then quarters, ... then single items),
    /// keeping each removal that reproduces. Returns whether anything changed.
    fn ddmin<T: Clone>(
        &mut self,
        cur: &mut TestCase,
        items: &Items<T>,
        remove: &Remove<T>,
    ) -> Result<bool, EngineError> {
        let mut changed = false;
        let mut size = items(cur).len().div_ceil(2).max(1);
        loop {
            let list = items(cur);
            if list.is_empty() || !self.budget_left() {
                return Ok(changed);
            }
            size = size.min(list.len());
            let mut progressed = false;
            for chunk in list.chunks(size) {
                let Some(cand) = remove(cur, chunk) else {
                    continue;
                };
                if self.test(&cand)? {
                    *cur = cand;
                    progressed = true;
                    changed = true;
                    break;
                }
            }
            if !progressed {
                if size == 1 {
                    return Ok(changed);
                }
                size = size.div_ceil(2);
            }
        }
    }

    /// Tries every one-step simplification of every statement.
    fn simplify(&mut self, cur: &mut TestCase) -> Result<bool, EngineError> {
        let mut changed = false;
        let ops: Vec<u32> = cur
            .txns
            .iter()
            .flat_map(|t| &t.stmts)
            .map(|s| s.op)
            .collect();
        for op in ops {
            while let Some(stmt) = cur
                .txns
                .iter()
                .flat_map(|t| &t.stmts)
                .find(|s| s.op == op)
                .map(|s| s.stmt.clone())
            {
                let mut kept = false;
                for alt in simplify::simplifications(&stmt) {
                    if !self.budget_left() {
                        return Ok(changed);
                    }
                    let cand = edit::replace_stmt(cur, op, alt);
                    if self.test(&cand)? {
                        *cur = cand;
                        changed = true;
                        kept = true;
                        break;
                    }
                }
                if !kept {
                    break;
                }
            }
        }
        Ok(changed)
    }
}
