//! A Python program on the engine's own module: `sqlite3` for SQLite,
//! `turso` (PyPI's pyturso, the engine's version) for turso. One connection
//! per session, in autocommit mode with the case's BEGIN; the statements in
//! the order the finding's run submitted them, each followed by a check of
//! what a correct engine returns (rows as a bag, or the error); then the
//! constraint checks. It prints `ok` and exits 0, or prints `FAILED: ...`
//! and exits 1 at the first difference.
//!
//! Run it with `python3 NAME.py` (turso: `pip install pyturso==VERSION`
//! first). A schedule in which a statement waited for a lock is not
//! exported yet (a program would need a thread per waiting session).

use super::Correction;
use crate::model::{EngineInfo, EventKind, History, Stmt, TestCase, Value};
use crate::sql::{self, Dialect, Layout};
use std::fmt::Write;

const D: Dialect = Dialect::Sqlite;

/// The engine a script runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Sqlite,
    Turso { mvcc: bool },
}

impl Target {
    /// The target of a finding's engine.
    pub fn of(engine: &EngineInfo) -> Result<Target, String> {
        match engine.name.as_str() {
            "sqlite" => Ok(Target::Sqlite),
            "turso" => Ok(Target::Turso {
                mvcc: engine
                    .settings
                    .get("journal_mode")
                    .is_some_and(|m| m == "mvcc"),
            }),
            other => Err(format!(
                "script exports SQLite and turso findings; this one is from {other}"
            )),
        }
    }
}

/// A Python literal for `v` (SQLite has no booleans: 1 and 0).
fn py(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Int(i) => i.to_string(),
        Value::Real(r) => r.clone(),
        Value::Text(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Bool(b) => u8::from(*b).to_string(),
    }
}

