//! Engine profiles: what an engine's documented design does and permits, as
//! data. One profile per engine and version (built by `engine/*/profile.rs`
//! from the settings read at connect); every oracle and the generator read it,
//! none matches on an engine name or an SQL dialect.
//!
//! Two kinds of facts live here:
//! - **behaviour** the oracles model (levels, error scopes, visibility and
//!   write-conflict rules, lock facts, SQL features): a wrong one makes an
//!   oracle predict wrongly, which shows as violations or undecided cases;
//! - **permissions**: outcomes a strict check would flag but the engine's
//!   documentation (or the SQL standard for the level) allows. Each carries a
//!   [`Source`]: the manual section and the test in `tests/` that shows the
//!   behaviour. Only the verdict policy (`oracle::verdict`) turns a finding into
//!   `permitted`, and only through one of these. docs/engine-facts.md lists them.

pub mod rules;

use crate::model::{Anomaly, Begin, ErrorClass, Features, Isolation, Settings, TestCase};
pub use rules::{
    Access, Conflict, ReadOnlyRule, ResumedScan, Rule, ScanRule, SnapshotPoint, StartRule,
    SubqueryRead, ViewRule,
};
use serde::Serialize;
use std::borrow::Cow;

/// What an error rolls back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorScope {
    /// Only the failing statement; the transaction goes on.
    Statement,
    /// The whole transaction (txfuzz issues ROLLBACK where the engine needs one).
    Transaction,
}

/// Why a permission holds: the documentation that allows the behaviour and
/// the test that shows the engine does it (`tests/FILE.rs::test_name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Source {
    pub doc: &'static str,
    pub test: &'static str,
}

/// The settings a session may give itself (`--setting`, `Txn::settings`),
/// and how the profile of such a session is built: the engine's profile
/// function applied to the server's settings with the session's over them.
#[derive(Clone, Debug)]
pub struct SessionSettings {
    /// Each setting with the values the profile models.
    pub allowed: &'static [(&'static str, &'static [&'static str])],
    /// The engine's profile function (`engine/*/profile.rs`).
    pub build: fn(&Settings) -> EngineProfile,
    /// The server's settings the profile was built from.
    pub server: Settings,
    /// Where the engine documents that the settings are per session.
    pub source: Source,
}

impl PartialEq for SessionSettings {
    fn eq(&self, other: &Self) -> bool {
        self.allowed == other.allowed && self.server == other.server && self.source == other.source
    }
}

/// Dependency-graph anomalies the engine's documentation permits at one level.
#[derive(Clone, Debug, PartialEq)]
pub struct AnomalyPermission {
    pub level: Isolation,
    /// Anomaly classes and named variants; permitting a class (`G-single`)
    /// permits its variants (`lost-update`, `read-skew`).
    pub anomalies: Vec<Anomaly>,
    pub source: Source,
}

