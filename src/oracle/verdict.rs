//! The verdict policy, enforced here and nowhere else.
//!
//! `permitted` means: the engine's documentation (or the SQL standard for the
//! level) allows this outcome. An oracle never decides that on its own: it
//! makes every finding a violation and may attach a [`Claim`], the documented
//! behaviour it believes explains the whole finding. [`apply`] looks the claim
//! up in the engine profile; only a permission there, which carries its
//! documentation source and the test that shows it, makes the finding
//! `permitted` (with [`Permit`] naming that source). Behaviour that is merely
//! observed, undocumented or contrary to the documentation has no permission in
//! the profile, so it stays a violation (possibly a `known` one, see
//! `finding::known`). An oracle that cannot judge a case soundly reports it
//! `undecided` with a reason instead; there is no level-wide permission.

use super::{Finding, Verdict};
use crate::engine::profile::ScanRule;
use crate::engine::EngineProfile;
use crate::model::{Anomaly, Isolation, LevelSet, TestCase, TxnSet};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The documented behaviour an oracle says explains a finding entirely.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "fact")]
pub enum Claim {
    /// The finding is this dependency-graph anomaly at the case's level, or
    /// (a case of mixed levels) at any of the levels `at`: those of the
    /// transactions whose read edges close the cycle (Adya's mixed
    /// serialization graph: a read edge counts at its reader's level).
    Anomaly {
        anomaly: Anomaly,
        #[serde(default, skip_serializing_if = "LevelSet::is_empty")]
        at: LevelSet,
        /// The transactions whose read edges close the cycle: in a case
        /// whose sessions set settings of their own, each is judged by its
        /// session's profile at its level ([`apply_to_case`]).
        #[serde(default, skip_serializing_if = "TxnSet::is_empty")]
        readers: TxnSet,
    },
    /// Every difference in the finding comes from a multi-row UPDATE of a
    /// unique key that hit a duplicate key in one run and not in the other
    /// (row-by-row unique checks), on the rows that UPDATE wrote.
    UniqueCheckOrder,
    /// A read of a transaction that wrote the table returned rows breaking a
    /// unique key: its snapshot next to its own writes. `committed`: whether
    /// the reading transaction then committed (where the engine vouches for
    /// a transaction's reads only once it has committed, one that did not
    /// commit is permitted by `reads_valid_after_commit`).
    OwnWritesOverSnapshot {
        #[serde(default = "yes")]
        committed: bool,
        /// A transaction at a weaker level than the reader's committed a
        /// write of the table while the reader ran (PostgreSQL vouches for
        /// serializable transactions among themselves only).
        #[serde(default)]
        beside_weaker_writer: bool,
    },
    /// A read that returned rows breaking a constraint included a row
    /// version another transaction had not committed (a dirty read).
    UncommittedRead,
    /// A write or locking read that waited halfway through its scan skipped
    /// rows only this way of judging them explains (profile
    /// `Rule::resumed_scan`).
    ResumedScan { rule: ScanRule },
}

fn yes() -> bool {
    true
}

/// The profile fact that permits a finding, with its source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permit {
    /// The profile fact (`permitted_anomalies[read-committed]`, ...).
    pub fact: String,
    /// The documentation that allows the behaviour.
    pub doc: String,
    /// The test that shows the engine does it.
    pub test: String,
}

/// The permission for `claim` at `level`, if the profile documents one.
pub fn permit(profile: &EngineProfile, level: Isolation, claim: Claim) -> Option<Permit> {
    match claim {
        Claim::Anomaly { anomaly, at, .. } if !at.is_empty() => {
            at.levels().into_iter().find_map(|l| {
                profile.anomaly_permission(l, anomaly).map(|p| Permit {
                    fact: format!("permitted_anomalies[{l}] (mixed levels: a reader at {l})"),
                    doc: p.source.doc.into(),
                    test: p.source.test.into(),
                })
            })
        }
        Claim::Anomaly { anomaly, .. } => {
            profile.anomaly_permission(level, anomaly).map(|p| Permit {
                fact: format!("permitted_anomalies[{level}]"),
                doc: p.source.doc.into(),
                test: p.source.test.into(),
            })
        }
        Claim::UniqueCheckOrder => profile.unique_checked_per_row.map(|s| Permit {
            fact: "unique_checked_per_row".into(),
            doc: s.doc.into(),
            test: s.test.into(),
        }),
        Claim::UncommittedRead => profile
            .uncommitted_reads_inconsistent
            .as_ref()
            .filter(|p| p.levels.contains(&level))
            .map(|p| Permit {
                fact: format!("uncommitted_reads_inconsistent[{level}]"),
                doc: p.source.doc.into(),
                test: p.source.test.into(),
            }),
        Claim::ResumedScan { rule } => profile
            .rule(level)
            .and_then(|r| r.resumed_scan)
            .and_then(|s| s.source(rule))
            .map(|s| Permit {
                fact: format!("resumed_scan[{level}]: {rule}"),
                doc: s.doc.into(),
                test: s.test.into(),
            }),
        Claim::OwnWritesOverSnapshot {
            committed,
            beside_weaker_writer,
        } => profile
            .own_writes_over_snapshot
            .as_ref()
            .filter(|p| p.levels.contains(&level))
            .map(|p| Permit {
                fact: format!("own_writes_over_snapshot[{level}]"),
                doc: p.source.doc.into(),
                test: p.source.test.into(),
            })
            .or_else(|| {
                profile
                    .reads_valid_after_commit
                    .as_ref()
                    .filter(|p| !committed && p.levels.contains(&level))
                    .map(|p| Permit {
                        fact: format!("reads_valid_after_commit[{level}]"),
                        doc: p.source.doc.into(),
                        test: p.source.test.into(),
                    })
            })
            .or_else(|| {
                profile
                    .guarantee_among_own_level_only
                    .as_ref()
                    .filter(|p| beside_weaker_writer && p.levels.contains(&level))
                    .map(|p| Permit {
                        fact: format!("guarantee_among_own_level_only[{level}]"),
                        doc: p.source.doc.into(),
                        test: p.source.test.into(),
                    })
            }),
    }
}

