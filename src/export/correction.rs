//! What a correct engine does where a finding says the engine did not
//! (`Correction`): the judged statement's rows, the final state of some
//! tables, constraint checks after the schedule, or a statement that must
//! run. Each comes from the finding's typed evidence and its history.

use super::invariants;
use crate::finding::FindingRecord;
use crate::model::{StmtRef, Value};

/// A table's name and rows.
pub type TableRows = (String, Vec<Vec<Value>>);

/// What a correct engine does where the finding says the engine did not:
/// the judged statement's rows (`view:result`), the final state of some
/// tables (`*:final-state`: the commit order's serial state for `wss`, the
/// version history's for `view`, the refined replay's for `sdg`), or checks
/// after the schedule that a correct engine passes with no row breaking a
/// declared constraint (`integrity` findings about the final state).
#[derive(Clone, Debug, PartialEq)]
pub struct Correction {
    /// The judged statement, whose rows are `rows`.
    pub stmt: Option<StmtRef>,
    /// The judged statement must run without an error, whatever it returns
    /// (a crash: an internal error, a panic); `rows` is not compared.
    pub must_succeed: bool,
    /// The judged statement must wait for this transaction's lock
    /// (`view:missed-block`): the test checks that it waits, and the
    /// schedule ends there.
    pub must_wait_for: Option<u32>,
    /// The judged statement must fail with an error of this class
    /// (`view:missed-abort`); the schedule ends there.
    pub must_fail: Option<crate::model::ErrorClass>,
    pub rows: Vec<Vec<Value>>,
    /// The rows the engine returned, for the test's comment.
    pub observed: Vec<Vec<Value>>,
    /// Checks run once every transaction has ended.
    pub invariants: Vec<invariants::Invariant>,
    /// Tables whose final state the finding says is wrong, with the rows
    /// (the case's columns) a correct engine leaves.
    pub final_state: Vec<TableRows>,
    /// Every output the test expects is the judged run's (a shadow-run
    /// difference): all are checked, with the final state.
    pub judged_outputs: bool,
    /// Why: the finding's summary.
    pub why: String,
}

impl Correction {
    /// A correction without judged rows, for the finding `why`.
    fn new(why: &str) -> Correction {
        Correction {
            stmt: None,
            must_succeed: false,
            must_wait_for: None,
            must_fail: None,
            rows: Vec::new(),
            observed: Vec::new(),
            invariants: Vec::new(),
            final_state: Vec::new(),
            judged_outputs: false,
            why: why.to_string(),
        }
    }

    /// A correction about the end of the schedule (the final state, the
    /// constraints), or about one statement that must run (a crash), says
    /// nothing of the other outputs, which the bug may have changed: the
    /// test does not check them.
    pub fn leaves_outputs_unchecked(&self) -> bool {
        !self.judged_outputs && (self.stmt.is_none() || self.must_succeed)
    }
}

