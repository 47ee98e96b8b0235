//! Cycle anomalies as data (after Elle): each is a small spec of the edge
//! kinds it needs. The anomalies themselves and the consistency models that
//! forbid them are [`crate::model::anomaly`].

use crate::model::Anomaly;

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
    pub name: Anomaly,
    pub seed: u8,
    pub rest: u8,
    pub min_rw: usize,
    pub doc: &'static str,
}

/// Searched in this order; a cycle found for an earlier spec is not reported
/// again under a later one.
pub const CYCLE_SPECS: [CycleSpec; 4] = [
    CycleSpec {
        name: Anomaly::G0,
        seed: WW,
        rest: WW | SO,
        min_rw: 0,
        doc: "write cycle: ww edges only (dirty write)",
    },
    CycleSpec {
        name: Anomaly::G1c,
        seed: WR,
        rest: WW | WR | SO,
        min_rw: 0,
        doc: "circular information flow: ww and wr edges, at least one wr",
    },
    CycleSpec {
        name: Anomaly::GSingle,
        seed: RW,
        rest: WW | WR | SO,
        min_rw: 1,
        doc: "exactly one rw edge (read skew on two rows; lost update when rw and ww are on one row between two transactions)",
    },
    CycleSpec {
        name: Anomaly::G2Item,
        seed: RW,
        rest: ALL,
        min_rw: 2,
        doc: "two or more rw edges (write skew with two transactions on two rows)",
    },
];
