//! Anomaly names as a type: what engine profiles permit and what the `graph`
//! oracle reports. The names are Adya's (G0, G1a, ...) and Elle's variants
//! (`lost-update`, `read-skew`, `write-skew`), plus the non-cycle anomalies of
//! the version-order checks.
//!
//! The consistency models (after Elle's model graph) are data here too: each
//! lists the anomalies it forbids, weakest model first, so "the weakest level
//! a finding violates" and "does this level forbid it" are one lookup.

use super::Isolation;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Anomaly {
    #[serde(rename = "G0")]
    G0,
    #[serde(rename = "G1a")]
    G1a,
    #[serde(rename = "G1b")]
    G1b,
    #[serde(rename = "G1c")]
    G1c,
    #[serde(rename = "G-single")]
    GSingle,
    #[serde(rename = "lost-update")]
    LostUpdate,
    #[serde(rename = "read-skew")]
    ReadSkew,
    #[serde(rename = "G2-item")]
    G2Item,
    #[serde(rename = "write-skew")]
    WriteSkew,
    #[serde(rename = "aborted-write-survives")]
    AbortedWriteSurvives,
    #[serde(rename = "incompatible-order")]
    IncompatibleOrder,
    #[serde(rename = "never-existed")]
    NeverExisted,
    #[serde(rename = "own-write")]
    OwnWrite,
}

