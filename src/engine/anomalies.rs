//! Which dependency-graph anomalies (names of `oracle::graph::anomaly`) each
//! engine's documented design permits per isolation level. Source:
//! ENGINE-FACTS.md (Hermitage on MariaDB 10.11 and PostgreSQL 15/18).
//!
//! - SQLite: serializable only; nothing permitted.
//! - MariaDB/MySQL (default `innodb_snapshot_isolation=OFF`):
//!   RU: everything but G0; RC: G-single, lost update, G2-item;
//!   RR: lost update, G-single, G2-item (RR prevents G-single only for
//!   read-only transactions); SER: none.
//! - PostgreSQL: RC: G-single, lost update, G2-item; RR (snapshot isolation):
//!   G2-item / write skew; SER: none.
//!
//! Permitting a class (`G-single`) permits its named variants (`lost-update`,
//! `read-skew`); `G2-item` permits `write-skew`.

use crate::model::Isolation;

/// The `EngineProfile::permitted_anomalies` table of an engine family.
pub fn table(engine_name: &str, levels: &[Isolation]) -> Vec<(Isolation, Vec<String>)> {
    levels
        .iter()
        .map(|&l| {
            let names = permitted_for(engine_name, l);
            (l, names.into_iter().map(str::to_string).collect())
        })
        .collect()
}

pub fn permitted_for(engine_name: &str, level: Isolation) -> Vec<&'static str> {
    use Isolation::*;
    match (engine_name.to_ascii_lowercase().as_str(), level) {
        ("mariadb" | "mysql", ReadUncommitted) => vec![
            "G1a",
            "G1b",
            "G1c",
            "G-single",
            "lost-update",
            "read-skew",
            "G2-item",
            "write-skew",
        ],
        ("mariadb" | "mysql", ReadCommitted | RepeatableRead) => {
            vec!["G-single", "lost-update", "G2-item"]
        }
        ("postgres" | "postgresql", ReadCommitted) => vec!["G-single", "lost-update", "G2-item"],
        ("postgres" | "postgresql", RepeatableRead) => vec!["G2-item", "write-skew"],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables() {
        assert!(permitted_for("sqlite", Isolation::Serializable).is_empty());
        assert!(permitted_for("mariadb", Isolation::RepeatableRead).contains(&"lost-update"));
        assert!(!permitted_for("postgres", Isolation::RepeatableRead).contains(&"lost-update"));
        assert!(permitted_for("postgres", Isolation::Serializable).is_empty());
        assert!(!permitted_for("mariadb", Isolation::ReadUncommitted).contains(&"G0"));
    }
}
