//! A PostgreSQL isolationtester spec: a `setup` block with the tables and
//! rows, a `session` per transaction with one `step` per statement, and the
//! one `permutation` of the observed schedule; isolationtester marks a step
//! that waits for a lock itself (`<waiting ...>`, `<... completed>`). The
//! expected output (`expected/NAME.out`) is what a correct engine prints.
//!
//! Run it with PostgreSQL's runner: put `NAME.spec` under `specs/` and
//! `NAME.out` under `expected/` of a directory and run
//! `pg_isolation_regress --inputdir=DIR --host=... --dbname=... NAME` (it
//! creates the database), or add both to `src/test/isolation/`.

use super::columns::{result_columns, value_text, Shape};
use super::Correction;
use crate::model::{ColType, EventKind, History, Stmt, StmtRef, TestCase, Value};
use crate::sql::{self, Dialect, Layout};
use std::collections::HashSet;
use std::fmt::Write;

const D: Dialect = Dialect::Postgres;

/// The spec and its expected output for `case` run as `history` records,
/// expecting the observed outputs except `fix`'s statement.
pub fn render(
    case: &TestCase,
    history: &History,
    fix: Option<&Correction>,
    header: &[String],
) -> Result<(String, String), String> {
    super::supported(D, case)?;
    let stmts = || case.txns.iter().flat_map(|t| &t.stmts);
    if stmts().any(|s| {
        matches!(&s.stmt, Stmt::Fetch(_) | Stmt::Close(_))
            || matches!(&s.stmt, Stmt::Select(q) if q.cursor.is_some())
    }) {
        return Err("an isolation export of a case with cursors is not built yet".into());
    }
    let mut spec = String::new();
    for line in header {
        let _ = writeln!(spec, "# {line}");
    }
    if let Some(fix) = fix {
        let _ = writeln!(spec, "# {}", super::judged_note(fix));
        let _ = writeln!(
            spec,
            "# The expected output has the correct rows: the test fails while the bug lives."
        );
    }
    let mut setup = Vec::new();
    for t in &case.schema.tables {
        setup.extend(sql::create_table_as(D, t, Layout::Plain));
        if let Some(data) = case.data.iter().find(|x| x.table == t.name) {
            setup.extend(sql::insert_rows_as(D, t, &data.rows, Layout::Plain));
        }
    }
    let _ = writeln!(spec, "\nsetup\n{{\n{}\n}}", block(&setup));
    let names: Vec<&str> = case
        .schema
        .tables
        .iter()
        .rev()
        .map(|t| t.name.as_str())
        .collect();
    let _ = writeln!(
        spec,
        "\nteardown\n{{\n  DROP TABLE {} CASCADE;\n}}",
        names.join(", ")
    );
    let waited: HashSet<StmtRef> = history
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Blocked { .. }))
        .map(|e| e.stmt)
        .collect();
    let aborted: HashSet<u32> = history
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Aborted)
        .map(|e| e.stmt.txn)
        .collect();
    let mut order = Vec::new();
    let mut out = String::new();
    let check_session = fix.is_some_and(|f| !f.invariants.is_empty() || !f.final_state.is_empty());
    let _ = writeln!(
        out,
        "Parsed test spec with {} sessions",
        case.txns.len() + usize::from(check_session)
    );
    // A correction about the end of the schedule (the final state, the
    // constraints), or about one statement that must run (a crash), says
    // nothing of the reads on the way, which the bug may have changed: each
    // read runs whole inside a count that prints `t`.
    let quiet = fix.is_some_and(Correction::leaves_outputs_unchecked);
    if quiet {
        let _ = writeln!(
            spec,
            "# The reads run inside `SELECT count(*) >= 0`: the finding is about the state the schedule leaves."
        );
    }
    let mut steps = String::new();
    for e in isolationtester_order(history) {
        let Some(cs) = case.stmt(e.stmt) else {
            continue;
        };
        let name = step(e.stmt);
        let text = format!("{};", step_sql(&cs.stmt, quiet));
        // The judged statement of a crash must run: its error is not expected.
        let outcome = match fix.is_some_and(|f| f.must_succeed && f.stmt == Some(e.stmt)) {
            true => None,
            false => history.outcome(e.stmt),
        };
        let rows = super::rows_of(e.stmt, outcome, fix);
        match &e.kind {
            EventKind::Submitted if waited.contains(&e.stmt) => {
                order.push(name.clone());
                let _ = writeln!(steps, "step {name}: {text} <waiting ...>");
            }
            EventKind::Submitted => {
                order.push(name.clone());
                let _ = writeln!(steps, "step {name}: {text}");
                print_outcome(&mut steps, case, &cs.stmt, outcome, rows, quiet);
            }
            EventKind::Completed { .. } if waited.contains(&e.stmt) => {
                let _ = writeln!(steps, "step {name}: <... completed>");
                print_outcome(&mut steps, case, &cs.stmt, outcome, rows, quiet);
            }
            EventKind::Aborted => {
                let name = format!("t{}_rollback", e.stmt.txn);
                order.push(name.clone());
                let _ = writeln!(steps, "step {name}: ROLLBACK;");
            }
            EventKind::TimedOut => {
                return Err(format!(
                    "T{}#{} timed out in the finding's run: the schedule has no end to replay",
                    e.stmt.txn, e.stmt.index
                ));
            }
            EventKind::Blocked { .. } | EventKind::Completed { .. } | EventKind::Skipped => {}
        }
    }
    for t in &case.txns {
        let _ = writeln!(spec, "\nsession t{}", t.id);
        let level = t.isolation.unwrap_or(case.isolation);
        let own: Vec<String> = sql::session_setup(D, level)
            .into_iter()
            .chain(sql::session_settings(D, &t.settings))
            .collect();
        let _ = writeln!(spec, "setup\n{{\n{}\n}}", block(&own));
        // Only the steps the permutation runs (isolationtester warns of
        // unused ones): statements after an abort never ran.
        for (i, s) in t.stmts.iter().enumerate() {
            let name = step(StmtRef {
                txn: t.id,
                index: i as u32,
            });
            if order.contains(&name) {
                let _ = writeln!(spec, "step {name} {{ {}; }}", step_sql(&s.stmt, quiet));
            }
        }
        if aborted.contains(&t.id) {
            let _ = writeln!(spec, "step t{}_rollback {{ ROLLBACK; }}", t.id);
        }
    }
    let checks = fix.map_or(&[][..], |f| f.invariants.as_slice());
    if check_session {
        let _ = writeln!(spec, "\nsession check");
        for (i, inv) in checks.iter().enumerate() {
            let name = format!("check_{i}");
            let _ = writeln!(
                spec,
                "# {}: a correct engine leaves no row that breaks it",
                inv.what
            );
            let _ = writeln!(spec, "step {name} {{ {}; }}", inv.sql);
            let _ = writeln!(
                steps,
                "step {name}: {};\nviolations\n----------\n         0\n(1 row)\n",
                inv.sql
            );
            order.push(name);
        }
        for (i, (table, rows)) in fix
            .map_or(&[][..], |f| f.final_state.as_slice())
            .iter()
            .enumerate()
        {
            let Some(q) = super::read_table(case, table) else {
                continue;
            };
            let name = format!("final_{i}");
            let text = format!(
                "{} ORDER BY {}",
                sql::render_select(D, &q),
                byte_order(case, table)
            );
            let _ = writeln!(spec, "# the final state of {table} a correct engine leaves");
            let _ = writeln!(spec, "step {name} {{ {text}; }}");
            let _ = writeln!(steps, "step {name}: {text};");
            let mut sorted = rows.clone();
            sorted.sort_by(|a, b| compare_rows(a, b));
            print_rows(&mut steps, case, &q, &sorted);
            order.push(name);
        }
    }
    let _ = writeln!(spec, "\npermutation {}", order.join(" "));
    let _ = writeln!(out, "\nstarting permutation: {}", order.join(" "));
    out.push_str(&steps);
    Ok((spec, out))
}

