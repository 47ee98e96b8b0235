//! The campaign summary: counts a person reads at the end and `summary.json`.

use super::{CampaignConfig, Shard};
use crate::model::{EngineInfo, History, Isolation, TestCase};
use crate::oracle::{CheckStats, Finding, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub txfuzz_version: String,
    pub engine: EngineInfo,
    pub seed: u64,
    pub isolations: Vec<Isolation>,
    pub oracles: Vec<String>,
    pub cases: u64,
    pub transactions: u64,
    pub statements: u64,
    pub blocked_events: u64,
    pub aborts: u64,
    /// Cases in which two concurrent transactions wrote a parent and a child
    /// of one foreign key ([`crate::model::fk_conflict`]).
    #[serde(default)]
    pub parent_child_conflicts: u64,
    /// Cases that use each constraint feature
    /// ([`crate::model::case_features::constraint_features`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cases_with: BTreeMap<String, u64>,
    /// Explicit transactions per BEGIN option ([`crate::model::Begin::label`]:
    /// `immediate`, `default+read-only`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub txns_by_start: BTreeMap<String, u64>,
    /// Transactions of mixed-level cases (`--isolation mixed`) per level;
    /// such cases count as `mixed` in `cases_per_isolation`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mixed_txns_per_isolation: BTreeMap<String, u64>,
    /// Cases per per-session setting (`--setting`): `NAME=VALUE` when every
    /// session of the case set that value, `NAME=mixed` when they differ.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cases_per_setting: BTreeMap<String, u64>,
    /// Sessions per per-session setting value (`NAME=VALUE`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sessions_per_setting: BTreeMap<String, u64>,
    pub replays: u64,
    pub undecided: u64,
    /// Per-oracle counts (`sdg`, `view`): checked, undecided, discarded by reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub oracle_counts: BTreeMap<String, crate::oracle::OracleCounts>,
    /// Violations that match no known issue (these fail the campaign).
    pub violations: u64,
    /// Violations that match a known engine bug (`known-issues.toml`, `--known`).
    #[serde(default)]
    pub known_violations: u64,
    pub permitted: u64,
    /// Shadow-run differences (`fidelity` findings): txfuzz changed what the
    /// engine did. Counted apart from the engine's violations; they fail the
    /// campaign too.
    #[serde(default)]
    pub fidelity: u64,
    /// New query bugs (`view` `query-bug` findings): a statement that alone,
    /// on one committed state, gives a wrong answer. Engine bugs, but not
    /// transactional ones: counted apart from `violations`; they fail the
    /// campaign too.
    #[serde(default)]
    pub query_bugs: u64,
    /// Known violations by known-issue id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub known_by: BTreeMap<String, u64>,
    /// When each known issue was first found (`scripts/bench-detect.sh`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub known_first: BTreeMap<String, FirstFound>,
    /// `--until-known`: the known issues the campaign ran until it found
    /// each (or its limit came first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub until_known: Vec<String>,
    /// Permitted findings by the profile fact that permits them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub permitted_by: BTreeMap<String, u64>,
    /// Findings by oracle, then by kind.
    pub findings: BTreeMap<String, BTreeMap<String, u64>>,
    pub finding_files: Vec<String>,
    pub cases_per_isolation: BTreeMap<String, u64>,
    /// Statement errors by class (`duplicate_key`, `busy`, ...).
    pub statement_errors: BTreeMap<String, u64>,
    pub elapsed_s: f64,
    pub cases_per_s: f64,
    pub transactions_per_hour: f64,
    /// Workers that ran cases at once (`--jobs`).
    #[serde(default = "one")]
    pub jobs: usize,
    /// The share of the case indexes this campaign ran (`--shard I/N`);
    /// absent: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Where the time went, in seconds summed over the workers: `generate`,
    /// `execute` (load and the judged run), one entry per oracle (its
    /// replays and scratch runs included), and `record` (writing findings).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub phase_s: BTreeMap<String, f64>,
    /// The number of this campaign's first finding file: files of `findings/`
    /// numbered lower are earlier runs' (`merge` leaves them out).
    #[serde(default)]
    pub first_finding: usize,
    /// The wrapping sum over every generated case of a hash of its JSON:
    /// equal digests, equal sets of cases, whatever the order they ran in
    /// (`--jobs`) or the shards they ran in (`txfuzz merge` adds them).
    pub case_digest: String,
    /// One entry per distinct finding signature: count and smallest example.
    #[serde(default)]
    pub distinct: Vec<crate::finding::Distinct>,
    /// `(elapsed seconds, cases, findings)` at each summary flush.
    #[serde(default)]
    pub timeline: Vec<(f64, u64, u64)>,
    /// Why the campaign stopped early (e.g. the server did not come back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Findings `txfuzz report` added to a summary the campaign could not
    /// finish writing (it was killed): [`super::repair`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub completed_from_files: usize,
    /// A merge that lacks some of the campaign's shards: which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<Incomplete>,
    /// `case_digest` as a number (`merge` adds them).
    #[serde(skip)]
    pub(super) digest: u64,
}

