//! An UPDATE or DELETE that waited for a row lock at a level whose writes scan
//! without gap locks and judge each row on its newest committed version
//! (profile rule `resumed_scan_skips_passed_rows`: InnoDB READ COMMITTED and
//! READ UNCOMMITTED).
//!
//! The rule (MySQL 8.0 Reference Manual 17.7.2.1 "Transaction Isolation
//! Levels", READ COMMITTED; MariaDB KB "InnoDB Lock Modes"): the statement
//! scans in index order and reads each row current; a row locked by another
//! transaction is judged on its latest committed version (UPDATE:
//! semi-consistent read) or waited for (DELETE, and UPDATE when that version
//! matches); after the wait the row's then-latest committed version is
//! evaluated; rows passed before the wait are not revisited; there are no gap
//! locks. So each row is judged exactly once, on the version that was its
//! latest committed one at some moment of the statement's run, i.e. in one of
//! the committed states between its submission and its completion (other
//! transactions only commit while it waits). The scan order (which index) is
//! not observable, so any state per row is allowed, with one more outcome: a
//! row whose indexed columns changed while the statement ran may have moved
//! behind the cursor and not be met at all.
//!
//! Locking reads (SELECT ... FOR UPDATE / FOR SHARE) follow the same rule
//! without the semi-consistent shortcut (they wait for every locked row they
//! meet): each row they return is a version that matched in one of those
//! states, and a row that matched in every state, unmoved, is returned.
//!
//! An outcome outside that set is a violation that names the row, the
//! versions it could have been judged on, and what the statement did.

use super::*;
use crate::engine::profile::ScanRule;
use crate::oracle::verdict::Claim;
use evaluate::{materialise, single_table, write_effects};
use std::collections::{BTreeMap, BTreeSet};

mod locking_read;
mod skips;

use locking_read::{judge_reads, reads_per_state, ReadJudgement};
use skips::{explain_skip, moved_rows};

/// How the rule reads in findings.
const RULE: &str = "InnoDB READ COMMITTED/UNCOMMITTED (MySQL 17.7.2.1, semi-consistent read): \
each row is judged once, on its latest committed version at the moment the scan meets it \
(after a lock wait: the version committed when the lock was granted); rows passed before \
a wait are not revisited";

/// One committed state the statement may have judged rows on.
struct State {
    /// Versions committed before this position are in it.
    before: Pos,
    /// The error the statement fails with on this state.
    error: Option<ErrorClass>,
    /// The statement's net writes when run on this state, by row.
    writes: BTreeMap<i64, RowWrite>,
    /// The rows it wrote there, as read back.
    written_rows: Vec<(i64, Vec<Value>)>,
}

