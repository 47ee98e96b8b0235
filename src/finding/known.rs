//! Known engine bugs: findings that match one are still violations, marked
//! `known` with the upstream reference, counted apart, and they do not fail a
//! campaign unless `--fail-on-known`.
//!
//! The list is TOML (docs/known-issues.md): txfuzz ships `known-issues.toml`
//! and `--known FILE` adds a user's own. An entry matches a violation when its
//! engine and version range, its signature pattern (a `*` glob over the
//! finding's signature key, `oracle/kind/verdict/engine/isolation/features`)
//! and, if given, its case trait (`when`) all match.

use super::signature::{involved, signature};
use crate::model::{EngineInfo, EventKind, History, Stmt, StmtRef, TestCase};
use crate::oracle::verdict::KnownMatch;
use crate::oracle::{Finding, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// The list txfuzz ships.
pub const BUILTIN: &str = include_str!("../../known-issues.toml");

/// A property of the case (and of the statements the finding involves) that
/// pins a known bug down more precisely than a signature can.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trait {
    /// A transaction took a savepoint before its first data statement and
    /// later rolled back to it successfully: before the finding's judged
    /// statement, if it has one (any transaction), else one the finding names
    /// (or any, when it names none).
    SavepointBeforeFirstStatementRolledBack,
    /// Every statement the finding involves is a locking read with a subquery
    /// that waited for a lock.
    BlockedLockingReadWithSubquery,
    /// The finding's statement is a plain SELECT of a table in which an
    /// earlier UPDATE of its transaction matched a row without changing it,
    /// at a version another transaction wrote.
    ReadAfterUnchangedUpdate,
    /// The finding's transaction wrote a row whose version another, committed
    /// transaction produced by changing the row's primary key (InnoDB: a
    /// delete of the old record and an insert of a new one).
    WriteAfterConcurrentKeyChange,
    /// A transaction the finding names (else any) took a savepoint before its
    /// first data statement, and another transaction committed between the
    /// two (turso: the SAVEPOINT took the read snapshot).
    CommitBetweenSavepointAndFirstStatement,
    /// Two transactions open at the same time wrote the two sides of one
    /// foreign key ([`crate::model::fk_conflict`]).
    ConcurrentParentChildWrites,
    /// A foreign key checked at COMMIT (`DEFERRABLE INITIALLY DEFERRED`)
    /// with an `ON UPDATE` action, and a successful statement that changed
    /// the key it references (an UPDATE of it, or a REPLACE into its table).
    DeferredKeyActionOnUpdate,
    /// A transaction deleted rows of a deferred foreign key's parent table
    /// and later inserted into that table, both successfully.
    DeferredKeyParentDeletedAndReinserted,
    /// A foreign key checked at COMMIT (`DEFERRABLE INITIALLY DEFERRED`)
    /// with an `ON DELETE` action that writes children (CASCADE, SET NULL),
    /// and a successful statement that deleted rows of the key's parent
    /// table (a DELETE of it, or a REPLACE into it).
    DeferredKeyActionOnDelete,
    /// A transaction that committed switched its foreign keys back to
    /// immediate (`SET CONSTRAINTS ALL IMMEDIATE`, SQLite `PRAGMA
    /// defer_foreign_keys = OFF`) after a successful write.
    ConstraintsSetImmediateAfterWrite,
}

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
}

/// One signature pattern or several.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Patterns {
    One(String),
    Many(Vec<String>),
}

impl Patterns {
    fn list(&self) -> Vec<&str> {
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
        }
        Ok(all)
    }

    fn read(path: &Path) -> Result<KnownIssues, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read known-issues file {}: {e}", path.display()))?;
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
            i.engines
                .iter()
                .any(|e| e.eq_ignore_ascii_case(&engine.name))
                && in_range(&engine.version, i.since.as_deref(), i.until.as_deref())
                && i.signature.matches(&key)
                && i.when.is_none_or(|t| has_trait(t, finding, case, history))
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

