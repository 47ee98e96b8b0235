//! Finding signatures: what makes two findings "the same problem", for
//! deduplication (one entry per signature in `summary.json` and the report) and
//! for reduction (a reduced case must keep the signature).
//!
//! A signature is: oracle, kind (anomaly), verdict, engine (with any injected
//! fault), isolation level, and the sorted set of statement kinds and clause
//! features of the statements the finding involves: those its oracle names in
//! [`Finding::involved`] (`graph`: the statements of the transactions in the
//! anomaly; `wss`: the differing reads or writes, or every write for a final
//! state; `crash` and `fidelity`: the statements concerned), otherwise every
//! statement of the case.

use crate::model::{EngineInfo, Expr, OnConflict, Select, Stmt, StmtRef, TestCase};
use crate::oracle::{Finding, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Signature {
    pub oracle: String,
    pub kind: String,
    pub verdict: String,
    pub engine: String,
    pub isolation: String,
    /// Sorted statement kinds (`select`, `update`, `rollback`, ...) and clause
    /// features (`join`, `subquery`, `aggregate`, `locking`, `upsert`, `ignore`,
    /// `replace`, `savepoint`).
    pub features: Vec<String>,
}

impl Signature {
    /// The stable text form, e.g.
    /// `graph/lost-update/permitted/mariadb/repeatable-read/select,update`.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}/{}",
            self.oracle,
            self.kind,
            self.verdict,
            self.engine,
            self.isolation,
            self.features.join(",")
        )
    }
    /// The part reduction keeps by default (the issue's "oracle, anomaly kind,
    /// engine behaviour"): oracle, kind, verdict, engine, level — without the
    /// statement kinds and clauses, which a smaller case may legitimately lose.
    pub fn core(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}",
            self.oracle, self.kind, self.verdict, self.engine, self.isolation
        )
    }
    /// A short stable id: FNV-1a of [`Signature::key`], 16 hex digits.
    pub fn id(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.key().bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

/// The signature of `finding` made on `engine` for `case`.
pub fn signature(finding: &Finding, case: &TestCase, engine: &EngineInfo) -> Signature {
    let mut features = BTreeSet::new();
    for r in involved(finding, case) {
        if let Some(cs) = case.stmt(r) {
            stmt_features(&cs.stmt, &mut features);
        }
    }
    let engine = match engine.settings.get("fault") {
        Some(f) => format!("{}+{f}", engine.name),
        None => engine.name.clone(),
    };
    Signature {
        oracle: finding.oracle.to_string(),
        kind: finding.kind.clone(),
        verdict: match finding.verdict {
            Verdict::Violation => "violation".into(),
            Verdict::Permitted => "permitted".into(),
        },
        engine,
        isolation: judged_level(finding, case),
        features: features.into_iter().map(str::to_string).collect(),
    }
}

/// The level a finding is judged at: the case's; in a case of mixed levels
/// the one level of the readers a graph claim names, else the one level of
/// the transactions the finding is about, else `mixed`.
fn judged_level(finding: &Finding, case: &TestCase) -> String {
    if let Some(crate::oracle::verdict::Claim::Anomaly { at, .. }) = finding.claim {
        if let [one] = at.levels()[..] {
            return one.name().into();
        }
    }
    match case.level_of_refs(&involved(finding, case)) {
        Some(level) => level.name().into(),
        None => "mixed".into(),
    }
}

/// Data statements of a case (BEGIN/COMMIT/ROLLBACK/SAVEPOINT not counted): the
/// size measure used by deduplication and reduction.
pub fn data_stmts(case: &TestCase) -> usize {
    case.txns
        .iter()
        .flat_map(|t| &t.stmts)
        .filter(|s| s.stmt.kind().is_data())
        .count()
}

/// The statements a finding involves: those its oracle named
/// ([`Finding::involved`]), or every statement of the case.
pub fn involved(finding: &Finding, case: &TestCase) -> Vec<StmtRef> {
    if finding.involved.is_empty() {
        case.all_refs().collect()
    } else {
        finding.involved.clone()
    }
}

/// Adds the statement kind and clause features of `stmt` (BEGIN and COMMIT add
/// nothing: every explicit transaction has them).
pub fn stmt_features(stmt: &Stmt, out: &mut BTreeSet<&'static str>) {
    match stmt {
        Stmt::Begin(_) | Stmt::Commit => {}
        Stmt::Rollback => {
            out.insert("rollback");
        }
        Stmt::Savepoint(_) | Stmt::RollbackTo(_) | Stmt::Release(_) => {
            out.insert("savepoint");
        }
        Stmt::SetConstraints(_) => {
            out.insert("set-constraints");
        }
        Stmt::Fetch(_) | Stmt::Close(_) => {
            out.insert("cursor");
        }
        Stmt::Select(s) => {
            out.insert("select");
            if s.cursor.is_some() {
                out.insert("cursor");
            }
            select_features(s, out);
        }
        Stmt::Insert(i) => {
            out.insert("insert");
            match &i.on_conflict {
                OnConflict::Error => {}
                OnConflict::Ignore => {
                    out.insert("ignore");
                }
                OnConflict::Replace => {
                    out.insert("replace");
                }
                OnConflict::Update { assignments, .. } => {
                    out.insert("upsert");
                    assignments
                        .iter()
                        .for_each(|a| expr_features(&a.value, out));
                }
            }
            i.rows.iter().flatten().for_each(|e| expr_features(e, out));
            if let Some(q) = &i.select {
                out.insert("insert-select");
                select_features(q, out);
            }
        }
        Stmt::Update(u) => {
            out.insert("update");
            u.assignments
                .iter()
                .for_each(|a| expr_features(&a.value, out));
            u.where_.iter().for_each(|e| expr_features(e, out));
        }
        Stmt::Delete(d) => {
            out.insert("delete");
            d.where_.iter().for_each(|e| expr_features(e, out));
        }
    }
}

fn select_features(s: &Select, out: &mut BTreeSet<&'static str>) {
    if s.from.len() > 1 {
        out.insert("join");
    }
    if s.lock.is_some() {
        out.insert("locking");
    }
    if s.is_aggregate() {
        out.insert("aggregate");
    }
    s.items.iter().for_each(|i| expr_features(&i.expr, out));
    s.where_.iter().for_each(|e| expr_features(e, out));
    for f in &s.from {
        if let Some(j) = &f.join {
            expr_features(&j.on, out);
        }
    }
}

fn expr_features(e: &Expr, out: &mut BTreeSet<&'static str>) {
    if e.has_subquery() {
        out.insert("subquery");
    }
    if e.has_aggregate() {
        out.insert("aggregate");
    }
}

/// One distinct problem of a campaign: its signature, how many findings had it,
/// and the smallest example (fewest data statements).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Distinct {
    pub signature: String,
    pub id: String,
    pub count: u64,
    pub example: String,
    pub statements: usize,
    /// The known issue the first such finding matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<String>,
    /// The profile fact that permits the first such finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permitted_by: Option<String>,
}

/// Counts `finding` (written to `path`) under its signature in `list`.
pub fn note_distinct(
    list: &mut Vec<Distinct>,
    finding: &Finding,
    case: &TestCase,
    engine: &EngineInfo,
    path: &Path,
) {
    let sig = signature(finding, case, engine);
    let n = data_stmts(case);
    let example = path.display().to_string();
    // Known and new violations of one signature are separate problems.
    let known = finding.known.as_ref().map(|k| k.id.clone());
    match list
        .iter_mut()
        .find(|d| d.signature == sig.key() && d.known == known)
    {
        Some(d) => {
            d.count += 1;
            if n < d.statements {
                d.statements = n;
                d.example = example;
            }
        }
        None => list.push(Distinct {
            signature: sig.key(),
            id: sig.id(),
            count: 1,
            example,
            statements: n,
            known,
            permitted_by: finding.permitted_by.as_ref().map(|p| p.fact.clone()),
        }),
    }
}