/// The history's events in the order isolationtester prints them. An
/// error inside a transaction block ends the transaction at once and
/// releases its locks (PostgreSQL aborts it; the ROLLBACK that follows only
/// leaves the failed block), so a statement waiting for that transaction
/// completes after the failing step, where isolationtester's check after
/// each step reports it, even where txfuzz saw it only after its ROLLBACK.
fn isolationtester_order(history: &History) -> Vec<&crate::model::Event> {
    let blocker = |s: StmtRef| {
        history.events.iter().find_map(|e| match e.kind {
            EventKind::Blocked { blocker } if e.stmt == s => Some(blocker),
            _ => None,
        })
    };
    let mut out: Vec<&crate::model::Event> = Vec::with_capacity(history.events.len());
    let mut i = 0;
    while i < history.events.len() {
        let e = &history.events[i];
        i += 1;
        if e.kind != EventKind::Aborted {
            out.push(e);
            continue;
        }
        // Completions right after the abort, before the next step is sent,
        // of statements that waited for the aborted transaction (and the
        // aborted transaction's skipped statements, which print nothing).
        let mut after = Vec::new();
        while let Some(next) = history.events.get(i) {
            if next.kind == EventKind::Skipped {
                after.push(next);
                i += 1;
                continue;
            }
            let released = matches!(next.kind, EventKind::Completed { .. })
                && blocker(next.stmt).is_some_and(|b| b.is_none_or(|b| b == e.stmt.txn));
            if !released {
                break;
            }
            after.push(next);
            i += 1;
        }
        out.extend(after);
        out.push(e);
    }
    out
}

fn step(r: StmtRef) -> String {
    format!("t{}_{}", r.txn, r.index)
}

