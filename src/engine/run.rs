//! Running one instrumented statement on a session: its SQL, then the
//! capture query that reports what it wrote, interpreted by
//! [`crate::instrument`].

use super::Session;
use crate::instrument::{interpret_result, Capture, Prepared};
use crate::model::Outcome;

/// Runs `p` on `session` and interprets the returned rows.
pub fn run_prepared(session: &mut dyn Session, p: &Prepared) -> Outcome {
    if let Some(pre) = &p.pre {
        if let Err(e) = session.query(pre) {
            return Outcome::failed(e);
        }
    }
    let res = match session.query(&p.sql) {
        Err(e) => return Outcome::failed(e),
        Ok(res) => res,
    };
    let capture = match &p.capture {
        None => Capture::None,
        Some(sql) => session
            .query(sql)
            .map_or(Capture::Failed, |c| Capture::Rows(c.rows)),
    };
    interpret_result(p, res.rows, res.affected, capture)
}
