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
use evaluate::{materialise, single_table, write_effects};
use std::collections::{BTreeMap, BTreeSet};

mod locking_read;

use locking_read::{misread_row, reads_per_state};

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
    let moved = moved_rows(
        ck,
        r,
        &table,
        &states.iter().map(|s| s.before).collect::<Vec<_>>(),
    );
    let actual_writes: BTreeMap<i64, RowWrite> = sorted_writes(&actual.writes)
        .into_iter()
        .map(|w| (w.rid, w))
        .collect();
    let written_rows = match judged_rows(&states, &actual_writes, &moved) {
        Ok(rows) => rows,
        Err((rid, did)) => return outside_the_rule(ck, r, &table, rid, did, &states, actual),
    };
    let eval = Evaluation {
        outcome: actual.clone(),
        targets: actual_writes
            .keys()
            .map(|rid| (table.clone(), *rid, LockMode::ForUpdate))
            .collect(),
        writes: actual_writes.into_values().collect(),
        written_rows,
        view: json!({ "resumed_scan_states": states.iter().map(|s| s.before).collect::<Vec<_>>() }),
    };
    apply(ck, r, access, pos, &eval, actual)
}

/// A row whose outcome no state gives: its id and what the statement did to it.
type Unjudged<'w> = (i64, Option<&'w RowWrite>);

/// The rows a resumed write wrote, as read back in a state that gives each
/// its outcome; `Err` with the first row whose outcome (`actual_writes`) no
/// state gives and no move behind the cursor explains.
fn judged_rows<'w>(
    states: &[State],
    actual_writes: &'w BTreeMap<i64, RowWrite>,
    moved: &BTreeSet<i64>,
) -> Result<Vec<(i64, Vec<Value>)>, Unjudged<'w>> {
    let rids: BTreeSet<i64> = actual_writes
        .keys()
        .chain(states.iter().flat_map(|s| s.writes.keys()))
        .copied()
        .collect();
    let mut written_rows = Vec::new();
    for rid in rids {
        let did = actual_writes.get(&rid);
        let judged_on = states.iter().find(|s| s.writes.get(&rid) == did);
        match (judged_on, did) {
            (Some(s), Some(_)) => {
                if let Some(row) = s.written_rows.iter().find(|(id, _)| *id == rid) {
                    written_rows.push(row.clone());
                }
            }
            (Some(_), None) => {}
            (None, None) if moved.contains(&rid) => {}
            (None, _) => return Err((rid, did)),
        }
    }
    Ok(written_rows)
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
    let who = label(ck, r);
    let limited = sel.limit.is_some();
    if let Some((rid, summary)) =
        misread_row(&who, &table, &reads_per_state, &moved, &read, limited)
    {
        return read_violation(ck, r, &table, rid, summary, could(rid), actual);
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

/// Rows of `table` whose indexed columns (any key or index: the scan may use
/// any of them) differ between the states, or that exist in some only: such
/// a row may have moved behind the scan's cursor.
fn moved_rows(ck: &Checker, r: StmtRef, table: &str, states: &[Pos]) -> BTreeSet<i64> {
    let Some(t) = ck.case.schema.table(table) else {
        return BTreeSet::new();
    };
    let mut indexed: BTreeSet<&str> = BTreeSet::new();
    for key in t.unique_keys() {
        indexed.extend(key.iter().map(String::as_str));
    }
    for i in &t.indexes {
        indexed.extend(i.columns.iter().map(String::as_str));
    }
    for fk in &t.foreign_keys {
        indexed.extend(fk.columns.iter().map(String::as_str));
    }
    let positions: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| indexed.contains(c.name.as_str()))
        .map(|(i, _)| i + 2)
        .collect();
    let own = Writer::Txn(r.txn);
    let mut out = BTreeSet::new();
    for rid in ck.store.row_ids(table) {
        let keys: BTreeSet<Option<Vec<Value>>> = states
            .iter()
            .map(|s| {
                ck.store
                    .visible(table, rid, own, Sight::CommittedBefore(*s))
                    .filter(|v| !v.deleted)
                    .map(|v| {
                        positions
                            .iter()
                            .map(|i| v.row.get(*i).cloned().unwrap_or(Value::Null))
                            .collect()
                    })
            })
            .collect();
        if keys.len() > 1 {
            out.insert(rid);
        }
    }
    out
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
    let own = Writer::Txn(r.txn);
    let could: Vec<serde_json::Value> = states
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
        .collect();
    let what = match did {
        None => format!("skipped row {rid} of {table}, which it writes on every committed version it could have judged"),
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
