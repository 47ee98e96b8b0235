//! One blocking MariaDB connection: a mysql_async [`Conn`] driven by its own
//! current-thread tokio runtime, so that it can live on any OS thread (sessions,
//! the lock-wait monitor, the engine's admin connection). Text protocol only.

use super::errors::{classify, lost};
use crate::engine::QueryResult;
use crate::model::{StmtError, Value};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, Row};
use std::time::Duration;
use tokio::runtime::Runtime;

/// How long connecting may take before the server counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a polite disconnect may take.
const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a reset may take on a link without a deadline.
const RESET_TIMEOUT: Duration = Duration::from_secs(1);

pub struct Link {
    rt: Runtime,
    conn: Option<Conn>,
    /// How long one round trip may take (`None`: unbounded, for sessions
    /// whose statements may wait on locks; the executor bounds those).
    deadline: Option<Duration>,
    /// Why the connection was dropped: later round trips fail with the same
    /// class and code (a missed deadline stays a hang, not a lost connection).
    lost_by: Option<StmtError>,
}

impl Link {
    /// Connects with `opts`; the error is a short reason without credentials.
    pub fn connect(opts: &Opts) -> Result<Link, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let conn = rt.block_on(async {
            match tokio::time::timeout(CONNECT_TIMEOUT, Conn::new(opts.clone())).await {
                Ok(Ok(c)) => Ok(c),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("{} {CONNECT_TIMEOUT:?}", crate::engine::NO_ANSWER)),
            }
        })?;
        Ok(Link {
            rt,
            conn: Some(conn),
            deadline: None,
            lost_by: None,
        })
    }

    /// Bounds every later round trip: one that misses the deadline fails
    /// with [`crate::engine::DEADLINE_CODE`] and the connection is dropped.
    pub fn set_deadline(&mut self, d: Option<Duration>) {
        self.deadline = d;
    }

    /// The server's id of this connection (`CONNECTION_ID()`).
    pub fn id(&self) -> u64 {
        self.conn.as_ref().map_or(0, |c| u64::from(c.id()))
    }

    /// Runs one SQL text (possibly several statements: every result set is
    /// consumed, the first one with columns is returned). `affected` is the
    /// number of rows returned, or the server's affected-rows count when the
    /// text returned no result set.
    pub fn query(&mut self, sql: &str) -> Result<QueryResult, StmtError> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(self.lost_earlier());
        };
        let result = match self.deadline {
            None => self.rt.block_on(run_text(conn, sql)),
            Some(d) => self
                .rt
                .block_on(async { tokio::time::timeout(d, run_text(conn, sql)).await })
                .unwrap_or_else(|_| Err(crate::engine::deadline_error(d))),
        };
        if let Err(e) = &result {
            self.note_failure(e);
        }
        result
    }

    /// Runs `steps` as one text, in one round trip: the result of each
    /// statement that ran, in order. The server stops at the first error,
    /// which ends the list.
    pub fn query_each(&mut self, steps: &[&str]) -> Vec<Result<QueryResult, StmtError>> {
        let Some(conn) = self.conn.as_mut() else {
            return vec![Err(self.lost_earlier())];
        };
        let sql = steps.join("; ");
        let results = match self.deadline {
            None => self.rt.block_on(run_each(conn, &sql, steps.len())),
            Some(d) => self
                .rt
                .block_on(async {
                    tokio::time::timeout(d, run_each(conn, &sql, steps.len())).await
                })
                .unwrap_or_else(|_| vec![Err(crate::engine::deadline_error(d))]),
        };
        if let Some(Err(e)) = results.last() {
            self.note_failure(e);
        }
        results
    }

    /// Runs every step, as the steps one call each would, in as few round
    /// trips as the errors allow: one, and one more after each step the
    /// server refused (the steps after it are sent again). One result per
    /// step; after a lost connection the remaining steps fail with it.
    pub fn query_all(&mut self, steps: &[&str]) -> Vec<Result<QueryResult, StmtError>> {
        let mut out = Vec::with_capacity(steps.len());
        while out.len() < steps.len() {
            let mut answers = self.query_each(&steps[out.len()..]);
            let lost_by = match answers.last() {
                None => Some(lost("no answer")),
                Some(Err(e)) if e.class == crate::model::ErrorClass::ConnectionLost => {
                    answers.pop().and_then(Result::err)
                }
                Some(_) => None,
            };
            out.extend(answers);
            if let Some(e) = lost_by {
                while out.len() < steps.len() {
                    out.push(Err(e.clone()));
                }
            }
        }
        out
    }

    fn lost_earlier(&self) -> StmtError {
        match &self.lost_by {
            Some(e) => StmtError {
                message: format!("the connection was lost earlier: {}", e.message),
                ..e.clone()
            },
            None => lost("the connection was lost earlier"),
        }
    }

    /// A lost connection's stream is unusable: later calls fail fast.
    fn note_failure(&mut self, e: &StmtError) {
        if e.class == crate::model::ErrorClass::ConnectionLost && e.code != "client" {
            if let Some(c) = self.conn.take() {
                drop(c);
            }
            self.lost_by = Some(e.clone());
        }
    }

    /// Clears what a session changed, for the next one (`COM_RESET_CONNECTION`:
    /// its transaction rolled back, session and user variables back to their
    /// defaults, temporary tables dropped; the current database stays), within
    /// the link's deadline. False when the connection is unusable or the server
    /// cannot reset one. The connection's `init` statements do not run again:
    /// the next session's set-up repeats [`super::connect::SQL_MODE`].
    pub fn reset(&mut self) -> bool {
        if self.lost_by.is_some() {
            return false;
        }
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        let d = self.deadline.unwrap_or(RESET_TIMEOUT);
        matches!(
            self.rt
                .block_on(async { tokio::time::timeout(d, conn.reset()).await }),
            Ok(Ok(true))
        )
    }

    /// Closes the connection without the polite goodbye, which waits for a
    /// server that may be frozen: the socket is just closed.
    pub fn abandon(mut self) {
        // Dropped outside the runtime, the driver sends nothing.
        drop(self.conn.take());
    }

    /// Runs a (multi-statement) text, discarding results.
    pub fn batch(&mut self, sql: &str) -> Result<(), StmtError> {
        self.query(sql).map(|_| ())
    }
}