/// Judges a resumed UPDATE/DELETE; on success extends the version history
/// with what it wrote.
pub(super) fn judge(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    actual: &Outcome,
) -> Result<(), Stop> {
    let Some(stmt) = ck.case.stmt(r).map(|c| c.stmt.clone()) else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    let table = match &stmt {
        Stmt::Update(u) => u.table.clone(),
        Stmt::Delete(d) => d.table.clone(),
        _ => return Err(undecided(Undecided::ResumedScan)),
    };
    if has_subquery(&stmt) {
        // The subquery reads a snapshot of its own, taken at a point of the
        // scan the client cannot see.
        return Err(undecided(Undecided::ResumedScanSubquery));
    }
    if let Some(e) = &actual.error {
        if matches!(e.class, ErrorClass::Deadlock | ErrorClass::LockWaitTimeout) {
            return Ok(());
        }
    } else if !actual.writes_complete {
        return Err(undecided(Undecided::ResumedScanWritesUnknown));
    }
    let start = ck.submitted_at.get(&r).copied().unwrap_or(pos);
    let states = states(ck, r, start, pos)?;
    if let Some(e) = &actual.error {
        // A statement error undoes the statement: allowed when one of the
        // states gives it (a mix of states may give others: undecided).
        return if states.iter().any(|s| s.error == Some(e.class)) {
            lock_database(ck, r, pos);
            Ok(())
        } else {
            Err(undecided(Undecided::ResumedScanError))
        };
    }
    if states.iter().any(|s| s.error.is_some()) {
        // A state the engine refuses as a whole may still have given some
        // rows their outcome: not modelled.
        return Err(undecided(Undecided::ResumedScanStateError));
    }
    let points: Vec<Pos> = states.iter().map(|s| s.before).collect();
    let moved = moved_rows(ck, r, &table, &points);
    let actual_writes: BTreeMap<i64, RowWrite> = sorted_writes(&actual.writes)
        .into_iter()
        .map(|w| (w.rid, w))
        .collect();
    // An UPDATE's semi-consistent read (where the rule has one) skips rows
    // another transaction's uncommitted INSERT holds.
    let is_update = matches!(stmt, Stmt::Update(_))
        && ck
            .rule_of(r.txn)
            .resumed_scan
            .is_some_and(|s| s.semi_consistent_update);
    let judged = judge_rows(ck, r, &table, &states, &actual_writes, &moved, is_update);
    if let Some((rid, did)) = judged.unexplained {
        return outside_the_rule(ck, r, &table, rid, did, &states, actual);
    }
    let atomic = states.iter().any(|s| {
        s.error.is_none()
            && s.writes
                .iter()
                .all(|(k, w)| actual_writes.get(k) == Some(w))
            && actual_writes.keys().all(|k| s.writes.contains_key(k))
    });
    let could = |ck: &Checker, rid: i64| could_have_judged(ck, r, &table, rid, &states);
    if let Some(stop) = by_rule_outcome(ck, r, &table, &judged.by_rule, atomic, "skipped", could) {
        if stop.is_err() {
            note_missed_writes(ck, r, &table, &judged.by_rule, states.last());
        }
        return stop;
    }
    let eval = Evaluation {
        outcome: actual.clone(),
        targets: actual_writes
            .keys()
            .map(|rid| (table.clone(), *rid, LockMode::ForUpdate))
            .collect(),
        written_rows: judged.written_rows,
        writes: actual_writes.into_values().collect(),
        view: json!({ "resumed_scan_states": points }),
    };
    apply(ck, r, access, pos, &eval, actual)
}

/// A row whose outcome no rule explains: its id and what the statement did to it.
type Unjudged<'w> = (i64, Option<&'w RowWrite>);

/// The rows of a resumed write, judged one by one.
struct JudgedRows<'w> {
    /// The rows it wrote, as read back in the last committed state.
    written_rows: Vec<(i64, Vec<Value>)>,
    /// The rows it skipped though the last state has it write them, with the
    /// rule that explains each.
    by_rule: BTreeMap<i64, ScanRule>,
    /// The first row no rule explains.
    unexplained: Option<Unjudged<'w>>,
}

/// Judges each row a resumed write wrote, or skipped though the last
/// committed state of its run has it write the row. A row it wrote or
/// deleted was judged on its version when its lock was granted: the
/// statement holds the row from then on, so no later commit changes it, and
/// that is the row's version in the last state. A row it skipped was judged
/// on some state of the run ([`explain_skip`]).
fn judge_rows<'w>(
    ck: &Checker,
    r: StmtRef,
    table: &str,
    states: &[State],
    actual_writes: &'w BTreeMap<i64, RowWrite>,
    moved: &BTreeSet<i64>,
    is_update: bool,
) -> JudgedRows<'w> {
    let mut out = JudgedRows {
        written_rows: Vec::new(),
        by_rule: BTreeMap::new(),
        unexplained: None,
    };
    let Some(last) = states.last() else {
        return out;
    };
    let rids: BTreeSet<i64> = actual_writes
        .keys()
        .chain(last.writes.keys())
        .copied()
        .collect();
    let points: Vec<Pos> = states.iter().map(|s| s.before).collect();
    for rid in rids {
        let did = actual_writes.get(&rid);
        match (did, last.writes.get(&rid)) {
            (Some(w), Some(expected)) if w == expected => {
                if let Some(row) = last.written_rows.iter().find(|(id, _)| *id == rid) {
                    out.written_rows.push(row.clone());
                }
            }
            (None, Some(_)) => {
                let acts = |i: usize| states[i].writes.contains_key(&rid);
                match explain_skip(ck, r, table, rid, &points, acts, is_update, moved) {
                    Some(rule) => {
                        out.by_rule.insert(rid, rule);
                    }
                    None => {
                        out.unexplained = Some((rid, None));
                        return out;
                    }
                }
            }
            (None, None) => {}
            (Some(_), _) => {
                out.unexplained = Some((rid, did));
                return out;
            }
        }
    }
    out
}

