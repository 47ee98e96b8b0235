//! `txfuzz merge OUT DIR...`: the output directories of several campaigns of
//! one seed (the shards of `--shard I/N`, run on several machines, say)
//! joined into one: every finding copied into `OUT/findings/` (renumbered,
//! with its `.sql` and reduced files), and one `OUT/summary.json` whose
//! counts are the sums, whose `case_digest` is the digest of the union of
//! the cases, and whose distinct signatures are deduplicated across shards
//! (and `patterns.json`, summed, for pattern campaigns).

use super::{write_summary, Shard, Summary};
use crate::finding::{file_number, finding_files, note_distinct, readable_records, FindingStore};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a merge did, for the user.
#[derive(Debug)]
pub struct Merged {
    pub summary: Summary,
    /// The shards present, and those of their count missing (empty: all).
    pub shards: Vec<Shard>,
    pub missing: Vec<Shard>,
}

/// Merges the campaigns in `dirs` into `out` (created; it must not hold
/// findings already). Refuses campaigns of different seeds, engines,
/// levels or oracles, a shard twice, and shards of different counts.
pub fn merge(out: &Path, dirs: &[PathBuf]) -> Result<Merged, String> {
    if dirs.is_empty() {
        return Err("merge needs at least one campaign output directory".into());
    }
    let parts: Vec<Summary> = dirs
        .iter()
        .map(|d| read_summary(d))
        .collect::<Result<_, _>>()?;
    let shards = check_compatible(dirs, &parts)?;
    let mut store = FindingStore::create(out)
        .map_err(|e| format!("cannot use {} as the merged output: {e}", out.display()))?;
    if std::fs::read_dir(store.dir()).is_ok_and(|mut d| d.next().is_some()) {
        return Err(format!(
            "{} already holds findings: merge into a new directory",
            out.display()
        ));
    }
    let first = &parts[0];
    let mut merged = Summary {
        txfuzz_version: first.txfuzz_version.clone(),
        engine: first.engine.clone(),
        seed: first.seed,
        isolations: first.isolations.clone(),
        oracles: first.oracles.clone(),
        jobs: 0,
        ..Summary::default()
    };
    let mut hits = super::pattern_stats::Hits::default();
    let mut generator = None;
    for (dir, part) in dirs.iter().zip(&parts) {
        add_counts(&mut merged, part);
        copy_findings(dir, part, &mut store, &mut merged)?;
        generator = hits.add_file(dir)?.or(generator);
    }
    if let Some(g) = generator {
        hits.write(out, &g)
            .map_err(|e| format!("cannot write {}/patterns.json: {e}", out.display()))?;
    }
    merged.shard = None;
    merged.case_digest = format!("{:016x}", merged.digest);
    let secs = merged.elapsed_s.max(1e-9);
    merged.cases_per_s = merged.cases as f64 / secs;
    merged.transactions_per_hour = merged.transactions as f64 / secs * 3600.0;
    let count = shards.first().map_or(1, |s| s.count);
    let missing: Vec<Shard> = (0..count)
        .map(|index| Shard { index, count })
        .filter(|s| !shards.contains(s))
        .collect();
    if !missing.is_empty() {
        merged.incomplete = Some(super::summary::Incomplete {
            missing_shards: missing.clone(),
        });
    }
    write_summary(out, &merged)
        .map_err(|e| format!("cannot write {}/summary.json: {e}", out.display()))?;
    Ok(Merged {
        summary: merged,
        shards,
        missing,
    })
}

fn read_summary(dir: &Path) -> Result<Summary, String> {
    let path = dir.join("summary.json");
    let text = crate::input::read_text(&path, crate::input::SUMMARY_LIMIT)?;
    let mut s: Summary = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a campaign summary: {e}", path.display()))?;
    // Written before the first case (a shard killed at once): no digest yet.
    if s.case_digest.is_empty() && s.cases == 0 {
        return Ok(s);
    }
    s.digest = u64::from_str_radix(&s.case_digest, 16).map_err(|_| {
        format!(
            "{}: case_digest '{}' is not hex",
            path.display(),
            s.case_digest
        )
    })?;
    Ok(s)
}

/// The shards of `parts`, after checking that they are parts of one campaign.
fn check_compatible(dirs: &[PathBuf], parts: &[Summary]) -> Result<Vec<Shard>, String> {
    let first = &parts[0];
    let mut shards = BTreeSet::new();
    for (dir, p) in dirs.iter().zip(parts) {
        let differs = |what: &str, a: String, b: String| {
            format!(
                "{} ran {what} {b}, {} ran {a}: only shards of one campaign merge",
                dir.display(),
                dirs[0].display()
            )
        };
        if p.seed != first.seed {
            return Err(differs("seed", first.seed.to_string(), p.seed.to_string()));
        }
        let engine = |s: &Summary| format!("{} {}", s.engine.name, s.engine.version);
        if engine(p) != engine(first) {
            return Err(differs("engine", engine(first), engine(p)));
        }
        let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<String>>();
        let levels = |s: &Summary| set(s.isolations.iter().map(|l| l.name().to_string()).collect());
        if levels(p) != levels(first) {
            return Err(differs(
                "levels",
                format!("{:?}", first.isolations),
                format!("{:?}", p.isolations),
            ));
        }
        if set(p.oracles.clone()) != set(first.oracles.clone()) {
            return Err(differs(
                "oracles",
                first.oracles.join(","),
                p.oracles.join(","),
            ));
        }
        let shard = p.shard.unwrap_or(Shard::WHOLE);
        let count = first.shard.unwrap_or(Shard::WHOLE).count;
        if shard.count != count {
            return Err(format!(
                "{} is shard {shard}, {} is of {count} shards: shards of one split only",
                dir.display(),
                dirs[0].display()
            ));
        }
        if !shards.insert(shard) {
            return Err(format!("shard {shard} is given twice ({})", dir.display()));
        }
    }
    Ok(shards.into_iter().collect())
}

