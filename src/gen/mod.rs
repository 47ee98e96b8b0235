//! Seeded generation of schemas, data, transactions and submit orders.
//!
//! [`generate_case`] is a pure function of `(seed, index, cfg)`: the RNG is a
//! ChaCha8 stream keyed explicitly from the seed and the case index
//! ([`crate::rng::Rng`]), and nothing iterates over hash maps.
//!
//! Layout: [`rng`] (portable RNG), `schema` (tables, constraints, initial rows,
//! literal values), `expr` (predicates and value expressions over bound
//! columns), `stmt` (SELECT/INSERT/UPDATE/DELETE), `txn` (transactions and the
//! submit order). The generator is methods on one [`Gen`] that holds the RNG,
//! the schema and every row value known so far (initial rows and rows inserted
//! by statements generated earlier), so later statements reuse those values and
//! statements of different transactions collide on the same rows.

pub mod pattern;

mod cursor;
mod deferred;
mod dml;
mod echo;
mod expr;
mod locking;
mod moves;
mod outer_join;
mod phantom;
mod replace_parent;
mod scans;
mod schema;
mod snapshot_reads;
mod start;
mod stmt;
mod subquery_view;
mod txn;

#[cfg(test)]
mod check;
#[cfg(test)]
mod tests;

use crate::model::{Isolation, Schema, Settings, TestCase, Value, CASE_FORMAT};
use crate::rng::Rng;

pub use crate::model::Features;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Isolation levels; one is picked uniformly per case (Serializable if empty).
    pub isolations: Vec<Isolation>,
    pub features: Features,
    /// Transactions/sessions per case: 1..=max, weighted toward 2-4.
    pub max_txns: u32,
    /// Data statements per transaction: 1..=max.
    pub max_stmts_per_txn: u32,
    /// Tables per case: 1..=max.
    pub max_tables: u32,
    /// Initial rows per table: 0..=max.
    pub max_rows: u32,
    /// The share of cases (numerator, denominator) whose transactions each
    /// draw their own level from `isolations` (`--isolation mixed`).
    pub mixed_share: Option<(u64, u64)>,
    /// Per-session settings (`--setting NAME=V1,V2`): each session draws one
    /// value of each.
    pub settings: Vec<SettingChoice>,
    /// The server's settings (`EngineInfo::settings`): what a session that
    /// draws none of its own runs with (`crate::model::setting_value`).
    pub server_settings: Settings,
}

/// A setting each session draws a value of (`--setting NAME=V1,V2`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingChoice {
    pub name: String,
    pub values: Vec<String>,
}

impl std::str::FromStr for SettingChoice {
    type Err = String;
    /// `NAME=V1,V2,...`: a name of letters, digits and `_` (or `.`), values
    /// of letters, digits, `_`, `.` and `-`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, list) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}': expected NAME=VALUE[,VALUE...]"))?;
        let name = name.trim();
        let word = |w: &str, extra: &[char]| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || extra.contains(&c))
        };
        if !word(name, &['.']) || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("'{name}' is not a setting name"));
        }
        let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
        if let Some(bad) = values.iter().find(|v| !word(v, &['.', '-'])) {
            return Err(format!(
                "{name}: '{bad}' is not a value (letters, digits, _ . -)"
            ));
        }
        Ok(SettingChoice {
            name: name.to_string(),
            values,
        })
    }
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            isolations: vec![Isolation::Serializable],
            features: Features::sqlite(),
            max_txns: 5,
            max_stmts_per_txn: 6,
            max_tables: 3,
            max_rows: 10,
            mixed_share: None,
            settings: Vec::new(),
            server_settings: Settings::new(),
        }
    }
}