/// The transactions a finding's evidence names: graph `transactions`
/// (`T1`, `T1#2`), a statement label or reference (`stmt`), a lock holder
/// (`details.holder`), and the statements of `writes`, `reads` and
/// `statements`. `None` when it names none (final-state differences).
fn named_txns(finding: &Finding) -> Option<BTreeSet<u32>> {
    fn txn_of(v: &serde_json::Value) -> Option<u32> {
        match v {
            serde_json::Value::String(label) => label
                .trim_start_matches('T')
                .split('#')
                .next()
                .and_then(|id| id.parse().ok()),
            serde_json::Value::Object(_) => StmtRef::deserialize(v).ok().map(|r| r.txn),
            serde_json::Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            _ => None,
        }
    }
    let ev = &finding.evidence;
    let mut out = BTreeSet::new();
    let list = |key: &str| ev.get(key).and_then(|v| v.as_array()).into_iter().flatten();
    out.extend(list("transactions").filter_map(txn_of));
    out.extend(ev.get("stmt").and_then(txn_of));
    out.extend(ev.pointer("/details/holder").and_then(txn_of));
    for key in ["writes", "reads", "statements"] {
        for item in list(key) {
            out.extend(txn_of(item).or_else(|| item.get("stmt").and_then(txn_of)));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The one statement a finding is about (`view`'s `stmt` label `T4#5`:
/// statement index 5 of T4, 0-based as in `StmtRef`), if any.
fn finding_stmt(finding: &Finding) -> Option<StmtRef> {
    let label = finding.evidence.get("stmt")?.as_str()?;
    let (txn, index) = label.trim_start_matches('T').split_once('#')?;
    Some(StmtRef {
        txn: txn.parse().ok()?,
        index: index.parse().ok()?,
    })
}

/// Whether a committed transaction ran `SET CONSTRAINTS ... IMMEDIATE`
/// successfully after one of its writes succeeded.
fn constraints_set_immediate_after_write(case: &TestCase, history: &History) -> bool {
    use crate::model::{ConstraintTiming, TxnEnd};
    case.txns.iter().any(|t| {
        let ok = |index: usize| {
            history
                .outcome(StmtRef {
                    txn: t.id,
                    index: index as u32,
                })
                .is_some_and(crate::model::Outcome::ok)
        };
        let first_write = t
            .stmts
            .iter()
            .enumerate()
            .position(|(i, s)| s.stmt.kind().is_write() && ok(i));
        history.txn_end(t.id) == Some(TxnEnd::Committed)
            && first_write.is_some_and(|w| {
                t.stmts.iter().enumerate().skip(w + 1).any(|(i, s)| {
                    s.stmt == Stmt::SetConstraints(ConstraintTiming::Immediate) && ok(i)
                })
            })
    })
}

/// Whether a deferred foreign key with an ON DELETE action that writes
/// children saw rows of its parent table deleted by a statement that
/// succeeded.
fn deferred_key_action_on_delete(case: &TestCase, history: &History) -> bool {
    use crate::model::{Deferral, OnConflict};
    let parents: BTreeSet<&str> = case
        .schema
        .tables
        .iter()
        .flat_map(|t| &t.foreign_keys)
        .filter(|fk| {
            fk.deferrable == Some(Deferral::InitiallyDeferred) && fk.on_delete.writes_children()
        })
        .map(|fk| fk.ref_table.as_str())
        .collect();
    history.outcomes.iter().any(|o| {
        o.outcome.ok()
            && match case.stmt(o.stmt).map(|s| &s.stmt) {
                Some(Stmt::Delete(d)) => parents.contains(d.table.as_str()),
                Some(Stmt::Insert(i)) => {
                    i.on_conflict == OnConflict::Replace && parents.contains(i.table.as_str())
                }
                _ => false,
            }
    })
}

/// Whether a deferred foreign key with an ON UPDATE action saw its
/// referenced key changed by a statement that succeeded.
fn deferred_key_action_on_update(case: &TestCase, history: &History) -> bool {
    use crate::model::Deferral;
    let keys: Vec<&crate::model::ForeignKey> = case
        .schema
        .tables
        .iter()
        .flat_map(|t| &t.foreign_keys)
        .filter(|fk| {
            fk.deferrable == Some(Deferral::InitiallyDeferred) && fk.on_update.writes_children()
        })
        .collect();
    history.outcomes.iter().any(|o| {
        let Some(stmt) = case.stmt(o.stmt).map(|s| &s.stmt) else {
            return false;
        };
        o.outcome.ok()
            && keys.iter().any(|fk| match stmt {
                Stmt::Update(u) => {
                    fk.ref_table == u.table
                        && u.assignments
                            .iter()
                            .any(|a| fk.ref_columns.contains(&a.column))
                }
                Stmt::Insert(i) => {
                    fk.ref_table == i.table && i.on_conflict == crate::model::OnConflict::Replace
                }
                _ => false,
            })
    })
}

/// Whether a transaction deleted rows of a deferred key's parent table and
/// later (completion order) inserted into it, both successfully.
fn deferred_key_parent_deleted_and_reinserted(case: &TestCase, history: &History) -> bool {
    use crate::model::Deferral;
    let parents: BTreeSet<&str> = case
        .schema
        .tables
        .iter()
        .flat_map(|t| &t.foreign_keys)
        .filter(|fk| fk.deferrable == Some(Deferral::InitiallyDeferred))
        .map(|fk| fk.ref_table.as_str())
        .collect();
    let mut deleted: BTreeSet<(u32, &str)> = BTreeSet::new();
    for o in history.outcomes.iter().filter(|o| o.outcome.ok()) {
        match case.stmt(o.stmt).map(|s| &s.stmt) {
            Some(Stmt::Delete(d)) if parents.contains(d.table.as_str()) => {
                deleted.insert((o.stmt.txn, d.table.as_str()));
            }
            Some(Stmt::Insert(i)) if deleted.contains(&(o.stmt.txn, i.table.as_str())) => {
                return true;
            }
            _ => {}
        }
    }
    false
}

fn has_trait(t: Trait, finding: &Finding, case: &TestCase, history: &History) -> bool {
    match t {
        Trait::SavepointBeforeFirstStatementRolledBack => {
            // The rollback releases its transaction's locks, which changes
            // what any other statement judged after it may do: with a judged
            // statement, every transaction whose rollback completed before
            // it counts; else those the finding names.
            let by = finding_stmt(finding);
            let named = if by.is_some() {
                None
            } else {
                named_txns(finding)
            };
            case.txns
                .iter()
                .filter(|t| named.as_ref().is_none_or(|n| n.contains(&t.id)))
                .any(|t| savepoint_before_first_statement_rolled_back(t.id, case, history, by))
        }
        Trait::ReadAfterUnchangedUpdate => {
            finding_stmt(finding).is_some_and(|by| read_after_unchanged_update(case, history, by))
        }
        Trait::WriteAfterConcurrentKeyChange => {
            let txns = match (finding_stmt(finding), named_txns(finding)) {
                (Some(by), _) => BTreeSet::from([by.txn]),
                (None, Some(named)) => named,
                (None, None) => return false,
            };
            txns.iter()
                .any(|&t| write_after_concurrent_key_change(case, history, t))
        }
        Trait::CommitBetweenSavepointAndFirstStatement => {
            let named = named_txns(finding);
            case.txns
                .iter()
                .filter(|t| named.as_ref().is_none_or(|n| n.contains(&t.id)))
                .any(|t| commit_between_savepoint_and_first_statement(t.id, case, history))
        }
        Trait::DeferredKeyActionOnUpdate => deferred_key_action_on_update(case, history),
        Trait::DeferredKeyActionOnDelete => deferred_key_action_on_delete(case, history),
        Trait::ConstraintsSetImmediateAfterWrite => {
            constraints_set_immediate_after_write(case, history)
        }
        Trait::DeferredKeyParentDeletedAndReinserted => {
            deferred_key_parent_deleted_and_reinserted(case, history)
        }
        Trait::ConcurrentParentChildWrites => {
            crate::model::fk_conflict::parent_child_conflict(case, history)
        }
        Trait::BlockedLockingReadWithSubquery => {
            let refs = involved(finding, case);
            !refs.is_empty()
                && refs
                    .iter()
                    .all(|r| blocked_locking_read_with_subquery(case, history, *r))
        }
    }
}

/// Statement `by` is a plain SELECT reading a table in which an earlier
/// UPDATE of its transaction matched a row without changing it, at a
/// version another transaction wrote (the row MDEV-26642 leaves at the read
/// view's version).
fn read_after_unchanged_update(case: &TestCase, history: &History, by: StmtRef) -> bool {
    let Some(stmt) = case.stmt(by).map(|c| &c.stmt) else {
        return false;
    };
    if !matches!(stmt, Stmt::Select(sel) if sel.lock.is_none()) {
        return false;
    }
    let read = crate::model::walk::tables(stmt);
    let writer_of = |op: u32| {
        case.txns
            .iter()
            .find(|t| t.stmts.iter().any(|s| s.op == op))
            .map(|t| t.id)
    };
    (0..by.index).any(|index| {
        let r = StmtRef { txn: by.txn, index };
        matches!(case.stmt(r).map(|c| &c.stmt), Some(Stmt::Update(_)))
            && history.outcome(r).is_some_and(|o| {
                o.unchanged.iter().any(|u| {
                    let last = u.wl.last();
                    read.contains(&u.table) && last != 0 && writer_of(last) != Some(by.txn)
                })
            })
    })
}

/// Transaction `txn` wrote (UPDATE or DELETE) a row at a version another
/// committed transaction wrote with an UPDATE that assigned a column of the
/// table's primary key (MDEV-32898's phantom rows).
fn write_after_concurrent_key_change(case: &TestCase, history: &History, txn: u32) -> bool {
    let key_changers: BTreeSet<u32> = case
        .txns
        .iter()
        .filter(|t| t.id != txn)
        .filter(|t| t.autocommit || history.txn_end(t.id) == Some(crate::model::TxnEnd::Committed))
        .flat_map(|t| t.stmts.iter())
        .filter(|cs| match &cs.stmt {
            Stmt::Update(u) => case
                .schema
                .tables
                .iter()
                .find(|tb| tb.name == u.table)
                .is_some_and(|tb| {
                    u.assignments
                        .iter()
                        .any(|a| tb.primary_key.contains(&a.column))
                }),
            _ => false,
        })
        .map(|cs| cs.op)
        .collect();
    if key_changers.is_empty() {
        return false;
    }
    let Some(t) = case.txn(txn) else {
        return false;
    };
    (0..t.stmts.len() as u32).any(|index| {
        let r = StmtRef { txn, index };
        history.outcome(r).is_some_and(|o| {
            o.ok()
                && o.writes.iter().any(|w| {
                    w.before
                        .as_ref()
                        .is_some_and(|b| b.ops().any(|op| key_changers.contains(&op)))
                })
        })
    })
}

/// Transaction `txn` ran SAVEPOINT s before any data statement, then a data
/// statement (which took locks), then ROLLBACK TO s successfully (s being the
/// latest SAVEPOINT of that name, the one MariaDB rolls back to), and, when
/// `by` is given, that ROLLBACK TO completed before statement `by` did (the
/// bug cannot explain what happened before it acted).
/// `txn` ran a SAVEPOINT before its first data statement and another
/// transaction's COMMIT (or autocommit write) completed between the two.
fn commit_between_savepoint_and_first_statement(
    txn: u32,
    case: &TestCase,
    history: &History,
) -> bool {
    let Some(t) = case.txn(txn) else {
        return false;
    };
    let completed = |r: StmtRef| {
        history
            .events
            .iter()
            .position(|e| e.stmt == r && matches!(e.kind, EventKind::Completed { .. }))
    };
    let at = |index: usize| StmtRef {
        txn,
        index: index as u32,
    };
    let Some(first_data) = t.stmts.iter().position(|s| s.stmt.kind().is_data()) else {
        return false;
    };
    let Some(savepoint) = t.stmts[..first_data]
        .iter()
        .position(|s| matches!(s.stmt, Stmt::Savepoint(_)))
    else {
        return false;
    };
    let (Some(from), Some(to)) = (completed(at(savepoint)), completed(at(first_data))) else {
        return false;
    };
    history.events[from..to].iter().any(|e| {
        e.stmt.txn != txn
            && matches!(e.kind, EventKind::Completed { .. })
            && case.txn(e.stmt.txn).is_some_and(|other| {
                let stmt = case.stmt(e.stmt).map(|c| &c.stmt);
                let ok = history.outcome(e.stmt).is_some_and(|o| o.ok());
                ok && match stmt {
                    Some(Stmt::Commit) => true,
                    Some(s) => other.autocommit && s.kind().is_write(),
                    None => false,
                }
            })
    })
}

fn savepoint_before_first_statement_rolled_back(
    txn: u32,
    case: &TestCase,
    history: &History,
    by: Option<StmtRef>,
) -> bool {
    let Some(t) = case.txn(txn) else {
        return false;
    };
    let at = |index: usize| StmtRef {
        txn,
        index: index as u32,
    };
    let ok = |i: usize| history.outcome(at(i)).is_some_and(|o| o.ok());
    let completed = |r: StmtRef| {
        history
            .events
            .iter()
            .position(|e| e.stmt == r && matches!(e.kind, EventKind::Completed { .. }))
    };
    let first_data = t
        .stmts
        .iter()
        .position(|s| s.stmt.kind().is_data())
        .unwrap_or(t.stmts.len());
    t.stmts.iter().enumerate().any(|(j, s)| {
        let Stmt::RollbackTo(name) = &s.stmt else {
            return false;
        };
        let latest = t.stmts[..j]
            .iter()
            .enumerate()
            .rev()
            .find(|(i, s)| matches!(&s.stmt, Stmt::Savepoint(n) if n == name) && ok(*i))
            .map(|(i, _)| i);
        let in_time = match by {
            Some(b) => match (completed(at(j)), completed(b)) {
                (Some(rb), Some(done)) => rb < done,
                _ => false,
            },
            None => true,
        };
        ok(j) && latest.is_some_and(|i| i < first_data && first_data < j) && in_time
    })
}

/// A SELECT with a locking clause and a subquery that waited for a lock.
fn blocked_locking_read_with_subquery(case: &TestCase, history: &History, r: StmtRef) -> bool {
    let Some(Stmt::Select(q)) = case.stmt(r).map(|s| &s.stmt) else {
        return false;
    };
    let subquery = q.where_.as_ref().is_some_and(|w| w.has_subquery())
        || q.items.iter().any(|i| i.expr.has_subquery());
    q.lock.is_some()
        && subquery
        && history
            .events
            .iter()
            .any(|e| e.stmt == r && matches!(e.kind, EventKind::Blocked { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Stmt::Begin,
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
            Stmt::Begin,
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
        // No data statement between the savepoint and the rollback: no lock.
        let empty = case_of(vec![
            Stmt::Begin,
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
            Stmt::Begin,
            Stmt::Savepoint("s".into()),
            select("t", Some(1)),
            Stmt::RollbackTo("s".into()),
            Stmt::Commit,
        ];
        let t2 = vec![Stmt::Begin, select("t", Some(1)), Stmt::Commit];
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
            )
        };
        assert!(judged("1 1 1 1 2 2 1 2", 1));
        assert!(!judged("1 1 1 2 2 1 1 2", 1));
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
}