/// The outcome of a resumed statement whose skipped rows `by_rule` explains:
/// a violation if a rule the profile does not document explains one of them
/// (`Some(Err)`), a permitted finding recorded if the rows no single
/// committed state explains are documented (`None`, the walk goes on).
fn by_rule_outcome(
    ck: &mut Checker,
    r: StmtRef,
    table: &str,
    by_rule: &BTreeMap<i64, ScanRule>,
    atomic: bool,
    verb: &str,
    could: impl Fn(&Checker, i64) -> Vec<serde_json::Value>,
) -> Option<Result<(), Stop>> {
    let scan = ck.rule_of(r.txn).resumed_scan?;
    let undocumented = by_rule
        .iter()
        .filter(|(_, rule)| scan.source(**rule).is_none())
        .min_by_key(|(_, rule)| std::cmp::Reverse(**rule));
    let (rid, rule, is_violation) = match undocumented {
        Some((rid, rule)) => (*rid, *rule, true),
        None if atomic => return None,
        None => {
            let (rid, rule) = by_rule.iter().next()?;
            (*rid, *rule, false)
        }
    };
    let why = match rule {
        ScanRule::SkippedOnCommittedVersion => "on a committed version of its run that did not match",
        ScanRule::MissedInsertedRow => "though it matched in every committed state that holds it: another transaction inserted it, and the scan did not meet it",
        ScanRule::MissedMovedRow => "though it matched in every committed state: its indexed columns changed while the statement waited, and the scan did not meet it",
    };
    let summary = format!(
        "{} (after a lock wait) {verb} row {rid} of {table}, {why}",
        label(ck, r)
    );
    let details = json!({
        "rule": RULE,
        "scan_rule": rule,
        "table": table,
        "rid": rid,
        "rows_by_rule": by_rule,
        "could_have_judged": could(ck, rid),
    });
    let mut f = Finding::new(
        crate::oracle::OracleKind::View,
        rule.kind(),
        summary,
        json!({
            "stmt": format!("T{}#{}", r.txn, r.index),
            "sql": ck.prepared.get(&r).map(|p| p.plain.clone()).unwrap_or_default(),
            "isolation": ck.history.isolation,
            "details": details,
        }),
    )
    .about(vec![r]);
    f.claim = Some(Claim::ResumedScan { rule });
    if is_violation {
        if let Some(reason) = ck.undecided_instead.take() {
            return Some(Err(undecided(reason)));
        }
        ck.findings.push(f);
        Some(Err(Stop::Violation))
    } else {
        ck.findings.push(f);
        None
    }
}