/// Adds `p`'s counts to `s`; elapsed time is the longest shard's (they run
/// side by side); distinct signatures are rebuilt from the copied findings.
fn add_counts(s: &mut Summary, p: &Summary) {
    s.cases += p.cases;
    s.transactions += p.transactions;
    s.statements += p.statements;
    s.blocked_events += p.blocked_events;
    s.aborts += p.aborts;
    s.parent_child_conflicts += p.parent_child_conflicts;
    s.replays += p.replays;
    s.undecided += p.undecided;
    for (name, c) in &p.oracle_counts {
        s.oracle_counts.entry(name.clone()).or_default().add(c);
    }
    let add = |to: &mut std::collections::BTreeMap<String, u64>,
               from: &std::collections::BTreeMap<String, u64>| {
        for (k, v) in from {
            *to.entry(k.clone()).or_default() += v;
        }
    };
    add(&mut s.known_by, &p.known_by);
    // Shards ran side by side: the earliest shard's time, and its own cases.
    for (id, f) in &p.known_first {
        let earlier = s
            .known_first
            .get(id)
            .is_some_and(|e| e.seconds <= f.seconds);
        if !earlier {
            s.known_first.insert(id.clone(), f.clone());
        }
    }
    for id in &p.until_known {
        if !s.until_known.contains(id) {
            s.until_known.push(id.clone());
        }
    }
    add(&mut s.permitted_by, &p.permitted_by);
    add(&mut s.cases_per_isolation, &p.cases_per_isolation);
    add(&mut s.cases_with, &p.cases_with);
    add(&mut s.txns_by_start, &p.txns_by_start);
    add(&mut s.mixed_txns_per_isolation, &p.mixed_txns_per_isolation);
    add(&mut s.cases_per_setting, &p.cases_per_setting);
    add(&mut s.sessions_per_setting, &p.sessions_per_setting);
    add(&mut s.statement_errors, &p.statement_errors);
    for (oracle, kinds) in &p.findings {
        add(s.findings.entry(oracle.clone()).or_default(), kinds);
    }
    s.violations += p.violations;
    s.known_violations += p.known_violations;
    s.permitted += p.permitted;
    s.fidelity += p.fidelity;
    s.query_bugs += p.query_bugs;
    s.jobs += p.jobs;
    for (phase, secs) in &p.phase_s {
        *s.phase_s.entry(phase.clone()).or_default() += secs;
    }
    s.elapsed_s = s.elapsed_s.max(p.elapsed_s);
    s.digest = s.digest.wrapping_add(p.digest);
    if let Some(why) = &p.stopped {
        let shard = p.shard.unwrap_or(Shard::WHOLE);
        let line = format!("shard {shard}: {why}");
        s.stopped = Some(match s.stopped.take() {
            Some(earlier) => format!("{earlier}; {line}"),
            None => line,
        });
    }
}

/// Copies the findings of `dir`'s last campaign (numbered from its
/// `first_finding`: an output directory keeps earlier runs' findings too;
/// those of a run killed before its last summary flush are copied as well)
/// into `store` (new numbers, replay commands pointing at the copies), with
/// their `.sql` scripts and reduced files, and counts each under its
/// signature in `s.distinct`. An unreadable finding file is skipped with a
/// warning, as `report` does.
fn copy_findings(
    dir: &Path,
    part: &Summary,
    store: &mut FindingStore,
    s: &mut Summary,
) -> Result<(), String> {
    let files: Vec<PathBuf> = finding_files(dir)
        .map_err(|e| format!("cannot read {}/findings: {e}", dir.display()))?
        .into_iter()
        .filter(|f| file_number(f).is_some_and(|n| n >= part.first_finding))
        .collect();
    for (path, rec) in readable_records(files) {
        let script = std::fs::read_to_string(path.with_extension("sql")).unwrap_or_default();
        let new = store
            .write(rec.clone(), &script)
            .map_err(|e| format!("cannot write into {}: {e}", store.dir().display()))?;
        for suffix in ["-reduced.json", "-reduced.sql"] {
            let from = sibling(&path, suffix);
            if from.exists() {
                std::fs::copy(&from, sibling(&new, suffix))
                    .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
            }
        }
        s.finding_files.push(new.display().to_string());
        note_distinct(&mut s.distinct, &rec.finding, &rec.case, &rec.engine, &new);
    }
    Ok(())
}

/// `DIR/NNNN-x.json` -> `DIR/NNNN-x<suffix>`.
fn sibling(finding: &Path, suffix: &str) -> PathBuf {
    let stem = finding
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    finding.with_file_name(format!("{stem}{suffix}"))
}