/// Generates case `index` of the campaign with seed `seed`.
pub fn generate_case(seed: u64, index: u64, cfg: &GenConfig) -> TestCase {
    let mut g = Gen::new(Rng::new(seed, index), cfg);
    let isolation = g
        .rng
        .try_pick(&cfg.isolations)
        .copied()
        .unwrap_or(Isolation::Serializable);
    g.gen_schema();
    let data = g.gen_data();
    let mut txns = g.gen_txns();
    let submit_order = g.gen_submit_order(&txns);
    echo::draw_echoes(seed, index, &cfg.features, &mut txns);
    locking::draw_subqueries(&mut g, seed, index, &mut txns);
    start::draw_begins(seed, index, &cfg.features, &mut txns);
    start::draw_levels(seed, index, cfg, isolation, &mut txns);
    start::draw_settings(seed, index, &cfg.settings, &mut txns);
    let moved = moves::draw_moves(&g, seed, index, &mut txns);
    if cfg.features.moved_row_scans {
        scans::draw_scans(&g, seed, index, isolation, &submit_order, &moved, &mut txns);
    }
    phantom::draw_phantoms(&g, seed, index, isolation, &submit_order, &mut txns);
    subquery_view::draw_subquery_views(&g, seed, index, isolation, &submit_order, &mut txns);
    snapshot_reads::draw_snapshot_reads(&g, seed, index, isolation, &submit_order, &mut txns);
    let mut case = TestCase {
        format: CASE_FORMAT,
        seed,
        index,
        isolation,
        // Kept in `g` for the draws after the cursors.
        schema: g.schema.clone(),
        data,
        txns,
        submit_order,
        checkpoint: draw_checkpoint(seed, index, &cfg.features),
    };
    cursor::draw_cursors(seed, index, &cfg.features, &mut case);
    deferred::draw_deferred(&mut g, seed, index, &case.data, &mut case.txns);
    replace_parent::draw_parent_replaces(&mut g, seed, index, &case.data, &mut case.txns);
    outer_join::draw_outer_joins(&g, seed, index, &mut case.txns);
    case
}

/// Mixed into the seed of the checkpoint stream.
const CHECKPOINT_STREAM: u64 = 0x4350_4f49_4e54_5321; // "CPOINTS!"

/// One case in four checkpoints after its set-up, where the engine can
/// ([`Features::checkpoints`]): rows in the database file rather than the
/// log, a state engines reach on their own after enough writes. Drawn on a
/// stream of its own, so the case is otherwise the one the same seed and
/// index gave before.
fn draw_checkpoint(seed: u64, index: u64, features: &Features) -> bool {
    features.checkpoints && Rng::new(seed ^ CHECKPOINT_STREAM, index).chance(1, 4)
}

/// A workload for stress mode: one schema with rows and at least `txns`
/// transactions over it (ids 1.., op ids and inserted row ids unique), meant to
/// run free, not in a fixed interleaving. The submit order is transaction by
/// transaction.
pub fn generate_workload(seed: u64, cfg: &GenConfig, txns: usize) -> TestCase {
    let mut g = Gen::new(Rng::new(seed, u64::MAX), cfg);
    let isolation = g
        .rng
        .try_pick(&cfg.isolations)
        .copied()
        .unwrap_or(Isolation::Serializable);
    g.gen_schema();
    let data = g.gen_data();
    let mut all: Vec<crate::model::Txn> = Vec::new();
    let mut op = 0u32;
    let initial: Vec<usize> = g.known.iter().map(Vec::len).collect();
    while all.len() < txns {
        // Keep the known rows bounded (initial rows plus the latest inserts), so
        // long workloads are generated in linear time.
        for (rows, &keep) in g.known.iter_mut().zip(&initial) {
            if rows.len() > keep + 200 {
                rows.drain(keep..rows.len() - 200);
            }
        }
        for mut t in g.gen_txns() {
            t.id = all.len() as u32 + 1;
            for s in &mut t.stmts {
                op += 1;
                s.op = op;
            }
            all.push(t);
        }
    }
    start::draw_begins(seed, u64::MAX, &cfg.features, &mut all);
    let submit_order = all
        .iter()
        .flat_map(|t| {
            (0..t.stmts.len() as u32).map(move |index| crate::model::StmtRef { txn: t.id, index })
        })
        .collect();
    TestCase {
        format: CASE_FORMAT,
        seed,
        index: u64::MAX,
        isolation,
        schema: g.schema,
        data,
        txns: all,
        submit_order,
        checkpoint: false,
    }
}

/// The generator state for one case.
pub(crate) struct Gen<'c> {
    pub(crate) rng: Rng,
    pub(crate) cfg: &'c GenConfig,
    pub(crate) schema: Schema,
    /// Per table (schema order): every row known so far, values in column order.
    pub(crate) known: Vec<Vec<Vec<Value>>>,
    /// Next row id for rows inserted by statements.
    pub(crate) next_rid: i64,
}

impl<'c> Gen<'c> {
    fn new(rng: Rng, cfg: &'c GenConfig) -> Self {
        Gen {
            rng,
            cfg,
            schema: Schema::default(),
            known: Vec::new(),
            next_rid: 1000,
        }
    }
}
