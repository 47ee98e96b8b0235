//! The engines txfuzz knows: one entry per engine, naming its SQL dialect,
//! whether it is embedded, and the function that builds its profile from the
//! settings read at connect. Offline tools (`txfuzz check`, `report`, replay
//! commands) find an engine's profile and dialect here from a finding's
//! `engine` record; adding an engine is its folder plus one entry here.

use super::EngineProfile;
use crate::model::EngineInfo;
use crate::sql::Dialect;
use std::collections::BTreeMap;

pub struct EngineKind {
    /// The `EngineInfo::name`s this entry covers.
    pub names: &'static [&'static str],
    pub dialect: Dialect,
    pub profile: fn(&BTreeMap<String, String>) -> EngineProfile,
    /// Settings that change the profile (each value is tried by the tests).
    pub profile_settings: &'static [(&'static str, &'static [&'static str])],
}

impl EngineKind {
    /// One settings map per value of each profile-changing setting, plus the
    /// defaults.
    pub fn setting_variants(&self) -> Vec<BTreeMap<String, String>> {
        let mut out = vec![BTreeMap::new()];
        for (name, values) in self.profile_settings {
            for v in *values {
                out.push(BTreeMap::from([(name.to_string(), v.to_string())]));
            }
        }
        out
    }
}

pub const ENGINES: &[EngineKind] = &[
    EngineKind {
        names: &["sqlite"],
        dialect: Dialect::Sqlite,
        profile: super::sqlite::profile,
        profile_settings: &[],
    },
    EngineKind {
        names: &["mariadb", "mysql"],
        dialect: Dialect::Mysql,
        profile: super::mysql::profile,
        profile_settings: &[
            ("innodb_snapshot_isolation", &["ON", "OFF"]),
            ("innodb_rollback_on_timeout", &["ON", "OFF"]),
        ],
    },
    EngineKind {
        names: &["turso"],
        dialect: Dialect::Sqlite,
        profile: super::turso::profile,
        profile_settings: &[(super::turso::MODE_SETTING, &["mvcc", "wal"])],
    },
    EngineKind {
        names: &["postgres", "postgresql"],
        dialect: Dialect::Postgres,
        profile: super::postgres::profile,
        profile_settings: &[],
    },
];

/// The entry for an engine name (`EngineInfo::name`).
pub fn kind(name: &str) -> Option<&'static EngineKind> {
    let name = name.to_ascii_lowercase();
    ENGINES.iter().find(|k| k.names.contains(&name.as_str()))
}

/// The profile of the engine a finding or history was recorded on.
pub fn profile_of(info: &EngineInfo) -> Result<EngineProfile, String> {
    kind(&info.name)
        .map(|k| (k.profile)(&info.settings))
        .ok_or_else(|| unknown(&info.name))
}

/// The SQL dialect of an engine name.
pub fn dialect_of(name: &str) -> Result<Dialect, String> {
    kind(name).map(|k| k.dialect).ok_or_else(|| unknown(name))
}

fn unknown(name: &str) -> String {
    let known: Vec<&str> = ENGINES
        .iter()
        .flat_map(|k| k.names.iter().copied())
        .collect();
    format!("unknown engine '{name}' (known: {})", known.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_find_their_profiles() {
        assert_eq!(kind("MariaDB").unwrap().dialect, Dialect::Mysql);
        assert!(kind("oracle").is_none());
        assert!(dialect_of("duckdb").unwrap_err().contains("known: sqlite"));
        for k in ENGINES {
            for s in k.setting_variants() {
                let p = (k.profile)(&s);
                for l in &p.isolations {
                    assert!(p.rule(*l).is_some(), "{}: no rule at {l}", p.engine);
                }
            }
        }
    }
}
