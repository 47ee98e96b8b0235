//! Running one instrumented statement on a session: its SQL, then the
//! capture query that reports what it wrote, interpreted by
//! [`crate::instrument`].

use super::Session;
use crate::instrument::{interpret_result, Capture, CursorStep, Prepared};
use crate::model::Outcome;

/// Runs `p` on `session` and interprets the returned rows.
pub fn run_prepared(session: &mut dyn Session, p: &Prepared) -> Outcome {
    if let Some(step) = &p.cursor {
        return run_cursor_step(session, p, step);
    }
    let steps: Vec<&str> = [p.pre.as_deref(), Some(p.sql.as_str()), p.capture.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let mut results = session.query_each(&steps).into_iter();
    let mut next = || results.next().unwrap_or_else(|| Err(missing_result()));
    if p.pre.is_some() {
        if let Err(e) = next() {
            return Outcome::failed(e);
        }
    }
    let res = match next() {
        Err(e) => return Outcome::failed(e),
        Ok(res) => res,
    };
    let capture = match &p.capture {
        None => Capture::None,
        Some(_) => next().map_or(Capture::Failed, |c| Capture::Rows(c.rows)),
    };
    interpret_result(p, res.rows, res.affected, capture)
}

/// A step the session ran but returned no result for (never expected).
fn missing_result() -> crate::model::StmtError {
    crate::model::StmtError {
        class: crate::model::ErrorClass::Other,
        code: "client".into(),
        message: "the session returned no result for a statement it ran".into(),
    }
}

/// A step of an open cursor: its rows read like its SELECT's.
fn run_cursor_step(session: &mut dyn Session, p: &Prepared, step: &CursorStep) -> Outcome {
    let stepped = match step {
        CursorStep::Open { name, rows } => session.open_cursor(name, &p.sql, *rows),
        CursorStep::Fetch { name, rows } => session.fetch_cursor(name, *rows),
        CursorStep::Close { name } => {
            return match session.close_cursor(name) {
                Ok(()) => Outcome::default(),
                Err(e) => Outcome::failed(e),
            }
        }
    };
    match stepped {
        Err(e) => Outcome::failed(e),
        Ok(c) => {
            let n = c.rows.len() as u64;
            let mut out = interpret_result(p, c.rows, n, Capture::None);
            out.exhausted = c.done;
            out
        }
    }
}