/// Sets the verdict of each finding from its claim and the profile.
/// [`apply`] to the findings of `case`: in a case of mixed levels, a
/// finding whose statements are all of transactions at one level is judged
/// at that level (a graph claim names its own levels).
///
/// Where sessions set settings of their own (`Txn::settings`), a finding is
/// judged by the profile of the sessions it involves when they run with the
/// same settings (their own, else the server's: `TestCase::session_settings`;
/// when they do not, by the server's), and a graph anomaly by each reader's
/// session at the reader's level: permitted when one of them permits it.
pub fn apply_to_case(findings: &mut [Finding], profile: &EngineProfile, case: &TestCase) {
    for f in findings {
        let level = case.level_of_refs(&f.involved).unwrap_or(case.isolation);
        if let (
            true,
            Some(Claim::Anomaly {
                anomaly, readers, ..
            }),
        ) = (case.has_session_settings(), f.claim)
        {
            if !readers.is_empty() {
                f.permitted_by = readers
                    .ids()
                    .into_iter()
                    .find_map(|t| reader_permit(profile, case, t, anomaly));
                f.verdict = match f.permitted_by {
                    Some(_) => Verdict::Permitted,
                    None => Verdict::Violation,
                };
                continue;
            }
        }
        let session = case
            .session_settings_of_refs(&f.involved, profile.server_settings())
            .map_or(Cow::Borrowed(profile), |s| profile.for_session(&s));
        apply(std::slice::from_mut(f), &session, level);
    }
}

/// The permission for `anomaly` of reader `txn`'s session at its level.
fn reader_permit(
    profile: &EngineProfile,
    case: &TestCase,
    txn: u32,
    anomaly: Anomaly,
) -> Option<Permit> {
    let server = profile.server_settings();
    let level = case.level_of(txn);
    let session = profile.for_session(case.settings_of(txn));
    let p = session.anomaly_permission(level, anomaly)?;
    // The values of the settings a session may set that it runs with: its
    // own, else the server's.
    let allowed = profile
        .session_settings
        .as_ref()
        .map_or(&[][..], |s| s.allowed);
    let with: Vec<String> = allowed
        .iter()
        .filter_map(|(n, _)| Some(format!("{n}={}", case.setting_of(txn, n, server)?)))
        .collect();
    Some(Permit {
        fact: format!(
            "permitted_anomalies[{level}] (reader T{txn} at {level}, {})",
            with.join(", ")
        ),
        doc: p.source.doc.into(),
        test: p.source.test.into(),
    })
}

pub fn apply(findings: &mut [Finding], profile: &EngineProfile, level: Isolation) {
    for f in findings {
        f.permitted_by = f.claim.and_then(|c| permit(profile, level, c));
        f.verdict = match f.permitted_by {
            Some(_) => Verdict::Permitted,
            None => Verdict::Violation,
        };
    }
}

