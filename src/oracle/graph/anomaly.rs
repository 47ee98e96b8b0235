//! Anomalies and consistency models as data (after Elle): each cycle anomaly is
//! a small spec of the edge kinds it needs; each model lists what it forbids, and
//! a finding names the weakest model it violates.

use crate::model::Isolation;

/// Edge kinds (bit masks).
pub const WW: u8 = 1;
pub const WR: u8 = 2;
pub const RW: u8 = 4;
pub const SO: u8 = 8;
pub const ALL: u8 = WW | WR | RW | SO;

pub fn kind_name(k: u8) -> &'static str {
    match k {
        WW => "ww",
        WR => "wr",
        RW => "rw",
        SO => "so",
        _ => "?",
    }
}

/// A cycle anomaly: a cycle that contains one `seed` edge and otherwise only
/// `rest` edges, with at least `min_rw` anti-dependency (rw) edges.
#[derive(Debug)]
pub struct CycleSpec {
    pub name: &'static str,
    pub seed: u8,
    pub rest: u8,
    pub min_rw: usize,
    pub doc: &'static str,
}

/// Searched in this order; a cycle found for an earlier spec is not reported
/// again under a later one.
pub const CYCLE_SPECS: [CycleSpec; 4] = [
    CycleSpec {
        name: G0,
        seed: WW,
        rest: WW | SO,
        min_rw: 0,
        doc: "write cycle: ww edges only (dirty write)",
    },
    CycleSpec {
        name: G1C,
        seed: WR,
        rest: WW | WR | SO,
        min_rw: 0,
        doc: "circular information flow: ww and wr edges, at least one wr",
    },
    CycleSpec {
        name: G_SINGLE,
        seed: RW,
        rest: WW | WR | SO,
        min_rw: 1,
        doc: "exactly one rw edge (read skew on two rows; lost update when rw and ww are on one row between two transactions)",
    },
    CycleSpec {
        name: G2_ITEM,
        seed: RW,
        rest: ALL,
        min_rw: 2,
        doc: "two or more rw edges (write skew with two transactions on two rows)",
    },
];

pub const G0: &str = "G0";
pub const G1A: &str = "G1a";
pub const G1B: &str = "G1b";
pub const G1C: &str = "G1c";
pub const G_SINGLE: &str = "G-single";
pub const LOST_UPDATE: &str = "lost-update";
pub const READ_SKEW: &str = "read-skew";
pub const G2_ITEM: &str = "G2-item";
pub const WRITE_SKEW: &str = "write-skew";
/// An aborted transaction's write is in the final state (atomicity; G1a family).
pub const ABORTED_SURVIVES: &str = "aborted-write-survives";
/// Two observed write lists of one row, neither a prefix of the other.
pub const INCOMPATIBLE_ORDER: &str = "incompatible-order";
/// A write list names an operation that did not write that row.
pub const NEVER_EXISTED: &str = "never-existed";
/// A transaction did not see its own earlier write.
pub const OWN_WRITE: &str = "own-write";

/// The anomaly a named variant belongs to (`lost-update` is a G-single).
pub fn base_of(name: &str) -> &'static str {
    match name {
        LOST_UPDATE | READ_SKEW | G_SINGLE => G_SINGLE,
        WRITE_SKEW | G2_ITEM => G2_ITEM,
        G0 => G0,
        G1A => G1A,
        G1B => G1B,
        G1C => G1C,
        ABORTED_SURVIVES => ABORTED_SURVIVES,
        INCOMPATIBLE_ORDER => INCOMPATIBLE_ORDER,
        NEVER_EXISTED => NEVER_EXISTED,
        _ => OWN_WRITE,
    }
}

/// A consistency model and the anomalies it forbids.
#[derive(Debug)]
pub struct Model {
    pub name: &'static str,
    pub adya: &'static str,
    /// The SQL level, when the model is one.
    pub isolation: Option<Isolation>,
    pub forbids: &'static [&'static str],
}

const ALWAYS: [&str; 4] = [
    ABORTED_SURVIVES,
    INCOMPATIBLE_ORDER,
    NEVER_EXISTED,
    OWN_WRITE,
];

/// Weakest first. Snapshot isolation is incomparable with repeatable read
/// (PL-2.99): it permits G2-item (write skew) but nothing else here.
/// Every item anomaly: what PL-2.99 forbids, and PL-3 too (predicate G2 is
/// not detected, so serializable forbids nothing more here).
const ITEM_ANOMALIES: &[&str] = &[
    G0,
    G1A,
    G1B,
    G1C,
    G_SINGLE,
    LOST_UPDATE,
    READ_SKEW,
    G2_ITEM,
    WRITE_SKEW,
];

pub const MODELS: [Model; 5] = [
    Model {
        name: "read-uncommitted",
        adya: "PL-1",
        isolation: Some(Isolation::ReadUncommitted),
        forbids: &[
            G0,
            ABORTED_SURVIVES,
            INCOMPATIBLE_ORDER,
            NEVER_EXISTED,
            OWN_WRITE,
        ],
    },
    Model {
        name: "read-committed",
        adya: "PL-2",
        isolation: Some(Isolation::ReadCommitted),
        forbids: &[G0, G1A, G1B, G1C],
    },
    Model {
        name: "snapshot-isolation",
        adya: "SI",
        isolation: None,
        forbids: &[G0, G1A, G1B, G1C, G_SINGLE, LOST_UPDATE, READ_SKEW],
    },
    Model {
        name: "repeatable-read",
        adya: "PL-2.99",
        isolation: Some(Isolation::RepeatableRead),
        forbids: ITEM_ANOMALIES,
    },
    Model {
        name: "serializable",
        adya: "PL-3",
        isolation: Some(Isolation::Serializable),
        forbids: ITEM_ANOMALIES,
    },
];

pub fn model_forbids(m: &Model, anomaly: &str) -> bool {
    ALWAYS.contains(&anomaly) || m.forbids.contains(&anomaly)
}

/// The weakest SQL isolation level that forbids `anomaly`, with its Adya name.
pub fn weakest_level(anomaly: &str) -> (Isolation, &'static str) {
    MODELS
        .iter()
        .filter_map(|m| m.isolation.map(|i| (i, m)))
        .find(|(_, m)| model_forbids(m, anomaly))
        .map(|(i, m)| (i, m.adya))
        .unwrap_or((Isolation::Serializable, "PL-3"))
}

/// Whether `level` forbids `anomaly`.
pub fn level_forbids(level: Isolation, anomaly: &str) -> bool {
    weakest_level(anomaly).0 <= level
}

pub fn si_forbids(anomaly: &str) -> bool {
    model_forbids(&MODELS[2], anomaly)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weakest_levels() {
        assert_eq!(weakest_level(G0).0, Isolation::ReadUncommitted);
        assert_eq!(weakest_level(G1C).0, Isolation::ReadCommitted);
        assert_eq!(weakest_level(LOST_UPDATE).0, Isolation::RepeatableRead);
        assert_eq!(weakest_level(WRITE_SKEW).0, Isolation::RepeatableRead);
        assert_eq!(weakest_level(OWN_WRITE).0, Isolation::ReadUncommitted);
        assert!(si_forbids(LOST_UPDATE) && !si_forbids(WRITE_SKEW));
        assert!(!level_forbids(Isolation::ReadCommitted, G_SINGLE));
        assert!(level_forbids(Isolation::Serializable, G2_ITEM));
    }
}