/// The correction a finding gives (constraint checks written in `d`), or
/// why it gives none that one test can assert.
pub fn correction(rec: &FindingRecord, d: crate::sql::Dialect) -> Result<Correction, String> {
    let f = &rec.finding;
    let unsupported = || {
        format!(
            "an export of a {}:{} finding is not built yet: only findings whose correct \
             output is one result (view:result, a resumed locking read), one final state \
             (final-state, a resumed write's skipped rows), a committed state that keeps \
             its constraints (integrity on the final state), a statement that runs \
             (crash:internal-error, view:spurious-abort), waits (view:missed-block) or fails \
             (view:missed-abort), one read of a serial replay (wss read-result), or \
             a shadow-run difference in an output (fidelity) are exported",
            f.oracle, f.kind
        )
    };
    // An internal error (a panic) of one statement, or a write refused
    // though nobody else could write: a correct engine runs it.
    let must_run = (f.oracle == "crash" && f.kind == "internal-error")
        || (f.oracle == "view" && f.kind == "spurious-abort");
    if must_run {
        let stmt = *f.involved.first().ok_or_else(unsupported)?;
        return Ok(Correction {
            must_succeed: true,
            stmt: Some(stmt),
            ..Correction::new(&f.summary)
        });
    }
    if f.oracle == "integrity" {
        let ev: crate::oracle::integrity::Evidence = serde_json::from_value(f.evidence.clone())
            .map_err(|e| format!("the finding's evidence: {e}"))?;
        if ev.state != crate::oracle::integrity::StateRef::Final {
            return Err(unsupported());
        }
        let checks = invariants::invariants(d, &rec.case.schema, &ev.table, &f.kind);
        if checks.is_empty() {
            return Err(unsupported());
        }
        return Ok(Correction {
            invariants: checks,
            ..Correction::new(&f.summary)
        });
    }
    if f.oracle == "fidelity" {
        return fidelity(rec);
    }
    if let Some(missed) = f.evidence.get("missed_writes") {
        return Ok(Correction {
            final_state: repaired_state(rec, missed)?,
            ..Correction::new(&f.summary)
        });
    }
    if f.kind.ends_with("final-state") {
        return Ok(Correction {
            final_state: final_state(rec)?,
            ..Correction::new(&f.summary)
        });
    }
    // `wss`: a read whose rows differ from the serial replay in commit
    // order, the order a locking engine serialises in (a statement that
    // waited follows the holder): the replay's rows.
    if f.oracle == "wss" && f.kind.ends_with("read-result") {
        return serial_read(rec).ok_or_else(unsupported);
    }
    // A statement that must wait for a lock, or fail: that alone.
    if f.oracle == "view" && (f.kind == "missed-block" || f.kind == "missed-abort") {
        let stmt = *f.involved.first().ok_or_else(unsupported)?;
        let detail = |key: &str| f.evidence.pointer(&format!("/details/{key}")).cloned();
        let mut fix = Correction {
            stmt: Some(stmt),
            ..Correction::new(&f.summary)
        };
        if f.kind == "missed-block" {
            let holder = detail("holder").and_then(|h| h.as_u64());
            fix.must_wait_for = Some(holder.ok_or_else(unsupported)? as u32);
        } else {
            let class = detail("expected_error").ok_or_else(unsupported)?;
            fix.must_fail = Some(
                serde_json::from_value(class)
                    .map_err(|e| format!("the finding's expected error: {e}"))?,
            );
        }
        return Ok(fix);
    }
    // A view finding whose evidence has the rows a correct engine returns:
    // `result`, and a resumed locking read (`view::statement::resumed`).
    let has_expected_rows = f.evidence.pointer("/expected/rows").is_some();
    if f.oracle != "view" || !(f.kind == "result" || has_expected_rows) {
        return Err(unsupported());
    }
    let stmt = *f.involved.first().ok_or_else(unsupported)?;
    if !matches!(
        rec.case.stmt(stmt).map(|c| &c.stmt),
        Some(crate::model::Stmt::Select(_))
    ) {
        return Err(unsupported());
    }
    let rows_at = |side: &str| -> Result<Vec<Vec<Value>>, String> {
        let v = f
            .evidence
            .get(side)
            .and_then(|o| o.get("rows"))
            .cloned()
            .unwrap_or(serde_json::Value::Array(Vec::new()));
        serde_json::from_value(v).map_err(|e| format!("the finding's {side} rows: {e}"))
    };
    let error_at = |side: &str| {
        f.evidence
            .get(side)
            .and_then(|o| o.get("error"))
            .is_some_and(|e| !e.is_null())
    };
    if error_at("expected") || error_at("actual") {
        return Err(
            "an export of a result finding with an error on either side is not built yet".into(),
        );
    }
    Ok(Correction {
        stmt: Some(stmt),
        rows: rows_at("expected")?,
        observed: rows_at("actual")?,
        ..Correction::new(&f.summary)
    })
}