/// A behaviour the documentation permits at some levels.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelsPermission {
    pub levels: Vec<Isolation>,
    pub source: Source,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EngineProfile {
    /// The engine family (`sqlite`, `mariadb`, `postgres`), for messages only.
    pub engine: &'static str,
    /// In-process (no server, no URL to reconnect to).
    pub embedded: bool,
    /// Isolation levels the engine implements (the default `--isolation` set).
    pub isolations: Vec<Isolation>,
    /// Error classes that abort the whole transaction; every other class rolls
    /// back only the statement.
    pub aborting_errors: Vec<ErrorClass>,
    /// Every error inside a transaction aborts it (PostgreSQL: later statements
    /// fail with 25P02 until ROLLBACK).
    pub all_errors_abort: bool,
    /// A transaction that wrote nothing is serialised where it took its snapshot
    /// (its first statement), not where it committed. True for snapshot engines
    /// whose writers serialise in commit order (SQLite WAL).
    pub read_only_at_snapshot: bool,
    /// Levels at which the engine identifies every write-write conflict (blocks
    /// or aborts) and serialises writers in commit order, so a final state
    /// unlike the commit-order serial replay is a bug (WriteCheck's Assumption
    /// 1). At other levels `wss` judges only the cases whose writes each saw
    /// exactly the units committed before their own, by the level's write
    /// `Rule` (`oracle::commit_order`); the others are undecided with the
    /// reason, never permitted.
    pub write_conflicts_detected: Vec<Isolation>,
    /// At SERIALIZABLE, the commit/rollback order is a valid serial order for
    /// reads too (false for PostgreSQL SSI, where a reader may serialise before a
    /// writer that committed first).
    pub serializable_reads_in_commit_order: bool,
    /// ROLLBACK TO SAVEPOINT releases the row locks taken after the savepoint,
    /// as documented (PostgreSQL). False where the documentation says they are
    /// kept (InnoDB): behaviour to the contrary is then a violation. Either way
    /// the locks of entries inserted after the savepoint go with the undo
    /// (MySQL 15.3.4: "For a new inserted row, the lock information is carried
    /// by the transaction ID stored in the row ... the row lock is released in
    /// the undo").
    pub savepoint_rollback_releases_locks: bool,
    /// Permission: unique constraints are checked row by row during a statement
    /// (not at its end), so a multi-row UPDATE of a key column succeeds or fails
    /// depending on the order its plan visits rows. Scoped by the verdict policy
    /// to the UPDATE whose unique error differs and the rows it explains.
    pub unique_checked_per_row: Option<Source>,
    /// An INSERT that skips or updates a row on a key conflict (`ON CONFLICT
    /// DO NOTHING / DO UPDATE`) decides each row at its turn against the
    /// rows committed then, without locking a conflicting row it skips
    /// (PostgreSQL): a multi-row INSERT that waited decided the rows before
    /// the wait on an earlier state than the rows after it. `view` judges a
    /// statement on one state, so a difference there is undecided
    /// (`insert-rows-decided-apart`). InnoDB locks the duplicate it skips
    /// (shared next-key lock), so its earlier rows stay decided: `None`.
    pub insert_conflicts_decided_per_row: Option<Source>,
    /// Levels at which writes read the transaction's snapshot while their
    /// unique and foreign-key checks see the latest committed rows (PostgreSQL
    /// REPEATABLE READ and SERIALIZABLE): a constraint error there can come from
    /// a row the statement's view does not contain.
    pub constraint_checks_outside_snapshot: Vec<Isolation>,
    /// A locking read (`FOR UPDATE`/`FOR SHARE`) reads its own rows current,
    /// after any lock wait, but evaluates its subqueries as consistent reads
    /// (InnoDB). Behaviour, not a permission: at SERIALIZABLE the result can
    /// match no serial order, which the standard forbids (a known issue).
    pub locking_read_subqueries_use_statement_snapshot: bool,
    /// The anomalies the documentation permits, per level (absent level:
    /// none). See docs/engine-facts.md.
    pub permitted_anomalies: Vec<AnomalyPermission>,
    /// Visibility, write-conflict and lock rules per level.
    pub rules: Vec<(Isolation, Rule)>,
    /// What each start mode (`Features::start_modes`) changes in them.
    pub start_rules: Vec<StartRule>,
    /// What a READ ONLY transaction may not do (`Features::read_only`).
    pub read_only: Option<ReadOnlyRule>,
    /// SQL features the generator may use.
    pub features: Features,
    /// The engine's temporary tables can have foreign keys (the `view`
    /// oracle's scratch tables are temporary).
    pub temporary_foreign_keys: bool,
    /// NULLs are distinct in a UNIQUE key: rows whose key has a NULL never
    /// conflict (the `integrity` oracle's `unique` check). True for every
    /// engine txfuzz targets (SQLite "CREATE INDEX": "NULL values are
    /// considered distinct from all other values"; PostgreSQL 5.4.3 "Unique
    /// Constraints": "null values are not considered equal"; MariaDB
    /// "CREATE TABLE", UNIQUE: "unique ... except for NULL values").
    pub unique_nulls_distinct: bool,
    /// A transaction's reads see one row per primary-key value of a table
    /// it wrote: its own version of a key hides every other row version with
    /// that key, and the key of a row it deleted or re-keyed is hidden too
    /// (InnoDB). InnoDB keeps rows as records of the clustered index, keyed
    /// by the primary key (MySQL 8.0 Reference Manual 17.6.2.1 "Clustered
    /// and Secondary Indexes": "the PRIMARY KEY ... is used as the clustered
    /// index"); a key deleted and inserted again while a read view still
    /// needs the old version is the same record, and a REPLACE may run as an
    /// update of the conflicting row (15.2.12 "REPLACE Statement": "a storage
    /// engine may perform the REPLACE as an update rather than a delete plus
    /// insert"); a consistent read "sees the latest version of the updated
    /// rows" (17.7.2.3). Without it (PostgreSQL: row versions are tuples), a
    /// deleted snapshot row stays visible next to the transaction's own row
    /// with its key. Behaviour the `view` oracle models, not a permission.
    /// Tables without a primary key are not affected.
    pub own_writes_hide_same_key: bool,
    /// Permission: a read of a transaction that wrote the table shows its
    /// snapshot together with its own writes, which were checked against
    /// rows committed after the snapshot, so the rows it returns can break a
    /// unique key (a state no committed state ever was; the `integrity`
    /// oracle's `unique` read finding).
    pub own_writes_over_snapshot: Option<LevelsPermission>,
    /// Permission: the engine vouches for a transaction's reads at these
    /// levels only once it has committed (PostgreSQL SERIALIZABLE), so a
    /// read of one that did not commit may show a state no serial order
    /// gives (claimed by `integrity`'s read findings).
    pub reads_valid_after_commit: Option<LevelsPermission>,
    /// Permission: at these levels the engine's guarantee covers the
    /// transactions at the level among themselves only (PostgreSQL
    /// SERIALIZABLE), so a read beside a concurrent write of a transaction
    /// at a weaker level may show a state no serial order gives.
    pub guarantee_among_own_level_only: Option<LevelsPermission>,
    /// Permission: a read that includes row versions other transactions
    /// have not committed (READ UNCOMMITTED) may show a state that breaks a
    /// constraint (another statement's partial work).
    pub uncommitted_reads_inconsistent: Option<LevelsPermission>,
    /// A statement that needs a lock another transaction holds waits for
    /// it. False: it fails at once instead (turso: no busy handler txfuzz
    /// could observe, so no busy timeout; MVCC: write-write conflicts abort).
    pub lock_waits: bool,
    /// Settings a session may set for itself; `None`: none.
    pub session_settings: Option<SessionSettings>,
}