fn py_rows(rows: &[Vec<Value>]) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|r| {
            let vals: Vec<String> = r.iter().map(py).collect();
            format!(
                "({}{})",
                vals.join(", "),
                if vals.len() == 1 { "," } else { "" }
            )
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

fn py_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

const PRELUDE: &str = r#"
def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def norm(v):
    # An integral REAL compares as the integer (txfuzz's values do).
    return int(v) if isinstance(v, float) and v.is_integer() else v


def bag(rows):
    return sorted((tuple(norm(v) for v in r) for r in rows), key=repr)


def check_rows(label, got, want):
    if bag(got) != bag(want):
        fail(f"{label} returned {bag(got)}; a correct engine returns {bag(want)}")


def engine_error(e):
    # pyturso 0.8.3 raises some engine errors outside DB-API's db.Error
    # (turso.BusySnapshot: "database snapshot is stale").
    return isinstance(e, db.Error) or type(e).__module__ == "turso"


def run(label, con, sql, rows=None, error=False):
    # error=None: the outcome is not checked (either is fine).
    cur = con.cursor()
    try:
        cur.execute(sql)
        got = cur.fetchall()
    except Exception as e:
        if not engine_error(e):
            raise
        if error or error is None:
            return
        fail(f"{label} failed: {e}")
    if error is None:
        return
    if error:
        # error="...": why a correct engine fails it.
        why = error if isinstance(error, str) else "it failed in the finding's run"
        fail(f"{label} succeeded; {why}")
    if rows is not None:
        check_rows(label, got, rows)


def rollback(con):
    try:
        con.cursor().execute("ROLLBACK")
    except Exception as e:
        if not engine_error(e):
            raise


# Open cursors by session and name: each step checks the rows it returns.
cursors = {}


def open_cursor(label, con, name, sql, n, rows):
    cur = con.cursor()
    cur.execute(sql)
    cursors[(id(con), name)] = cur
    got = cur.fetchmany(n)
    if rows is not None:
        check_rows(label, got, rows)


def fetch(label, con, name, n, rows):
    got = cursors[(id(con), name)].fetchmany(n)
    if rows is not None:
        check_rows(label, got, rows)


def close(con, name):
    cursors.pop((id(con), name)).close()
"#;

/// The program for `case` run as `history` records, expecting the
/// observed outputs except what `fix` corrects.
pub fn render(
    target: Target,
    case: &TestCase,
    history: &History,
    fix: Option<&Correction>,
    header: &[String],
) -> Result<String, String> {
    super::supported(D, case)?;
    if history
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Blocked { .. }))
    {
        return Err(
            "a script export of a schedule where a statement waited for a lock is not built yet"
                .into(),
        );
    }
    let mut s = String::from("#!/usr/bin/env python3\n");
    for line in header {
        let _ = writeln!(s, "# {line}");
    }
    if let Some(fix) = fix {
        let _ = writeln!(s, "# {}", super::judged_note(fix));
        let _ = writeln!(
            s,
            "# This program expects what a correct engine does: it fails while the bug lives."
        );
    }
    let (module, journal) = match target {
        Target::Sqlite => ("import sqlite3 as db", "PRAGMA journal_mode=WAL"),
        Target::Turso { mvcc: true } => ("import turso as db", "PRAGMA journal_mode = 'mvcc'"),
        Target::Turso { mvcc: false } => ("import turso as db", "PRAGMA journal_mode=WAL"),
    };
    let _ = writeln!(
        s,
        "import os\nimport sys\nimport tempfile\n\n{module}\n{PRELUDE}"
    );
    let _ = writeln!(s, "path = os.path.join(tempfile.mkdtemp(), \"case.db\")");
    let _ = writeln!(s, "setup = db.connect(path, isolation_level=None)");
    let mut setup = vec![journal.to_string()];
    for t in &case.schema.tables {
        setup.extend(sql::create_table_as(D, t, Layout::Plain));
        if let Some(data) = case.data.iter().find(|x| x.table == t.name) {
            setup.extend(sql::insert_rows_as(D, t, &data.rows, Layout::Plain));
        }
    }
    if case.checkpoint {
        setup.push(sql::CHECKPOINT.to_string());
    }
    for st in setup {
        let _ = writeln!(s, "setup.cursor().execute({}).fetchall()", py_str(&st));
    }
    for t in &case.txns {
        let _ = writeln!(s, "T{} = db.connect(path, isolation_level=None)", t.id);
        let pragmas = std::iter::once("PRAGMA foreign_keys=ON".to_string())
            .chain(sql::session_settings(D, &t.settings));
        for p in pragmas {
            let _ = writeln!(s, "T{}.cursor().execute({}).fetchall()", t.id, py_str(&p));
        }
    }
    let quiet = fix.is_some_and(Correction::leaves_outputs_unchecked);
    if quiet {
        let _ = writeln!(
            s,
            "# The other outputs are not checked: the finding is not about them."
        );
    }
    let _ = writeln!(s);
    let mut judged_cursor: std::collections::HashMap<(u32, String), Vec<Vec<Value>>> =
        Default::default();
    for e in &history.events {
        let Some(cs) = case.stmt(e.stmt) else {
            continue;
        };
        let label = py_str(&format!("T{}#{} (op {})", e.stmt.txn, e.stmt.index, cs.op));
        let con = format!("T{}", e.stmt.txn);
        let outcome = history.outcome(e.stmt);
        let rows = match quiet {
            true => "None".to_string(),
            false => py_rows(super::rows_of(e.stmt, outcome, fix)),
        };
        let failed = outcome.and_then(|o| o.error.as_ref()).is_some();
        match (&e.kind, &cs.stmt) {
            (EventKind::Submitted, Stmt::Select(q)) if q.cursor.is_some() && !failed => {
                let c = q.cursor.as_ref().expect("checked");
                // The open's outcome holds every step's rows
                // (`model::cursor::settle`); its own step returned the first.
                let all = super::rows_of(e.stmt, outcome, fix);
                let n = all.len().min(c.rows as usize);
                let first = match quiet {
                    true => "None".to_string(),
                    false => py_rows(&all[..n]),
                };
                // A judged cursor: its later steps expect the next of the
                // correct rows, not the observed ones.
                if fix.is_some_and(|f| f.stmt == Some(e.stmt)) {
                    judged_cursor.insert((e.stmt.txn, c.name.clone()), all[n..].to_vec());
                }
                let _ = writeln!(
                    s,
                    "open_cursor({label}, {con}, {}, {}, {}, {first})",
                    py_str(&c.name),
                    py_str(&sql::render_stmt(D, &cs.stmt)),
                    c.rows
                );
            }
            (EventKind::Submitted, Stmt::Fetch(f)) if !failed => {
                let rows = match judged_cursor.get_mut(&(e.stmt.txn, f.cursor.clone())) {
                    Some(rest) => {
                        let n = rest.len().min(f.rows as usize);
                        py_rows(&rest.drain(..n).collect::<Vec<_>>())
                    }
                    None => rows,
                };
                let _ = writeln!(
                    s,
                    "fetch({label}, {con}, {}, {}, {rows})",
                    py_str(&f.cursor),
                    f.rows
                );
            }
            (EventKind::Submitted, Stmt::Close(name)) if !failed => {
                let _ = writeln!(s, "close({con}, {})", py_str(name));
            }
            (EventKind::Submitted, stmt) => {
                let text = py_str(&sql::render_stmt(D, stmt));
                let must_succeed = fix.is_some_and(|f| f.must_succeed && f.stmt == Some(e.stmt));
                let must_fail = fix
                    .filter(|f| f.stmt == Some(e.stmt))
                    .and_then(|f| f.must_fail);
                if let Some(class) = must_fail {
                    // The judged statement must fail; the schedule ends there.
                    let class = serde_json::to_value(class).unwrap_or_default();
                    let class = class.as_str().unwrap_or("an error");
                    let why = py_str(&format!("a correct engine fails it ({class})"));
                    let _ = writeln!(s, "run({label}, {con}, {text}, error={why})");
                    let _ = writeln!(s, "print(\"ok\")");
                    return Ok(s);
                }
                let check = match (failed, stmt) {
                    _ if must_succeed => String::new(),
                    _ if quiet => ", error=None".to_string(),
                    (true, _) => ", error=True".to_string(),
                    (false, Stmt::Select(_)) => format!(", rows={rows}"),
                    (false, _) => String::new(),
                };
                let _ = writeln!(s, "run({label}, {con}, {text}{check})");
            }
            (EventKind::Aborted, _) => {
                let _ = writeln!(s, "rollback({con})");
            }
            (EventKind::TimedOut, _) => {
                return Err(format!(
                    "T{}#{} timed out in the finding's run: the schedule has no end to replay",
                    e.stmt.txn, e.stmt.index
                ));
            }
            _ => {}
        }
    }
    for inv in fix.map_or(&[][..], |f| f.invariants.as_slice()) {
        let _ = writeln!(
            s,
            "check_rows({}, setup.cursor().execute({}).fetchall(), [(0,)])",
            py_str(&format!("{}: rows that break it", inv.what)),
            py_str(&inv.sql)
        );
    }
    for (table, rows) in fix.map_or(&[][..], |f| f.final_state.as_slice()) {
        let Some(q) = super::read_table(case, table) else {
            continue;
        };
        let _ = writeln!(
            s,
            "check_rows({}, setup.cursor().execute({}).fetchall(), {})",
            py_str(&format!("the final state of {table}")),
            py_str(&sql::render_select(D, &q)),
            py_rows(rows)
        );
    }
    let _ = writeln!(s, "print(\"ok\")");
    Ok(s)
}