/// Judges a resumed single-table locking read; on success records its locks.
pub(super) fn judge_locking_read(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
    actual: &Outcome,
) -> Result<(), Stop> {
    let Some(Stmt::Select(sel)) = ck.case.stmt(r).map(|c| c.stmt.clone()) else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    if !single_table(&sel) {
        return Err(undecided(Undecided::ResumedLockingRead));
    }
    if let Some(e) = &actual.error {
        return if matches!(e.class, ErrorClass::Deadlock | ErrorClass::LockWaitTimeout) {
            Ok(())
        } else {
            Err(undecided(Undecided::ResumedScanError))
        };
    }
    if !actual.reads_complete {
        return Err(undecided(Undecided::ResumedScanReadsUnknown));
    }
    let table = sel.from[0].table.clone();
    let start = ck.submitted_at.get(&r).copied().unwrap_or(pos);
    // Per state, the versions of the rows matching the WHERE (ORDER BY and
    // LIMIT apply to the mix of states the scan read, not to one state).
    let reads_per_state = reads_per_state(ck, r, &sel, start, pos)?;
    let moved = moved_rows(
        ck,
        r,
        &table,
        &reads_per_state.iter().map(|s| s.0).collect::<Vec<_>>(),
    );
    let read: BTreeMap<i64, WriteList> = actual
        .reads
        .iter()
        .filter(|v| v.table == table)
        .map(|v| (v.rid, v.wl.clone()))
        .collect();
    let could = |rid: i64| -> Vec<serde_json::Value> {
        reads_per_state
            .iter()
            .map(|(before, reads)| json!({ "committed_before": before, "returns_version": reads.get(&rid) }))
            .collect()
    };
    let limited = sel.limit.is_some();
    let by_rule = match judge_reads(ck, r, &table, &reads_per_state, &moved, &read, limited) {
        ReadJudgement::Unexplained(rid, summary) => {
            let stop = read_violation(ck, r, &table, rid, summary, could(rid), actual);
            if !limited {
                note_expected_rows(ck, r, &reads_per_state, actual);
            }
            return stop;
        }
        ReadJudgement::Skipped(by_rule) => by_rule,
    };
    let atomic = limited || reads_per_state.iter().any(|(_, reads)| *reads == read);
    let could_json = |_: &Checker, rid: i64| could(rid);
    if let Some(stop) = by_rule_outcome(ck, r, &table, &by_rule, atomic, "skipped", could_json) {
        if stop.is_err() && !limited {
            note_expected_rows(ck, r, &reads_per_state, actual);
        }
        return stop;
    }
    let eval = Evaluation {
        outcome: actual.clone(),
        targets: Vec::new(),
        writes: Vec::new(),
        written_rows: Vec::new(),
        view: json!({ "resumed_scan_states": reads_per_state.iter().map(|s| s.0).collect::<Vec<_>>() }),
    };
    apply(ck, r, access, pos, &eval, actual)
}

/// Adds to the violation just recorded about resumed write `r` what it
/// does to each row it skipped on the last committed state of its run
/// (`missed_writes`: the row's new values, or `null` for a deletion), for
/// `txfuzz export`.
fn note_missed_writes(
    ck: &mut Checker,
    r: StmtRef,
    table: &str,
    skipped: &BTreeMap<i64, ScanRule>,
    last: Option<&State>,
) {
    let Some(last) = last else {
        return;
    };
    let missed: Vec<serde_json::Value> = skipped
        .keys()
        .filter_map(|rid| {
            let w = last.writes.get(rid)?;
            let row = match w.after {
                None => serde_json::Value::Null,
                Some(_) => {
                    let (_, row) = last.written_rows.iter().find(|(id, _)| id == rid)?;
                    json!(row.iter().skip(2).collect::<Vec<_>>())
                }
            };
            Some(json!({ "table": table, "rid": rid, "row": row }))
        })
        .collect();
    if let Some(f) = ck
        .findings
        .last_mut()
        .filter(|f| f.involved.first() == Some(&r))
    {
        f.evidence["missed_writes"] = json!(missed);
    }
}

/// Adds to the violation just recorded about locking read `r` the rows it
/// returns on the last committed state of its run (`expected`: what it
/// returns once it holds every row's lock) beside the rows it returned
/// (`actual`), for `txfuzz export`. Nothing when that evaluation fails.
fn note_expected_rows(
    ck: &mut Checker,
    r: StmtRef,
    reads_per_state: &locking_read::StateReads,
    actual: &Outcome,
) {
    let Some((before, _)) = reads_per_state.last() else {
        return;
    };
    if materialise(ck, Writer::Txn(r.txn), Sight::CommittedBefore(*before)).is_err() {
        return;
    }
    let Some(p) = ck.prepared.get(&r).cloned() else {
        return;
    };
    let expected = ck.scratch.run(&p);
    if expected.error.is_some() {
        return;
    }
    if let Some(f) = ck
        .findings
        .last_mut()
        .filter(|f| f.involved.first() == Some(&r))
    {
        f.evidence["expected"] = json!({ "rows": expected.rows, "error": null });
        f.evidence["actual"] = json!({ "rows": actual.rows, "error": null });
    }
}

fn read_violation(
    ck: &mut Checker,
    r: StmtRef,
    table: &str,
    rid: i64,
    summary: String,
    could: Vec<serde_json::Value>,
    actual: &Outcome,
) -> Result<(), Stop> {
    let eval = Evaluation {
        outcome: Outcome::default(),
        targets: Vec::new(),
        writes: Vec::new(),
        written_rows: Vec::new(),
        view: json!({ "resumed_scan_states": could }),
    };
    violation(
        ck,
        r,
        "resumed-read",
        summary,
        json!({ "rule": RULE, "table": table, "rid": rid, "could_have_read": could }),
        &eval,
        actual,
    )
}