impl EngineProfile {
    pub fn error_scope(&self, class: ErrorClass) -> ErrorScope {
        if self.all_errors_abort || self.aborting_errors.contains(&class) {
            ErrorScope::Transaction
        } else {
            ErrorScope::Statement
        }
    }

    /// The rules at `level` (`None`: a level the engine does not implement).
    pub fn rule(&self, level: Isolation) -> Option<Rule> {
        self.rules
            .iter()
            .find(|(l, _)| *l == level)
            .map(|(_, r)| *r)
    }

    /// The rules of a transaction at `level` that starts with `begin`: the
    /// one place every oracle asks where its snapshot is taken, which locks
    /// its start takes and what it may do (`None`: a level the engine does
    /// not implement).
    pub fn txn_rule(&self, level: Isolation, begin: &Begin) -> Option<Rule> {
        let mut rule = self.rule(level)?;
        let applies = |s: &&StartRule| {
            s.mode == begin.mode && (s.levels.is_empty() || s.levels.contains(&level))
        };
        if let Some(start) = self.start_rules.iter().find(applies) {
            if let Some(own) = start.rule {
                rule = own;
            }
            if let Some(point) = start.snapshot {
                rule.snapshot = point;
            }
            rule.write_lock_at_begin |= start.write_lock_at_begin;
        }
        if let (true, Some(ro)) = (begin.read_only, self.read_only) {
            rule.read_only_error = Some(ro.error);
            rule.read_only_refused_locks = ro.refused_locks;
        }
        Some(rule)
    }

    /// The rules of transaction `txn` of `case` (its level, BEGIN and its
    /// session's settings).
    pub fn rule_of(&self, case: &TestCase, txn: u32) -> Option<Rule> {
        let begin = case.txn(txn).map(|t| t.begin()).unwrap_or_default();
        self.for_session(case.settings_of(txn))
            .txn_rule(case.level_of(txn), &begin)
    }