impl Anomaly {
    pub const ALL: [Anomaly; 13] = [
        Anomaly::G0,
        Anomaly::G1a,
        Anomaly::G1b,
        Anomaly::G1c,
        Anomaly::GSingle,
        Anomaly::LostUpdate,
        Anomaly::ReadSkew,
        Anomaly::G2Item,
        Anomaly::WriteSkew,
        Anomaly::AbortedWriteSurvives,
        Anomaly::IncompatibleOrder,
        Anomaly::NeverExisted,
        Anomaly::OwnWrite,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Anomaly::G0 => "G0",
            Anomaly::G1a => "G1a",
            Anomaly::G1b => "G1b",
            Anomaly::G1c => "G1c",
            Anomaly::GSingle => "G-single",
            Anomaly::LostUpdate => "lost-update",
            Anomaly::ReadSkew => "read-skew",
            Anomaly::G2Item => "G2-item",
            Anomaly::WriteSkew => "write-skew",
            Anomaly::AbortedWriteSurvives => "aborted-write-survives",
            Anomaly::IncompatibleOrder => "incompatible-order",
            Anomaly::NeverExisted => "never-existed",
            Anomaly::OwnWrite => "own-write",
        }
    }

    /// The anomaly named `name`; `None` for a name txfuzz does not know.
    pub fn from_name(name: &str) -> Option<Anomaly> {
        Anomaly::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The class a named variant belongs to (`lost-update` and `read-skew` are
    /// G-single cycles, `write-skew` is a G2-item cycle); itself otherwise.
    pub fn class(self) -> Anomaly {
        match self {
            Anomaly::LostUpdate | Anomaly::ReadSkew => Anomaly::GSingle,
            Anomaly::WriteSkew => Anomaly::G2Item,
            a => a,
        }
    }
}

/// A consistency model and the anomalies it forbids (besides [`ALWAYS`]).
#[derive(Debug)]
pub struct Model {
    pub name: &'static str,
    pub adya: &'static str,
    /// The SQL level, when the model is one.
    pub isolation: Option<Isolation>,
    pub forbids: &'static [Anomaly],
}

/// What every model forbids: the version-order anomalies.
pub const ALWAYS: [Anomaly; 4] = [
    Anomaly::AbortedWriteSurvives,
    Anomaly::IncompatibleOrder,
    Anomaly::NeverExisted,
    Anomaly::OwnWrite,
];

/// Every item anomaly: what PL-2.99 forbids, and PL-3 too (predicate G2 is
/// not detected, so serializable forbids nothing more here).
const ITEM_ANOMALIES: &[Anomaly] = &[
    Anomaly::G0,
    Anomaly::G1a,
    Anomaly::G1b,
    Anomaly::G1c,
    Anomaly::GSingle,
    Anomaly::LostUpdate,
    Anomaly::ReadSkew,
    Anomaly::G2Item,
    Anomaly::WriteSkew,
];

/// Weakest first: each model forbids at least what the ones before it do,
/// except snapshot isolation, which is incomparable with repeatable read
/// (PL-2.99): it permits G2-item (write skew) but nothing else here.
pub const MODELS: [Model; 5] = [
    Model {
        name: "read-uncommitted",
        adya: "PL-1",
        isolation: Some(Isolation::ReadUncommitted),
        forbids: &[Anomaly::G0],
    },
    Model {
        name: "read-committed",
        adya: "PL-2",
        isolation: Some(Isolation::ReadCommitted),
        forbids: &[Anomaly::G0, Anomaly::G1a, Anomaly::G1b, Anomaly::G1c],
    },
    Model {
        name: "snapshot-isolation",
        adya: "SI",
        isolation: None,
        forbids: &[
            Anomaly::G0,
            Anomaly::G1a,
            Anomaly::G1b,
            Anomaly::G1c,
            Anomaly::GSingle,
            Anomaly::LostUpdate,
            Anomaly::ReadSkew,
        ],
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

/// Whether model `m` forbids `a`.
pub fn model_forbids(m: &Model, a: Anomaly) -> bool {
    ALWAYS.contains(&a) || m.forbids.contains(&a)
}

/// The weakest SQL isolation level that forbids `a`, with its Adya name.
pub fn weakest_level(a: Anomaly) -> (Isolation, &'static str) {
    MODELS
        .iter()
        .filter_map(|m| m.isolation.map(|i| (i, m)))
        .find(|(_, m)| model_forbids(m, a))
        .map_or((Isolation::Serializable, "PL-3"), |(i, m)| (i, m.adya))
}

/// Whether `level` forbids `a`.
pub fn level_forbids(level: Isolation, a: Anomaly) -> bool {
    weakest_level(a).0 <= level
}

/// Whether snapshot isolation forbids `a`.
pub fn si_forbids(a: Anomaly) -> bool {
    model_forbids(&MODELS[2], a)
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_variants_have_classes() {
        for a in Anomaly::ALL {
            assert_eq!(Anomaly::from_name(a.name()), Some(a));
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{}\"", a.name()));
        }
        assert_eq!(Anomaly::LostUpdate.class(), Anomaly::GSingle);
        assert_eq!(Anomaly::WriteSkew.class(), Anomaly::G2Item);
        assert_eq!(Anomaly::from_name("G-nonsense"), None);
    }

    #[test]
    fn weakest_levels() {
        assert_eq!(weakest_level(Anomaly::G0).0, Isolation::ReadUncommitted);
        assert_eq!(weakest_level(Anomaly::G1c).0, Isolation::ReadCommitted);
        assert_eq!(
            weakest_level(Anomaly::LostUpdate).0,
            Isolation::RepeatableRead
        );
        assert_eq!(
            weakest_level(Anomaly::WriteSkew).0,
            Isolation::RepeatableRead
        );
        assert_eq!(
            weakest_level(Anomaly::OwnWrite).0,
            Isolation::ReadUncommitted
        );
        assert!(si_forbids(Anomaly::LostUpdate) && !si_forbids(Anomaly::WriteSkew));
        assert!(!level_forbids(Isolation::ReadCommitted, Anomaly::GSingle));
        assert!(level_forbids(Isolation::Serializable, Anomaly::G2Item));
    }

    /// The SQL levels' models are ordered: each forbids what the weaker ones do.
    #[test]
    fn sql_models_are_ordered_by_implication() {
        let levels: Vec<&Model> = MODELS.iter().filter(|m| m.isolation.is_some()).collect();
        for pair in levels.windows(2) {
            for a in Anomaly::ALL {
                assert!(
                    !model_forbids(pair[0], a) || model_forbids(pair[1], a),
                    "{} forbids {a} but {} does not",
                    pair[0].name,
                    pair[1].name
                );
            }
        }
    }
}