async fn run_text(conn: &mut Conn, sql: &str) -> Result<QueryResult, StmtError> {
    let mut res = conn.query_iter(sql).await.map_err(|e| classify(&e))?;
    let mut out: Option<QueryResult> = None;
    let mut affected = 0;
    loop {
        let has_columns = !res.columns_ref().is_empty();
        if !has_columns {
            // Read before collecting: moving to the next result set replaces it.
            affected = res.affected_rows();
        }
        let rows: Vec<Row> = res.collect().await.map_err(|e| classify(&e))?;
        if has_columns && out.is_none() {
            let rows: Vec<Vec<Value>> = rows.into_iter().map(convert_row).collect();
            out = Some(QueryResult {
                affected: rows.len() as u64,
                rows,
            });
        }
        if res.is_empty() {
            // A server error in a later statement of the text is held as the
            // next (pending) result: consuming it reports it.
            res.drop_result().await.map_err(|e| classify(&e))?;
            break;
        }
    }
    Ok(out.unwrap_or(QueryResult {
        rows: Vec::new(),
        affected,
    }))
}

/// Each statement's result of a multi-statement text of `statements`
/// statements, up to the first error. mysql_async's `is_empty` is already
/// true while the last result is still to be read when that result has no
/// columns (an INSERT's affected-rows count), so the count of statements,
/// not `is_empty` alone, says whether one is left.
async fn run_each(
    conn: &mut Conn,
    sql: &str,
    statements: usize,
) -> Vec<Result<QueryResult, StmtError>> {
    let mut out = Vec::new();
    let mut res = match conn.query_iter(sql).await {
        Ok(res) => res,
        Err(e) => return vec![Err(classify(&e))],
    };
    loop {
        let has_columns = !res.columns_ref().is_empty();
        // Read before collecting: moving to the next result set replaces it.
        let affected = res.affected_rows();
        match res.collect::<Row>().await {
            Err(e) => {
                out.push(Err(classify(&e)));
                return out;
            }
            Ok(rows) if has_columns => {
                let rows: Vec<Vec<Value>> = rows.into_iter().map(convert_row).collect();
                out.push(Ok(QueryResult {
                    affected: rows.len() as u64,
                    rows,
                }));
            }
            Ok(_) => out.push(Ok(QueryResult {
                rows: Vec::new(),
                affected,
            })),
        }
        if res.is_empty() && out.len() >= statements {
            // A later statement's error is held as the next (pending) result.
            if let Err(e) = res.drop_result().await {
                out.push(Err(classify(&e)));
            }
            return out;
        }
    }
}

fn convert_row(row: Row) -> Vec<Value> {
    row.unwrap().into_iter().map(convert_value).collect()
}

/// Text-protocol values: NULL or bytes, normalised by [`Value::from_db_text`].
fn convert_value(v: mysql_async::Value) -> Value {
    use mysql_async::Value as V;
    match v {
        V::NULL => Value::Null,
        V::Bytes(b) => Value::from_db_text(&String::from_utf8_lossy(&b)),
        V::Int(i) => Value::Int(i),
        V::UInt(u) => Value::from_db_text(&u.to_string()),
        V::Float(f) => Value::from_db_text(&f.to_string()),
        V::Double(f) => Value::from_db_text(&f.to_string()),
        other => Value::Text(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let _ = self.rt.block_on(async {
                tokio::time::timeout(DISCONNECT_TIMEOUT, conn.disconnect()).await
            });
        }
    }
}