/// A shadow-run difference in a statement's error, rows or affected count
/// or in the final state: the plain statements must do what they did in
/// the judged run, the run every oracle checked (its outputs, and its
/// final state of every table). Such a test fails while the plain run
/// differs: an engine bug where the judged run is the correct one (a turso
/// statement that the instrumented run backs out or fails as SQLite does,
/// docs/bugs.md), a txfuzz bug otherwise. A difference in which statements
/// waited or which transaction a deadlock rolled back is no one output.
fn fidelity(rec: &FindingRecord) -> Result<Correction, String> {
    let f = &rec.finding;
    if !matches!(
        f.kind.as_str(),
        "error" | "result" | "affected" | "final-state" | "txn-end"
    ) {
        return Err(format!(
            "an export of a fidelity:{} finding is not built: which statements wait, or \
             which transaction a deadlock rolls back, is no one output a test can expect",
            f.kind
        ));
    }
    if rec.history.final_state_error.is_some() {
        return Err("the judged run's final state was not read".into());
    }
    let final_state = rec
        .history
        .final_state
        .iter()
        .map(|(t, rows)| {
            let rows = rows.iter().map(|r| r.iter().skip(2).cloned().collect());
            (t.clone(), rows.collect())
        })
        .collect();
    Ok(Correction {
        final_state,
        judged_outputs: true,
        ..Correction::new(&format!(
            "{}; a correct engine does what the judged run did (every oracle checked it)",
            f.summary
        ))
    })
}

/// One read of a `wss` read-result finding, as its evidence gives it.
#[derive(serde::Deserialize)]
struct SerialRead {
    stmt: StmtRef,
    actual: Vec<Vec<Value>>,
    serial: Vec<Vec<Value>>,
    actual_error: Option<serde_json::Value>,
    serial_error: Option<serde_json::Value>,
}

/// The correction of a `wss` read-result finding about one SELECT without
/// an error on either side: the serial replay's rows.
fn serial_read(rec: &FindingRecord) -> Option<Correction> {
    let f = &rec.finding;
    let reads: Vec<SerialRead> = serde_json::from_value(f.evidence.get("reads")?.clone()).ok()?;
    let [read] = reads.as_slice() else {
        return None;
    };
    let select = matches!(
        rec.case.stmt(read.stmt).map(|c| &c.stmt),
        Some(crate::model::Stmt::Select(_))
    );
    if !select || read.actual_error.is_some() || read.serial_error.is_some() {
        return None;
    }
    Some(Correction {
        stmt: Some(read.stmt),
        rows: read.serial.clone(),
        observed: read.actual.clone(),
        ..Correction::new(&format!(
            "{}; a correct engine returns the rows of the serial run in commit order",
            f.summary
        ))
    })
}

/// A row a resumed write skipped (`view::statement::resumed`): its table,
/// row id, and its values after the write (`None`: deleted).
#[derive(serde::Deserialize)]
struct MissedWrite {
    table: String,
    rid: i64,
    row: Option<Vec<Value>>,
}

/// The final state with the writes a resumed write skipped applied: what a
/// correct engine leaves when the statement's transaction committed and no
/// later statement wrote those rows (else no one state is known).
fn repaired_state(
    rec: &FindingRecord,
    missed: &serde_json::Value,
) -> Result<Vec<TableRows>, String> {
    let missed: Vec<MissedWrite> = serde_json::from_value(missed.clone())
        .map_err(|e| format!("the finding's missed writes: {e}"))?;
    let stmt = *rec
        .finding
        .involved
        .first()
        .ok_or("the finding names no statement")?;
    // An autocommit statement that succeeded committed itself.
    let autocommit = rec.case.txn(stmt.txn).is_some_and(|t| t.autocommit)
        && rec.history.outcome(stmt).is_some_and(|o| o.error.is_none());
    let committed =
        autocommit || rec.history.txn_end(stmt.txn) == Some(crate::model::TxnEnd::Committed);
    let at = rec.history.outcomes.iter().position(|o| o.stmt == stmt);
    let later_write = |table: &str, rid: i64| {
        at.is_none_or(|i| {
            rec.history.outcomes[i + 1..].iter().any(|o| {
                o.outcome
                    .writes
                    .iter()
                    .any(|w| w.table == table && w.rid == rid)
            })
        })
    };
    if missed.is_empty() || !committed || missed.iter().any(|m| later_write(&m.table, m.rid)) {
        return Err(
            "the final state of a resumed write whose skipped rows were written \
                    again later, or whose transaction did not commit, is not one known state"
                .into(),
        );
    }
    let mut tables: Vec<TableRows> = Vec::new();
    for m in &missed {
        if !tables.iter().any(|(t, _)| *t == m.table) {
            let rows = rec
                .history
                .final_state
                .get(&m.table)
                .cloned()
                .unwrap_or_default();
            tables.push((m.table.clone(), rows));
        }
        let (_, rows) = tables
            .iter_mut()
            .find(|(t, _)| *t == m.table)
            .expect("just added");
        rows.retain(|r| r.first() != Some(&Value::Int(m.rid)));
        if let Some(values) = &m.row {
            let mut row = vec![Value::Int(m.rid), Value::Null];
            row.extend(values.iter().cloned());
            rows.push(row);
        }
    }
    Ok(tables
        .into_iter()
        .map(|(t, rows)| {
            (
                t,
                rows.into_iter()
                    .map(|r| r.into_iter().skip(2).collect())
                    .collect(),
            )
        })
        .collect())
}

