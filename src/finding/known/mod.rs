//! Known engine bugs: findings that match one are still violations, marked
//! `known` with the upstream reference, counted apart, and they do not fail a
//! campaign unless `--fail-on-known`.
//!
//! The list is TOML (docs/known-issues.md): txfuzz ships `known-issues.toml`
//! and `--known FILE` adds a user's own. An entry matches a violation when its
//! engine and version range, its signature pattern (a `*` glob over the
//! finding's signature key, `oracle/kind/verdict/engine/isolation/features`)
//! and, if given, its case trait (`when`) all match. A trait that asks for a
//! session setting takes a session that sets none of its own as running
//! with the engine's (`EngineInfo::settings`: the server's defaults).

use super::signature::{involved, signature};
use crate::model::{EngineInfo, History, TestCase};
use crate::oracle::verdict::KnownMatch;
use crate::oracle::{Finding, Verdict};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The list txfuzz ships.
pub const BUILTIN: &str = include_str!("../../../known-issues.toml");

mod check;
mod traits;

use traits::has_trait;
pub use traits::Trait;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownIssue {
    /// A short stable name.
    pub id: String,
    /// Engine names (`EngineInfo::name`: `mariadb`, `mysql`, `postgres`, `sqlite`).
    pub engines: Vec<String>,
    /// First affected version (inclusive), e.g. `10.11`; none: all before `until`.
    #[serde(default)]
    pub since: Option<String>,
    /// First fixed version (exclusive); none: not fixed.
    #[serde(default)]
    pub until: Option<String>,
    /// `*` glob(s) over the signature key: one pattern or a list (any matches).
    pub signature: Patterns,
    #[serde(default)]
    pub when: Option<Trait>,
    /// Upstream bug, or the manual section it contradicts when not reported.
    pub reference: String,
    pub description: String,
    /// The scripted test that shows the behaviour.
    #[serde(default)]
    pub test: Option<String>,
    /// Settings the class needs (`{ innodb_snapshot_isolation = "ON" }`): the
    /// engine's, or a value `--setting` draws for the campaign's sessions.
    /// Only `--until-known all` reads them (which classes a campaign can find).
    #[serde(default)]
    pub settings: std::collections::BTreeMap<String, String>,
}

impl KnownIssue {
    /// Whether the entry names this engine and version.
    pub fn covers(&self, engine: &EngineInfo) -> bool {
        self.engines
            .iter()
            .any(|e| e.eq_ignore_ascii_case(&engine.name))
            && in_range(
                &engine.version,
                self.since.as_deref(),
                self.until.as_deref(),
            )
    }

    /// Whether a campaign on `engine` whose sessions draw `drawn` can meet
    /// the class: it covers the engine and each setting it needs is one the
    /// sessions draw, or, where they draw none of that name, the engine's.
    pub fn reachable(&self, engine: &EngineInfo, drawn: &[crate::gen::SettingChoice]) -> bool {
        self.covers(engine)
            && self.settings.iter().all(|(name, value)| {
                match drawn.iter().find(|c| c.name.eq_ignore_ascii_case(name)) {
                    Some(c) => c.values.iter().any(|v| v.eq_ignore_ascii_case(value)),
                    None => engine.settings.iter().any(|(n, v)| {
                        n.eq_ignore_ascii_case(name) && v.eq_ignore_ascii_case(value)
                    }),
                }
            })
    }
}

/// One signature pattern or several.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Patterns {
    One(String),
    Many(Vec<String>),
}

