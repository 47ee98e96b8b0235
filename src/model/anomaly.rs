//! Anomaly names as a type: what engine profiles permit and what the `graph`
//! oracle reports. The names are Adya's (G0, G1a, ...) and Elle's variants
//! (`lost-update`, `read-skew`, `write-skew`), plus the non-cycle anomalies of
//! the version-order checks.

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

    pub fn name(self) -> &'static str {
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
}