/// What a finding records when it matches a known engine bug
/// (`finding::known`: the list of known issues and the matching).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownMatch {
    pub id: String,
    pub reference: String,
    pub description: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::registry;
    use serde_json::json;

    fn profile(name: &str) -> EngineProfile {
        (registry::kind(name).unwrap().profile)(&Default::default())
    }

    fn finding(claim: Option<Claim>) -> Finding {
        let mut f = Finding::new(crate::oracle::OracleKind::Graph, "x", "s".into(), json!({}));
        f.claim = claim;
        f
    }

    #[test]
    fn only_a_documented_claim_permits() {
        let lost = Some(Claim::Anomaly {
            anomaly: Anomaly::LostUpdate,
            at: LevelSet::default(),
            readers: TxnSet::default(),
        });
        let mut fs = vec![finding(lost), finding(None)];
        apply(&mut fs, &profile("mariadb"), Isolation::RepeatableRead);
        assert_eq!(fs[0].verdict, Verdict::Permitted);
        let p = fs[0].permitted_by.as_ref().unwrap();
        assert!(p.doc.contains("Consistent Nonlocking Reads"), "{p:?}");
        assert!(p.test.starts_with("tests/"));
        assert_eq!(fs[1].verdict, Verdict::Violation);
        // Not permitted at SERIALIZABLE, nor on PostgreSQL REPEATABLE READ.
        apply(&mut fs, &profile("mariadb"), Isolation::Serializable);
        assert_eq!(fs[0].verdict, Verdict::Violation);
        assert!(fs[0].permitted_by.is_none());
        apply(&mut fs, &profile("postgres"), Isolation::RepeatableRead);
        assert_eq!(fs[0].verdict, Verdict::Violation);
    }

    #[test]
    fn a_resumed_scan_rule_permits_only_where_documented() {
        use crate::engine::profile::ScanRule;
        let claim = |rule| Some(Claim::ResumedScan { rule });
        let mut fs = vec![
            finding(claim(ScanRule::SkippedOnCommittedVersion)),
            finding(claim(ScanRule::MissedInsertedRow)),
            finding(claim(ScanRule::MissedMovedRow)),
        ];
        apply(&mut fs, &profile("mariadb"), Isolation::ReadCommitted);
        assert_eq!(fs[0].verdict, Verdict::Permitted);
        let p = fs[0].permitted_by.as_ref().unwrap();
        assert_eq!(
            p.fact,
            "resumed_scan[read-committed]: skipped-on-committed-version"
        );
        assert!(p.doc.contains("semi-consistent"), "{p:?}");
        assert_eq!(fs[1].verdict, Verdict::Violation);
        assert_eq!(fs[2].verdict, Verdict::Violation);
        // No resumed-scan rule at REPEATABLE READ, nor on PostgreSQL.
        apply(&mut fs, &profile("mariadb"), Isolation::RepeatableRead);
        assert_eq!(fs[0].verdict, Verdict::Violation);
        apply(&mut fs, &profile("postgres"), Isolation::ReadCommitted);
        assert_eq!(fs[0].verdict, Verdict::Violation);
    }

    /// Where another session sets its own value, a reader that sets
    /// nothing is judged with the server's: a lost update at REPEATABLE
    /// READ is permitted with `innodb_snapshot_isolation` OFF on the server
    /// (the fact names the value), a violation with it ON.
    #[test]
    fn a_reader_that_sets_nothing_is_judged_with_the_servers_setting() {
        use crate::testkit::{add, committed, kv_case, select, set};
        const SI: &str = "innodb_snapshot_isolation";
        let build = registry::kind("mariadb").unwrap().profile;
        let judged = |server: &str, t2: &str| {
            let mut case = kv_case(
                &[(1, 10)],
                vec![
                    committed(vec![select("t", Some(1)), add("t", 1, 1)]),
                    committed(vec![set("t", 1, 20)]),
                ],
                "1 1 2 2 2 1 1",
            );
            case.isolation = Isolation::RepeatableRead;
            case.txns[1].settings.insert(SI.into(), t2.into());
            let mut fs = vec![finding(Some(Claim::Anomaly {
                anomaly: Anomaly::LostUpdate,
                at: LevelSet::default(),
                readers: TxnSet::of([1]),
            }))];
            let profile = build(&[(SI.to_string(), server.to_string())].into());
            apply_to_case(&mut fs, &profile, &case);
            fs.remove(0)
        };
        let f = judged("OFF", "ON");
        assert_eq!(f.verdict, Verdict::Permitted, "{f:#?}");
        let fact = &f.permitted_by.as_ref().unwrap().fact;
        assert!(
            fact.contains("reader T1") && fact.contains("innodb_snapshot_isolation=OFF"),
            "{fact}"
        );
        assert_eq!(judged("ON", "OFF").verdict, Verdict::Violation);
    }

    #[test]
    fn unique_order_needs_the_profile_fact() {
        let mut fs = vec![finding(Some(Claim::UniqueCheckOrder))];
        apply(&mut fs, &profile("sqlite"), Isolation::Serializable);
        assert_eq!(fs[0].verdict, Verdict::Violation);
        apply(&mut fs, &profile("postgres"), Isolation::Serializable);
        assert_eq!(fs[0].verdict, Verdict::Permitted);
    }

    /// No oracle sets `Verdict::Permitted` itself: the policy is the only
    /// place (a grep over the sources, so a new oracle cannot bypass it).
    #[test]
    fn permitted_is_set_only_by_the_policy() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs")
                    && !p.ends_with("oracle/verdict.rs")
                {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for (i, line) in text.lines().enumerate() {
                        // Allowed: comparisons (`== Verdict::Permitted`) and
                        // match patterns (`Verdict::Permitted ... =>`).
                        let sets = line.match_indices("Verdict::Permitted").any(|(at, _)| {
                            let before = line[..at].trim_end();
                            let after = &line[at..];
                            !(before.ends_with("==")
                                || before.ends_with("!=")
                                || after.contains("=>"))
                        });
                        if sets {
                            out.push(format!("{}:{}: {line}", p.display(), i + 1));
                        }
                    }
                }
            }
        }
        let mut hits = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut hits,
        );
        assert!(
            hits.is_empty(),
            "Verdict::Permitted set outside the policy: {hits:#?}"
        );
    }
}