/// The final state a correct engine leaves, per table the finding names:
/// the observed one with the finding's differences undone (`tables` of
/// `wss`/`sdg`, `diff` of `view`: rows `only_in_actual` out,
/// `only_in_expected` in), without the hidden `rid`/`wl` columns.
fn final_state(rec: &FindingRecord) -> Result<Vec<TableRows>, String> {
    let ev = &rec.finding.evidence;
    let diffs = ev
        .get("tables")
        .or_else(|| ev.get("diff"))
        .and_then(|d| d.as_object())
        .ok_or("the finding names no table differences")?;
    let rows = |v: Option<&serde_json::Value>| -> Result<Vec<Vec<Value>>, String> {
        serde_json::from_value(v.cloned().unwrap_or(serde_json::Value::Array(Vec::new())))
            .map_err(|e| format!("the finding's table differences: {e}"))
    };
    let mut out = Vec::new();
    for (table, diff) in diffs {
        let mut state = rec
            .history
            .final_state
            .get(table)
            .cloned()
            .unwrap_or_default();
        for gone in rows(diff.get("only_in_actual"))? {
            if let Some(i) = state.iter().position(|r| *r == gone) {
                state.remove(i);
            }
        }
        state.extend(rows(diff.get("only_in_expected"))?);
        let plain: Vec<Vec<Value>> = state
            .into_iter()
            .map(|r| r.into_iter().skip(2).collect())
            .collect();
        out.push((table.clone(), plain));
    }
    Ok(out)
}

/// The sentences that name what is judged, and what a correct engine does.
pub fn judged_note(fix: &Correction) -> String {
    match fix.stmt {
        Some(r) if fix.must_wait_for.is_some() || fix.must_fail.is_some() => {
            let correct = match (fix.must_wait_for, fix.must_fail) {
                (Some(h), _) => format!("makes it wait for T{h}'s lock"),
                (_, Some(class)) => format!("fails it ({class:?})"),
                _ => unreachable!(),
            };
            format!(
                "T{}#{} is judged: {}. A correct engine {correct}; the schedule ends there.",
                r.txn, r.index, fix.why
            )
        }
        Some(r) if fix.must_succeed => format!(
            "T{}#{} is judged: {}. A correct engine runs it without an error; the other \
             statements' outputs are not compared.",
            r.txn, r.index, fix.why
        ),
        Some(r) => format!(
            "T{}#{} is judged: {}. Observed rows: {}. A correct engine returns: {}.",
            r.txn,
            r.index,
            fix.why,
            rows_note(&fix.observed),
            rows_note(&fix.rows)
        ),
        None if !fix.final_state.is_empty() => {
            let tables: Vec<&str> = fix.final_state.iter().map(|(t, _)| t.as_str()).collect();
            format!(
                "{}. The reads at the end show the final state of {} that a correct engine \
                 leaves.",
                fix.why,
                tables.join(", ")
            )
        }
        None => {
            let what: Vec<&str> = fix.invariants.iter().map(|i| i.what.as_str()).collect();
            format!(
                "{}. Once every transaction has ended, a correct engine leaves no row that \
                 breaks {} (the checks at the end count them).",
                fix.why,
                what.join("; ")
            )
        }
    }
}

fn rows_note(rows: &[Vec<Value>]) -> String {
    if rows.is_empty() {
        return "none".into();
    }
    let shown: Vec<String> = rows
        .iter()
        .map(|r| {
            let vals: Vec<String> = r
                .iter()
                .map(|v| crate::sql::render_value(crate::sql::Dialect::Postgres, v))
                .collect();
            format!("({})", vals.join(", "))
        })
        .collect();
    shown.join(" ")
}