fn one() -> usize {
    1
}

fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One case's share of `case_digest`: FNV-1a of its JSON, mixed
/// (SplitMix64's finaliser) so that sums of similar cases do not cancel.
fn case_hash(case: &TestCase) -> u64 {
    let json = serde_json::to_vec(case).unwrap_or_default();
    let mut z = fnv1a(0xcbf2_9ce4_8422_2325, &json);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Summary {
    pub fn new(engine: EngineInfo, cfg: &CampaignConfig, isolations: &[Isolation]) -> Summary {
        Summary {
            txfuzz_version: env!("CARGO_PKG_VERSION").into(),
            engine,
            seed: cfg.seed,
            isolations: isolations.to_vec(),
            oracles: cfg.oracles.iter().map(|o| o.name().to_string()).collect(),
            jobs: 1,
            shard: (!cfg.shard.is_whole()).then_some(cfg.shard),
            ..Summary::default()
        }
    }

    pub fn note_case(&mut self, case: &TestCase) {
        self.cases += 1;
        self.transactions += case.txns.len() as u64;
        self.statements += case.stmt_count() as u64;
        let level = match case.mixed_levels() {
            true => "mixed",
            false => case.isolation.name(),
        };
        *self
            .cases_per_isolation
            .entry(level.to_string())
            .or_default() += 1;
        for t in &case.txns {
            if case.mixed_levels() {
                *self
                    .mixed_txns_per_isolation
                    .entry(case.level_of(t.id).name().to_string())
                    .or_default() += 1;
            }
            if !t.autocommit {
                *self.txns_by_start.entry(t.begin().label()).or_default() += 1;
            }
        }
        let mut values: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
        for t in &case.txns {
            for (name, value) in &t.settings {
                values.entry(name).or_default().insert(value);
                *self
                    .sessions_per_setting
                    .entry(format!("{name}={value}"))
                    .or_default() += 1;
            }
        }
        for (name, set) in values {
            let value = match set.len() {
                1 => set.into_iter().next().unwrap_or_default(),
                _ => "mixed",
            };
            *self
                .cases_per_setting
                .entry(format!("{name}={value}"))
                .or_default() += 1;
        }
        self.digest = self.digest.wrapping_add(case_hash(case));
        for f in crate::model::case_features::constraint_features(case) {
            *self.cases_with.entry(f.to_string()).or_default() += 1;
        }
    }

    pub fn note_history(&mut self, case: &TestCase, h: &History, stats: &CheckStats) {
        self.blocked_events += h.blocked_events() as u64;
        self.parent_child_conflicts +=
            u64::from(crate::model::fk_conflict::parent_child_conflict(case, h));
        self.aborts += h.aborts() as u64;
        for e in h.outcomes.iter().filter_map(|o| o.outcome.error.as_ref()) {
            let class = serde_json::to_value(e.class)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            *self.statement_errors.entry(class).or_default() += 1;
        }
        self.replays += stats.replays;
        self.undecided += stats.undecided;
        for (name, c) in &stats.per_oracle {
            self.oracle_counts.entry(name.clone()).or_default().add(c);
        }
        for (phase, s) in &stats.seconds {
            *self.phase_s.entry(phase.clone()).or_default() += s;
        }
    }

    /// Adds `seconds` to `phase` (see [`Summary::phase_s`]).
    pub fn note_phase(&mut self, phase: &str, seconds: f64) {
        *self.phase_s.entry(phase.to_string()).or_default() += seconds;
    }

    pub fn note_finding(&mut self, f: &Finding, path: &Path) {
        match (f.verdict, &f.known, &f.permitted_by) {
            _ if f.oracle == crate::oracle::OracleKind::Fidelity => self.fidelity += 1,
            (Verdict::Violation, None, _) if f.kind == crate::oracle::view::QUERY_BUG => {
                self.query_bugs += 1
            }
            (Verdict::Violation, None, _) => self.violations += 1,
            (Verdict::Violation, Some(k), _) => {
                self.known_violations += 1;
                *self.known_by.entry(k.id.clone()).or_default() += 1;
            }
            (Verdict::Permitted, _, p) => {
                self.permitted += 1;
                let fact = p.as_ref().map_or("?", |p| p.fact.as_str());
                *self.permitted_by.entry(fact.to_string()).or_default() += 1;
            }
        }
        *self
            .findings
            .entry(f.oracle.to_string())
            .or_default()
            .entry(f.kind.clone())
            .or_default() += 1;
        self.finding_files.push(path.display().to_string());
    }

    pub fn finish(&mut self, elapsed: Duration) {
        self.elapsed_s = elapsed.as_secs_f64();
        let secs = self.elapsed_s.max(1e-9);
        self.cases_per_s = self.cases as f64 / secs;
        self.transactions_per_hour = self.transactions as f64 / secs * 3600.0;
        self.case_digest = format!("{:016x}", self.digest);
        let point = (
            self.elapsed_s,
            self.cases,
            self.violations
                + self.known_violations
                + self.permitted
                + self.fidelity
                + self.query_bugs,
        );
        if self
            .timeline
            .last()
            .is_none_or(|l| l.1 != point.1 || l.0 < point.0)
        {
            self.timeline.push(point);
        }
    }

    /// `time per case: execute 4.8 ms, wss 1.6 ms, ...` (busiest first), or
    /// nothing before the first case.
    fn phase_line(&self) -> Option<String> {
        if self.cases == 0 || self.phase_s.is_empty() {
            return None;
        }
        let mut phases: Vec<(&String, &f64)> = self.phase_s.iter().collect();
        phases.sort_by(|a, b| b.1.total_cmp(a.1));
        let per_case: Vec<String> = phases
            .iter()
            .map(|(p, s)| format!("{p} {:.2}", *s * 1000.0 / self.cases as f64))
            .collect();
        Some(format!(
            "ms per case ({} job(s)): {}\n",
            self.jobs,
            per_case.join(", ")
        ))
    }

    /// Cases the oracles left undecided, summed over the oracles.
    pub fn undecided_cases(&self) -> u64 {
        self.oracle_counts.values().map(|c| c.undecided).sum()
    }

    /// The human-readable summary printed at the end of `txfuzz run`.
    pub fn render(&self) -> String {
        let mut s = format!(
            "txfuzz {} on {} {} (seed {})\n\
             cases {}  transactions {}  statements {}  blocked {}  aborts {}  replays {}  parent/child conflicts {}\n\
             {:.1} cases/s  {:.0} transactions/hour  {:.1}s\n",
            self.txfuzz_version,
            self.engine.name,
            self.engine.version,
            self.seed,
            self.cases,
            self.transactions,
            self.statements,
            self.blocked_events,
            self.aborts,
            self.replays,
            self.parent_child_conflicts,
            self.cases_per_s,
            self.transactions_per_hour,
            self.elapsed_s,
        );
        if let Some(line) = self.phase_line() {
            s.push_str(&line);
        }
        for (name, c) in &self.oracle_counts {
            let discarded: Vec<String> = c
                .discarded
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let why: Vec<String> = c
                .undecided_by
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let list = |v: &[String]| {
                if v.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", v.join(", "))
                }
            };
            s.push_str(&format!(
                "{name}: checked {}  undecided {}{}  discarded {}{}\n",
                c.checked,
                c.undecided,
                list(&why),
                c.discarded.values().sum::<u64>(),
                list(&discarded),
            ));
        }
        if let Some(why) = &self.stopped {
            s.push_str(&format!("stopped early: {why}\n"));
        }
        if let Some(inc) = &self.incomplete {
            s.push_str(&format!("INCOMPLETE: {}\n", inc.sentence()));
        }
        s.push_str(&format!(
            "undecided: {} case(s) across oracles (never reported as findings); {} single comparison(s) skipped\n",
            self.undecided_cases(),
            self.undecided
        ));
        if self.findings.is_empty() {
            s.push_str("findings: none\n");
        } else {
            s.push_str(&format!(
                "findings: {} violation(s), {} query bug(s), {} known violation(s), {} permitted, {} fidelity (txfuzz changed the engine's behaviour)\n",
                self.violations, self.query_bugs, self.known_violations, self.permitted, self.fidelity
            ));
            for (id, n) in &self.known_by {
                let first = self.known_first.get(id).map_or(String::new(), |f| {
                    format!(" (first after {:.0} s, {} case(s))", f.seconds, f.cases)
                });
                s.push_str(&format!("  known   {id:<40} {n}{first}\n"));
            }
            for (fact, n) in &self.permitted_by {
                s.push_str(&format!("  permitted by {fact:<35} {n}\n"));
            }
            for (oracle, kinds) in &self.findings {
                for (kind, n) in kinds {
                    s.push_str(&format!("  {oracle:<6} {kind:<24} {n}\n"));
                }
            }
        }
        s
    }
}

/// The first finding of one known issue in a campaign.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstFound {
    /// Seconds from the campaign's start to when the finding was recorded.
    pub seconds: f64,
    /// Cases the campaign had finished by then (this one included).
    pub cases: u64,
    /// The index of the case that found it.
    pub case: u64,
}

impl Summary {
    /// Notes `id` found by case `case` at `seconds`, unless found before.
    pub fn note_known_first(&mut self, id: &str, case: u64, seconds: f64) {
        let cases = self.cases;
        self.known_first
            .entry(id.to_string())
            .or_insert(FirstFound {
                seconds,
                cases,
                case,
            });
    }

    /// Whether every issue of `--until-known` has been found.
    pub fn found_every_target(&self) -> bool {
        !self.until_known.is_empty()
            && self
                .until_known
                .iter()
                .all(|id| self.known_first.contains_key(id))
    }
}

/// The shards a merged summary lacks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incomplete {
    pub missing_shards: Vec<super::Shard>,
}

impl Incomplete {
    /// One line for the user.
    pub fn sentence(&self) -> String {
        let missing: Vec<String> = self.missing_shards.iter().map(|s| s.to_string()).collect();
        format!(
            "shard(s) {} are missing: the counts cover part of the campaign",
            missing.join(", ")
        )
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