    /// The profile of a session that sets `settings` for itself (this one
    /// when it sets none, or only the server's values): the profile
    /// function applied to the server's settings with the session's over
    /// them ([`crate::model::effective_settings`]).
    pub fn for_session(&self, settings: &Settings) -> Cow<'_, EngineProfile> {
        let Some(s) = self
            .session_settings
            .as_ref()
            .filter(|_| !settings.is_empty())
        else {
            return Cow::Borrowed(self);
        };
        let merged = crate::model::effective_settings(settings, &s.server);
        if merged == s.server {
            return Cow::Borrowed(self);
        }
        Cow::Owned((s.build)(&merged))
    }

    /// The server's settings this profile was built from, where sessions
    /// may set their own (empty where they may not: every session runs
    /// with this profile).
    pub fn server_settings(&self) -> &Settings {
        static NONE: Settings = Settings::new();
        self.session_settings.as_ref().map_or(&NONE, |s| &s.server)
    }

    /// Why a session cannot set `name` to `value` here (a setting or value
    /// the profile does not model).
    pub fn setting_problem(&self, name: &str, value: &str) -> Option<String> {
        let allowed = self
            .session_settings
            .as_ref()
            .map_or(&[][..], |s| s.allowed);
        let Some((_, values)) = allowed.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) else {
            let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
            return Some(format!(
                "{} has no session setting '{name}' txfuzz models (it has: {})",
                self.engine,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        };
        (!values.iter().any(|v| v.eq_ignore_ascii_case(value))).then(|| {
            format!(
                "{name}={value}: txfuzz models the values {} on {}",
                values.join(", "),
                self.engine
            )
        })
    }

    /// Why `begin` cannot start a transaction on this engine (a start mode
    /// or access its `Features` do not list).
    pub fn begin_problem(&self, begin: &Begin) -> Option<String> {
        if !self.features.start_modes.contains(&begin.mode) {
            return Some(format!(
                "{} has no {} start mode (it has: {})",
                self.engine,
                begin.mode,
                self.features
                    .start_modes
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if begin.read_only && !self.features.read_only {
            return Some(format!("{} has no READ ONLY transactions", self.engine));
        }
        if begin.deferrable && !self.features.deferrable {
            return Some(format!("{} has no DEFERRABLE transactions", self.engine));
        }
        None
    }

    /// The permission (with its source) for `anomaly` at `level`, if the
    /// documentation permits it or its class.
    pub fn anomaly_permission(
        &self,
        level: Isolation,
        anomaly: Anomaly,
    ) -> Option<&AnomalyPermission> {
        self.permitted_anomalies.iter().find(|p| {
            p.level == level
                && (p.anomalies.contains(&anomaly) || p.anomalies.contains(&anomaly.class()))
        })
    }

    /// The anomalies permitted at `level`.
    pub fn permitted_at(&self, level: Isolation) -> Vec<Anomaly> {
        self.permitted_anomalies
            .iter()
            .filter(|p| p.level == level)
            .flat_map(|p| p.anomalies.iter().copied())
            .collect()
    }

    /// Every permission of the profile with its source, for documentation and
    /// for the test that checks each names an existing test.
    pub fn permissions(&self) -> Vec<(String, Source)> {
        let mut out: Vec<(String, Source)> = self
            .permitted_anomalies
            .iter()
            .map(|p| {
                let names: Vec<&str> = p.anomalies.iter().map(|a| a.name()).collect();
                (format!("{}: {}", p.level, names.join(", ")), p.source)
            })
            .collect();
        if let Some(s) = self.unique_checked_per_row {
            out.push(("unique_checked_per_row".into(), s));
        }
        if let Some(s) = self.insert_conflicts_decided_per_row {
            out.push(("insert_conflicts_decided_per_row".into(), s));
        }
        if let Some(p) = &self.own_writes_over_snapshot {
            out.push(("own_writes_over_snapshot".into(), p.source));
        }
        if let Some(p) = &self.reads_valid_after_commit {
            out.push(("reads_valid_after_commit".into(), p.source));
        }
        if let Some(p) = &self.guarantee_among_own_level_only {
            out.push(("guarantee_among_own_level_only".into(), p.source));
        }
        if let Some(p) = &self.uncommitted_reads_inconsistent {
            out.push(("uncommitted_reads_inconsistent".into(), p.source));
        }
        for start in &self.start_rules {
            out.push((format!("start_rules: {}", start.mode), start.source));
        }
        if let Some(ro) = &self.read_only {
            out.push(("read_only".into(), ro.source));
        }
        if let Some(s) = &self.session_settings {
            out.push(("session_settings".into(), s.source));
        }
        for (level, rule) in &self.rules {
            for (scan_rule, source) in rule.resumed_scan.iter().flat_map(|s| s.documented) {
                out.push((format!("resumed_scan[{level}]: {scan_rule}"), *source));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Isolation::RepeatableRead;

    /// A MariaDB session's rules follow `innodb_snapshot_isolation` as it
    /// runs with it: its own value where it sets one, else the server's
    /// default (ON on MariaDB 11.8, OFF on 10.11).
    #[test]
    fn a_session_that_sets_nothing_has_the_servers_snapshot_isolation_rules() {
        const SI: &str = "innodb_snapshot_isolation";
        let build = crate::engine::registry::kind("mariadb").unwrap().profile;
        let server = |v: &str| build(&Settings::from([(SI.into(), v.into())]));
        let case = |own: Option<(&str, &str)>| {
            use crate::testkit::{committed, kv_case, select, set};
            let mut c = kv_case(
                &[(1, 10)],
                vec![committed(vec![select("t", Some(1)), set("t", 1, 20)])],
                "1 1 1 1",
            );
            c.isolation = RepeatableRead;
            c.txns[0]
                .settings
                .extend(own.map(|(n, v)| (n.into(), v.into())));
            c
        };
        let conflict = |p: &EngineProfile, c: &TestCase| p.rule_of(c, 1).unwrap().conflict;
        let abort = Conflict::Abort(ErrorClass::SnapshotConflict);
        assert_eq!(conflict(&server("ON"), &case(None)), abort);
        assert_eq!(conflict(&server("OFF"), &case(None)), Conflict::Proceed);
        assert_eq!(
            conflict(&server("ON"), &case(Some((SI, "OFF")))),
            Conflict::Proceed
        );
        assert_eq!(conflict(&server("OFF"), &case(Some((SI, "ON")))), abort);
        // The name in any case replaces the server's.
        assert_eq!(
            conflict(
                &server("ON"),
                &case(Some(("INNODB_SNAPSHOT_ISOLATION", "OFF")))
            ),
            Conflict::Proceed
        );
        // A lost update is permitted at REPEATABLE READ only where the
        // session runs with OFF.
        let lost = |p: &EngineProfile, c: &TestCase| {
            p.for_session(c.settings_of(1))
                .anomaly_permission(RepeatableRead, Anomaly::LostUpdate)
                .is_some()
        };
        assert!(!lost(&server("ON"), &case(None)));
        assert!(lost(&server("ON"), &case(Some((SI, "OFF")))));
        assert!(lost(&server("OFF"), &case(None)));
        assert_eq!(
            server("ON").server_settings().get(SI).map(String::as_str),
            Some("ON")
        );
    }

    /// Every permission of every registered profile names a documentation
    /// source and an existing test function in `tests/`.
    #[test]
    fn every_permission_cites_a_document_and_an_existing_test() {
        for kind in crate::engine::registry::ENGINES {
            for settings in kind.setting_variants() {
                let p = (kind.profile)(&settings);
                for (fact, src) in p.permissions() {
                    assert!(
                        src.doc.len() > 20,
                        "{}: {fact}: no documentation source",
                        p.engine
                    );
                    let (file, func) = src
                        .test
                        .split_once("::")
                        .unwrap_or_else(|| panic!("{fact}: test {} not FILE::fn", src.test));
                    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
                    let text = std::fs::read_to_string(&path)
                        .unwrap_or_else(|e| panic!("{fact}: {}: {e}", path.display()));
                    assert!(
                        text.contains(&format!("fn {func}(")),
                        "{}: {fact}: {file} has no test fn {func}",
                        p.engine
                    );
                }
            }
        }
    }
}
