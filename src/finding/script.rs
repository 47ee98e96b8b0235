//! The `.sql` script of a case: set-up, then each session's statements in the
//! order the engine actually ran them, labelled by session.

use crate::model::{EventKind, History, TestCase};
use crate::sql::{self, Dialect, Layout};
use std::fmt::Write;

pub fn render_script(
    d: Dialect,
    case: &TestCase,
    history: Option<&History>,
    header: &str,
) -> String {
    render_script_in(d, case, history, header, Layout::Instrumented)
}

/// [`render_script`] with the tables in `layout`: `Plain` (the case's own
/// columns) where the finding reproduces without the instrumentation (its
/// shadow run agrees), so the person reads the statements as they wrote them.
pub fn render_script_in(
    d: Dialect,
    case: &TestCase,
    history: Option<&History>,
    header: &str,
    layout: Layout,
) -> String {
    let mut s = String::new();
    for line in header.lines() {
        let _ = writeln!(s, "-- {line}");
    }
    match case.mixed_levels() {
        true => {
            let levels: Vec<String> = case
                .txns
                .iter()
                .map(|t| format!("T{} {}", t.id, case.level_of(t.id)))
                .collect();
            let _ = writeln!(s, "-- isolation: mixed ({})", levels.join(", "));
        }
        false => {
            let _ = writeln!(s, "-- isolation: {}", case.isolation);
        }
    }
    let note = match layout {
        Layout::Plain => "-- The plain tables: the finding reproduces without txfuzz's instrumentation (its shadow run agrees).\n",
        _ => "-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).\n",
    };
    let _ = writeln!(s, "{note}");
    let _ = writeln!(s, "-- set-up (any session)");
    for t in case.schema.tables.iter().rev() {
        let _ = writeln!(s, "{};", sql::drop_table(d, &t.name));
    }
    for t in &case.schema.tables {
        for stmt in sql::create_table_as(d, t, layout) {
            let _ = writeln!(s, "{stmt};");
        }
        if let Some(data) = case.data.iter().find(|x| x.table == t.name) {
            if let Some(ins) = sql::insert_rows_as(d, t, &data.rows, layout) {
                let _ = writeln!(s, "{ins};");
            }
        }
    }
    if case.checkpoint && d == Dialect::Sqlite {
        let _ = writeln!(s, "{};", sql::CHECKPOINT);
    }
    let setup = sql::session_setup(d, case.isolation);
    if !setup.is_empty() {
        let _ = writeln!(s, "\n-- in every session first");
        for st in setup {
            let _ = writeln!(s, "{st};");
        }
    }
    for t in &case.txns {
        let mut own = match t.isolation {
            Some(level) => sql::session_setup(d, level),
            None => Vec::new(),
        };
        own.extend(sql::session_settings(d, &t.settings));
        if !own.is_empty() {
            let _ = writeln!(s, "\n-- in session T{} first, instead", t.id);
            for st in own {
                let _ = writeln!(s, "{st};");
            }
        }
    }
    let _ = writeln!(s, "\n-- statements, one session per T<n>");
    match history {
        Some(h) => {
            for e in &h.events {
                let Some(cs) = case.stmt(e.stmt) else {
                    continue;
                };
                let text = sql::render_stmt(d, &cs.stmt);
                let who = format!("T{}", e.stmt.txn);
                match &e.kind {
                    EventKind::Submitted => {
                        let _ = writeln!(s, "/* {who} */ {text};{}", cursor_note(&cs.stmt));
                    }
                    EventKind::Blocked { .. } => {
                        let _ = writeln!(s, "--   {who} blocks (op {})", cs.op);
                    }
                    EventKind::Completed { ok: false, .. } => {
                        let err = h
                            .outcome(e.stmt)
                            .and_then(|o| o.error.as_ref())
                            .map(|e| format!("{} {}", e.code, e.message))
                            .unwrap_or_default();
                        let _ = writeln!(s, "--   {who} op {} failed: {err}", cs.op);
                    }
                    EventKind::Aborted => {
                        let _ = writeln!(s, "/* {who} */ ROLLBACK; -- aborted by the error above");
                    }
                    EventKind::TimedOut => {
                        let _ = writeln!(s, "--   {who} op {} timed out and was cancelled", cs.op);
                    }
                    EventKind::Completed { ok: true, .. } | EventKind::Skipped => {}
                }
            }
        }
        None => {
            for r in &case.submit_order {
                if let Some(cs) = case.stmt(*r) {
                    let _ = writeln!(
                        s,
                        "/* T{} */ {};{}",
                        r.txn,
                        sql::render_stmt(d, &cs.stmt),
                        cursor_note(&cs.stmt)
                    );
                }
            }
        }
    }
    s
}

/// After a SELECT that opens a cursor: what the client does with it (a
/// cursor is an API call, not SQL: step the prepared statement, keep it
/// open while the session runs its other statements).
fn cursor_note(stmt: &crate::model::Stmt) -> String {
    match stmt {
        crate::model::Stmt::Select(q) => q.cursor.as_ref().map_or(String::new(), |c| {
            format!(
                " -- opens cursor {}: prepare, step {} row(s), keep it open",
                c.name, c.rows
            )
        }),
        _ => String::new(),
    }
}