impl Patterns {
    pub(crate) fn list(&self) -> Vec<&str> {
        match self {
            Patterns::One(p) => vec![p.as_str()],
            Patterns::Many(ps) => ps.iter().map(String::as_str).collect(),
        }
    }
    /// Whether any pattern matches `key`.
    pub fn matches(&self, key: &str) -> bool {
        self.list().into_iter().any(|p| glob(p, key))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KnownFile {
    #[serde(default, rename = "issue")]
    issues: Vec<KnownIssue>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct KnownIssues {
    pub issues: Vec<KnownIssue>,
}

impl KnownIssues {
    /// Parses a known-issues file; the error is one line for the user.
    pub fn parse(text: &str, origin: &str) -> Result<KnownIssues, String> {
        let file: KnownFile = toml::from_str(text).map_err(|e| {
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or_default().to_string();
            format!(
                "{origin} is not a valid known-issues file: {first} ({})",
                e.message()
            )
        })?;
        for i in &file.issues {
            let no_pattern = i.signature.list().iter().all(|p| p.is_empty());
            if i.engines.is_empty() || no_pattern || i.id.is_empty() {
                return Err(format!(
                    "{origin}: known issue '{}' needs an id, engines and a signature",
                    i.id
                ));
            }
            // A misspelt engine would disable the entry without a word.
            if let Some(e) = i
                .engines
                .iter()
                .find(|e| crate::engine::registry::kind(e).is_none())
            {
                let known: Vec<&str> = crate::engine::registry::ENGINES
                    .iter()
                    .flat_map(|k| k.names.iter().copied())
                    .collect();
                return Err(format!(
                    "{origin}: known issue '{}' names an unknown engine '{e}' (known: {})",
                    i.id,
                    known.join(", ")
                ));
            }
        }
        for i in &file.issues {
            if let Some(why) = check::entry_problem(i) {
                return Err(format!("{origin}: known issue '{}': {why}", i.id));
            }
        }
        if let Some(id) = check::duplicate_id(&file.issues) {
            return Err(format!("{origin}: known issue id '{id}' is used twice"));
        }
        Ok(KnownIssues {
            issues: file.issues,
        })
    }

    /// The list txfuzz ships.
    pub fn builtin() -> KnownIssues {
        KnownIssues::parse(BUILTIN, "known-issues.toml").expect("the shipped list parses")
    }

    /// The shipped list plus the user's files.
    pub fn load(extra: &[std::path::PathBuf]) -> Result<KnownIssues, String> {
        let mut all = KnownIssues::builtin();
        for p in extra {
            all.issues.extend(Self::read(p)?.issues);
            if let Some(id) = check::duplicate_id(&all.issues) {
                return Err(format!(
                    "{}: known issue id '{id}' is used twice (in this file or the shipped list)",
                    p.display()
                ));
            }
        }
        Ok(all)
    }

    fn read(path: &Path) -> Result<KnownIssues, String> {
        let text = crate::input::read_text(path, crate::input::SMALL_FILE_LIMIT)
            .map_err(|e| format!("known-issues file: {e}"))?;
        KnownIssues::parse(&text, &path.display().to_string())
    }

    /// The first issue `finding` matches (only violations can).
    pub fn find(
        &self,
        finding: &Finding,
        case: &TestCase,
        history: &History,
        engine: &EngineInfo,
    ) -> Option<&KnownIssue> {
        if finding.verdict != Verdict::Violation {
            return None;
        }
        let key = signature(finding, case, engine).key();
        self.issues.iter().find(|i| {
            i.covers(engine)
                && i.signature.matches(&key)
                && i.when
                    .is_none_or(|t| has_trait(t, finding, case, history, &engine.settings))
        })
    }

    /// Marks `findings` that match a known issue (and unmarks the others).
    pub fn mark(
        &self,
        findings: &mut [Finding],
        case: &TestCase,
        history: &History,
        engine: &EngineInfo,
    ) {
        for f in findings.iter_mut() {
            f.known = self.find(f, case, history, engine).map(|k| KnownMatch {
                id: k.id.clone(),
                reference: k.reference.clone(),
                description: k.description.clone(),
            });
        }
    }
}

/// `*` matches any run of characters; everything else literally.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    true
}

/// The leading numeric components of a version (`10.11.19-MariaDB` -> 10, 11, 19).
fn numbers(v: &str) -> Vec<u64> {
    v.split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()
        .unwrap_or_default()
        .split('.')
        .map_while(|p| p.parse().ok())
        .collect()
}

/// Whether `version` is in `[since, until)`, comparing numeric components (a
/// version without numbers is in no bounded range).
pub fn in_range(version: &str, since: Option<&str>, until: Option<&str>) -> bool {
    let v = numbers(version);
    if v.is_empty() && (since.is_some() || until.is_some()) {
        return false;
    }
    since.is_none_or(|s| v >= numbers(s)) && until.is_none_or(|u| v < numbers(u))
}

#[cfg(test)]
mod tests {
    use super::traits::{named_txns, savepoint_before_first_statement_rolled_back};
    use super::*;
    use crate::model::{ErrorClass, Stmt, StmtRef};

    #[test]
    fn the_shipped_list_parses_and_names_tests_that_exist() {
        let k = KnownIssues::builtin();
        assert!(k.issues.len() >= 2);
        for i in &k.issues {
            if let Some(t) = &i.test {
                let (file, func) = t.split_once("::").unwrap();
                let text = std::fs::read_to_string(
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file),
                )
                .unwrap();
                assert!(text.contains(&format!("fn {func}(")), "{}: {t}", i.id);
            }
        }
    }

    #[test]
    fn globs_and_versions() {
        assert!(glob(
            "graph/*/violation/mariadb/*",
            "graph/G-single/violation/mariadb/serializable/select"
        ));
        assert!(!glob(
            "graph/*/violation/mariadb/*",
            "wss/x/violation/mariadb/serializable/"
        ));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "aXbYc") && !glob("a*b*c", "aXcYb"));
        assert!(in_range(
            "10.11.19-MariaDB-0+deb12u1",
            Some("10.11"),
            Some("10.12")
        ));
        assert!(!in_range("11.4.2-MariaDB", Some("10.11"), Some("10.12")));
        assert!(in_range("15.20", None, None));
        assert!(!in_range("unknown", None, Some("11.0")));
        assert!(in_range("unknown", None, None));
    }

    #[test]
    fn named_transactions_come_from_the_evidence() {
        let f = |ev| Finding::new(crate::oracle::OracleKind::Wss, "y", String::new(), ev);
        let named = |ev| named_txns(&f(ev)).map(|s| s.into_iter().collect::<Vec<_>>());
        use serde_json::json;
        assert_eq!(
            named(json!({"transactions": ["T1", "T3#2"]})),
            Some(vec![1, 3])
        );
        assert_eq!(
            named(json!({"stmt": "T4#5", "details": {"holder": 2}})),
            Some(vec![2, 4])
        );
        assert_eq!(
            named(json!({"writes": [{"stmt": {"txn": 5, "index": 0}}]})),
            Some(vec![5])
        );
        assert_eq!(
            named(json!({"statements": [{"stmt": "T2#1"}]})),
            Some(vec![2])
        );
        assert_eq!(named(json!({"tables": {}})), None);
    }

    #[test]
    fn the_savepoint_trait_needs_the_latest_savepoint_first_and_the_rollback_in_time() {
        use crate::model::{EventKind, StmtOutcome};
        use crate::testkit::{kv_case, select};
        let sp = || Stmt::Savepoint("s".into());
        let rb = || Stmt::RollbackTo("s".into());
        let case_of = |stmts: Vec<Stmt>| kv_case(&[(1, 1)], vec![(false, stmts)], "");
        // Every statement ran and completed, in order.
        let history_of = |case: &TestCase| {
            let mut h = History {
                isolation: case.isolation,
                events: Vec::new(),
                outcomes: Vec::new(),
                txns: Vec::new(),
                final_state: Default::default(),
                final_state_error: None,
            };
            for (i, cs) in case.txns[0].stmts.iter().enumerate() {
                let stmt = StmtRef {
                    txn: 1,
                    index: i as u32,
                };
                h.events.push(crate::model::Event {
                    stmt,
                    kind: EventKind::Completed {
                        ok: true,
                        resumed: false,
                    },
                    at_us: i as u64,
                });
                h.outcomes.push(StmtOutcome {
                    stmt,
                    op: cs.op,
                    outcome: Default::default(),
                });
            }
            h
        };
        let bug = case_of(vec![
            Stmt::begin(),
            sp(),
            select("t", Some(1)),
            rb(),
            Stmt::Commit,
        ]);
        let h = history_of(&bug);
        assert!(savepoint_before_first_statement_rolled_back(
            1, &bug, &h, None
        ));
        // Before the ROLLBACK TO completed, the bug had not acted yet.
        let early = Some(StmtRef { txn: 1, index: 2 });
        assert!(!savepoint_before_first_statement_rolled_back(
            1, &bug, &h, early
        ));
        // The name redefined after the first statement: the documented case.
        let redefined = case_of(vec![
            Stmt::begin(),
            sp(),
            select("t", Some(1)),
            sp(),
            select("t", Some(1)),
            rb(),
            Stmt::Commit,
        ]);
        let h = history_of(&redefined);
        assert!(!savepoint_before_first_statement_rolled_back(
            1, &redefined, &h, None
        ));
        // A first data statement refused in a READ ONLY transaction (MariaDB
        // 1792) never reached InnoDB: the savepoint after it still comes
        // before InnoDB's first statement. Any other error did reach it.
        let refused_first = case_of(vec![
            Stmt::begin(),
            select("t", Some(1)),
            sp(),
            select("t", Some(1)),
            rb(),
            Stmt::Commit,
        ]);
        for (class, bug) in [
            (ErrorClass::ReadOnlyTransaction, true),
            (ErrorClass::DuplicateKey, false),
        ] {
            let mut h = history_of(&refused_first);
            h.outcomes[1].outcome.error = Some(crate::model::StmtError {
                class,
                code: String::new(),
                message: String::new(),
            });
            assert_eq!(
                savepoint_before_first_statement_rolled_back(1, &refused_first, &h, None),
                bug,
                "{class:?}"
            );
        }
        // No data statement between the savepoint and the rollback: no lock.
        let empty = case_of(vec![
            Stmt::begin(),
            sp(),
            rb(),
            select("t", Some(1)),
            Stmt::Commit,
        ]);
        let h = history_of(&empty);
        assert!(!savepoint_before_first_statement_rolled_back(
            1, &empty, &h, None
        ));
    }

    /// The rollback releases T1's locks: a statement of T2 judged after it
    /// counts; one judged before it does not.
    #[test]
    fn the_savepoint_trait_covers_statements_of_other_transactions_after_the_rollback() {
        use crate::model::{Event, EventKind, StmtOutcome};
        use crate::testkit::{kv_case, select};
        let t1 = vec![
            Stmt::begin(),
            Stmt::Savepoint("s".into()),
            select("t", Some(1)),
            Stmt::RollbackTo("s".into()),
            Stmt::Commit,
        ];
        let t2 = vec![Stmt::begin(), select("t", Some(1)), Stmt::Commit];
        let judged = |order: &str, index| {
            let case = kv_case(
                &[(1, 1)],
                vec![(false, t1.clone()), (false, t2.clone())],
                order,
            );
            let mut h = History {
                isolation: case.isolation,
                events: Vec::new(),
                outcomes: Vec::new(),
                txns: Vec::new(),
                final_state: Default::default(),
                final_state_error: None,
            };
            for (i, r) in case.submit_order.iter().enumerate() {
                h.events.push(Event {
                    stmt: *r,
                    kind: EventKind::Completed {
                        ok: true,
                        resumed: false,
                    },
                    at_us: i as u64,
                });
                h.outcomes.push(StmtOutcome {
                    stmt: *r,
                    op: case.stmt(*r).unwrap().op,
                    outcome: Default::default(),
                });
            }
            let f = Finding::new(
                crate::oracle::OracleKind::View,
                "result",
                String::new(),
                serde_json::json!({ "stmt": format!("T2#{index}") }),
            );
            has_trait(
                Trait::SavepointBeforeFirstStatementRolledBack,
                &f,
                &case,
                &h,
                &Default::default(),
            )
        };
        assert!(judged("1 1 1 1 2 2 1 2", 1));
        assert!(!judged("1 1 1 2 2 1 1 2", 1));
    }

    /// The engine's snapshot isolation default and a case with an index on
    /// `t.v`, at `level`, whose T1 sets `own` (if any) for its session.
    fn snapshot_setup(
        server: &str,
        own: Option<&str>,
        level: crate::model::Isolation,
        t1: Vec<Stmt>,
    ) -> (EngineInfo, TestCase, History) {
        use crate::testkit::{committed, kv_case, set};
        const SI: &str = "innodb_snapshot_isolation";
        let engine = EngineInfo {
            name: "mariadb".into(),
            version: "11.8.3-MariaDB".into(),
            url: String::new(),
            settings: [(SI.into(), server.into())].into(),
        };
        let mut case = kv_case(
            &[(1, 10)],
            vec![committed(t1), committed(vec![set("t", 1, 20)])],
            "1 1 2 2 1 2 1",
        );
        case.isolation = level;
        case.schema.tables[0].indexes.push(crate::model::Index {
            name: "t_v".into(),
            columns: vec!["v".into()],
            unique: false,
        });
        if let Some(v) = own {
            case.txns[0].settings.insert(SI.into(), v.into());
        }
        let h = History {
            isolation: level,
            events: Vec::new(),
            outcomes: Vec::new(),
            txns: Vec::new(),
            final_state: Default::default(),
            final_state_error: None,
        };
        (engine, case, h)
    }

    /// The shipped entries that need `innodb_snapshot_isolation=ON` (their
    /// traits ask for it) match a finding of a session that sets nothing on
    /// a server where it is ON by default (MariaDB 11.8), not on one where
    /// it is OFF (10.11), and not for a session that sets OFF itself.
    #[test]
    fn a_session_that_sets_nothing_runs_with_the_servers_snapshot_isolation() {
        use crate::model::Isolation::{ReadUncommitted, RepeatableRead};
        use crate::oracle::OracleKind;
        use crate::testkit::{lock_where_v, select, set_where_v};
        let known = KnownIssues::builtin();
        let matched = |server, own, level, t1: Vec<Stmt>, kind: &str| {
            let (engine, case, h) = snapshot_setup(server, own, level, t1);
            let read = StmtRef { txn: 1, index: 2 };
            let f = Finding::new(
                OracleKind::View,
                kind,
                String::new(),
                serde_json::json!({ "stmt": "T1#2" }),
            )
            .about([read]);
            known.find(&f, &case, &h, &engine).map(|i| i.id.clone())
        };
        let locking = || vec![select("t", None), lock_where_v("t", 20)];
        let read = |server, own| matched(server, own, RepeatableRead, locking(), "missed-abort");
        let id = "mariadb-snapshot-isolation-locking-read-through-secondary-index-after-wait";
        assert_eq!(read("ON", None).as_deref(), Some(id));
        assert_eq!(read("OFF", None), None);
        assert_eq!(read("ON", Some("OFF")), None);
        assert_eq!(read("OFF", Some("ON")).as_deref(), Some(id));
        // MariaDB prints 1 through SELECT @@.
        assert_eq!(read("1", None).as_deref(), Some(id));
        let updating = || vec![select("t", None), set_where_v("t", 10, 30)];
        let update =
            |server, own| matched(server, own, ReadUncommitted, updating(), "missed-block");
        let id = "mariadb-read-uncommitted-snapshot-isolation-update-skips-on-uncommitted-version";
        assert_eq!(update("ON", None).as_deref(), Some(id));
        assert_eq!(update("OFF", None), None);
        assert_eq!(update("ON", Some("OFF")), None);
        assert_eq!(update("OFF", Some("ON")).as_deref(), Some(id));
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        let e = KnownIssues::parse("[[issue]]\nid = 1", "x.toml").unwrap_err();
        assert!(
            e.starts_with("x.toml is not a valid known-issues file"),
            "{e}"
        );
        let e = KnownIssues::parse(
            "[[issue]]\nid = \"a\"\nengines = []\nsignature = \"*\"\nreference = \"r\"\ndescription = \"d\"",
            "y.toml",
        )
        .unwrap_err();
        assert!(e.contains("needs an id, engines and a signature"), "{e}");
        let e = KnownIssues::parse("[[issue]]\nbogus = 1", "z.toml").unwrap_err();
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn an_unknown_engine_name_is_refused() {
        let e = KnownIssues::parse(
            "[[issue]]\nid = \"a\"\nengines = [\"mariadbb\"]\nsignature = \"*\"\nreference = \"r\"\ndescription = \"d\"",
            "mine.toml",
        )
        .unwrap_err();
        assert!(e.contains("unknown engine 'mariadbb'"), "{e}");
        assert!(e.contains("mariadb, mysql"), "{e}");
        assert!(KnownIssues::parse(
            "[[issue]]\nid = \"a\"\nengines = [\"MariaDB\", \"postgresql\"]\nsignature = \"*\"\nreference = \"r\"\ndescription = \"d\"",
            "mine.toml",
        )
        .is_ok());
    }
}