/// Where the committed states between `start` and `pos` begin: the state at
/// submission, then one after each commit of another transaction.
fn state_points(ck: &Checker, r: StmtRef, start: Pos, pos: Pos) -> Vec<Pos> {
    let mut points = vec![start];
    points.extend(
        ck.store
            .commit_points(Writer::Txn(r.txn), start, pos)
            .into_iter()
            .map(|c| c + 1),
    );
    points
}

/// The committed states between `start` and `pos`, the statement evaluated on
/// each in the scratch tables.
fn states(ck: &mut Checker, r: StmtRef, start: Pos, pos: Pos) -> Result<Vec<State>, Stop> {
    let Some(p) = ck.prepared.get(&r).cloned() else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    let Shape::Write { table, .. } = &p.shape else {
        return Err(undecided(Undecided::ResumedScan));
    };
    let own = Writer::Txn(r.txn);
    let mut out = Vec::new();
    for before in state_points(ck, r, start, pos) {
        materialise(ck, own, Sight::CommittedBefore(before))?;
        let rows_before = ck
            .scratch
            .read(table)
            .map_err(|_| undecided(Undecided::ScratchFailed))?;
        let outcome = ck.scratch.run(&p);
        if let Some(e) = &outcome.error {
            out.push(State {
                before,
                error: Some(e.class),
                writes: BTreeMap::new(),
                written_rows: Vec::new(),
            });
            continue;
        }
        let (writes, written_rows) = write_effects(ck, table, &rows_before)?;
        out.push(State {
            before,
            error: None,
            writes: writes.into_iter().map(|w| (w.rid, w)).collect(),
            written_rows,
        });
    }
    Ok(out)
}

/// Per committed state of the run, row `rid`'s version and what the
/// statement would write to it there.
fn could_have_judged(
    ck: &Checker,
    r: StmtRef,
    table: &str,
    rid: i64,
    states: &[State],
) -> Vec<serde_json::Value> {
    let own = Writer::Txn(r.txn);
    states
        .iter()
        .map(|s| {
            let version = ck
                .store
                .visible(table, rid, own, Sight::CommittedBefore(s.before))
                .filter(|v| !v.deleted);
            json!({
                "committed_before": s.before,
                "version": version.map(|v| &v.row),
                "statement_writes": s.writes.get(&rid),
            })
        })
        .collect()
}

fn outside_the_rule(
    ck: &mut Checker,
    r: StmtRef,
    table: &str,
    rid: i64,
    did: Option<&RowWrite>,
    states: &[State],
    actual: &Outcome,
) -> Result<(), Stop> {
    let could = could_have_judged(ck, r, table, rid, states);
    let on_an_earlier_state = did.is_some() && states.iter().any(|s| s.writes.get(&rid) == did);
    let what = match did {
        None => format!("skipped row {rid} of {table}, which it writes on every committed version it could have judged"),
        Some(_) if on_an_earlier_state => format!("wrote row {rid} of {table} on a committed version older than the one committed when it got the row's lock (a lost update: no later commit can change a row it holds)"),
        Some(w) if w.after.is_none() => format!("deleted row {rid} of {table}, which no committed version it could have judged lets it delete"),
        Some(_) => format!("wrote row {rid} of {table} in a way no committed version it could have judged gives"),
    };
    let summary = format!("{} (after a lock wait) {what}", label(ck, r));
    let eval = Evaluation {
        outcome: Outcome::default(),
        targets: Vec::new(),
        writes: states
            .last()
            .map(|s| s.writes.values().cloned().collect())
            .unwrap_or_default(),
        written_rows: Vec::new(),
        view: json!({ "resumed_scan_states": could }),
    };
    violation(
        ck,
        r,
        "resumed-write",
        summary,
        json!({ "rule": RULE, "table": table, "rid": rid, "actual_write": did, "could_have_judged": could }),
        &eval,
        actual,
    )
}