/// Statements as the body of a `setup` block, one per line.
fn block(stmts: &[String]) -> String {
    stmts
        .iter()
        .map(|s| format!("  {s};"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What isolationtester prints after a step: its error, or a SELECT's rows
/// as a table (columns `|`-separated, numbers right-aligned, a dashed rule,
/// the row count, a blank line).
fn print_outcome(
    out: &mut String,
    case: &TestCase,
    stmt: &Stmt,
    outcome: Option<&crate::model::Outcome>,
    rows: &[Vec<Value>],
    quiet: bool,
) {
    if let Some(e) = outcome.and_then(|o| o.error.as_ref()) {
        let _ = writeln!(out, "ERROR:  {}", e.message);
        return;
    }
    match stmt {
        Stmt::Select(_) if quiet => {
            let _ = writeln!(out, "ran\n---\nt  \n(1 row)\n");
        }
        Stmt::Select(q) => print_rows(out, case, q, rows),
        _ => {}
    }
}

/// A statement as a step's SQL; with `quiet`, a SELECT runs whole inside
/// a count that prints the same whatever rows it returns.
fn step_sql(stmt: &Stmt, quiet: bool) -> String {
    match stmt {
        Stmt::Select(q) if quiet => format!(
            "SELECT count(*) >= 0 AS ran FROM ({}) AS q",
            sql::render_select(D, q)
        ),
        _ => sql::render_stmt(D, stmt),
    }
}

/// `ORDER BY` every column of `table`, text in byte order (`COLLATE "C"`),
/// so the rows print in the order [`compare_rows`] sorts them.
fn byte_order(case: &TestCase, table: &str) -> String {
    let Some(t) = case.schema.table(table) else {
        return String::new();
    };
    t.columns
        .iter()
        .map(|c| match c.ty {
            ColType::Varchar(_) | ColType::Text => format!("{} COLLATE \"C\"", c.name),
            _ => c.name.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// PostgreSQL's ascending order of rows sorted on every column: numbers by
/// value, text by bytes (`COLLATE "C"`), NULLs last.
fn compare_rows(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let number = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Real(r) => r.parse::<f64>().ok(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Greater,
            (_, Value::Null) => Ordering::Less,
            (Value::Text(p), Value::Text(q)) => p.as_bytes().cmp(q.as_bytes()),
            _ => match (number(x), number(y)) {
                (Some(p), Some(q)) => p.partial_cmp(&q).unwrap_or(Ordering::Equal),
                _ => x.cmp(y),
            },
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A SELECT's rows as isolationtester prints them.
fn print_rows(out: &mut String, case: &TestCase, q: &crate::model::Select, rows: &[Vec<Value>]) {
    let cols = result_columns(D, &case.schema, q);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .zip(&cols)
                .map(|(v, c)| value_text(D, v, c.shape))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.name.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |texts: Vec<&str>| -> String {
        texts
            .iter()
            .zip(&cols)
            .zip(&widths)
            .map(|((t, c), w)| match c.shape {
                Shape::Number(_) => format!("{t:>w$}"),
                Shape::Text | Shape::Bool => format!("{t:<w$}"),
            })
            .collect::<Vec<_>>()
            .join("|")
    };
    let _ = writeln!(
        out,
        "{}",
        line(cols.iter().map(|c| c.name.as_str()).collect())
    );
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let _ = writeln!(out, "{}", rule.join("+"));
    for r in &cells {
        let _ = writeln!(out, "{}", line(r.iter().map(String::as_str).collect()));
    }
    let n = rows.len();
    let _ = writeln!(out, "({n} {})\n", if n == 1 { "row" } else { "rows" });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Event, Isolation};

    fn ev(txn: u32, index: u32, kind: EventKind) -> Event {
        Event {
            stmt: StmtRef { txn, index },
            kind,
            at_us: 0,
        }
    }

    fn history(events: Vec<Event>) -> History {
        History {
            isolation: Isolation::Serializable,
            events,
            outcomes: Vec::new(),
            txns: Vec::new(),
            final_state: Default::default(),
            final_state_error: None,
        }
    }

    const DONE: EventKind = EventKind::Completed {
        ok: true,
        resumed: true,
    };

    /// T1#2 waits for T2; T2#5 fails, which ends T2 (its ROLLBACK only
    /// leaves the failed block): isolationtester reports T1#2 done before
    /// `t2_rollback`. A waiter blocked by another transaction stays after.
    #[test]
    fn a_waiter_released_by_an_aborting_error_completes_before_the_rollback() {
        let h = history(vec![
            ev(1, 2, EventKind::Submitted),
            ev(1, 2, EventKind::Blocked { blocker: Some(2) }),
            ev(3, 1, EventKind::Submitted),
            ev(3, 1, EventKind::Blocked { blocker: Some(4) }),
            ev(2, 5, EventKind::Submitted),
            ev(
                2,
                5,
                EventKind::Completed {
                    ok: false,
                    resumed: false,
                },
            ),
            ev(2, 5, EventKind::Aborted),
            ev(2, 6, EventKind::Skipped),
            ev(1, 2, DONE),
            ev(3, 1, DONE),
        ]);
        let order: Vec<(u32, u32, bool)> = isolationtester_order(&h)
            .iter()
            .map(|e| (e.stmt.txn, e.stmt.index, e.kind == EventKind::Aborted))
            .collect();
        assert_eq!(
            &order[6..],
            [(2, 6, false), (1, 2, false), (2, 5, true), (3, 1, false)]
        );
    }
}
