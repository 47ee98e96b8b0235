//! A PostgreSQL session: one dedicated connection per transaction of a case,
//! registered with the engine's lock-wait monitor by its backend pid; the
//! connection goes back to the engine's pool, reset, when the session ends
//! ([`crate::engine::pool`]).

use super::conn::PgConn;
use crate::engine::pool::{hand_back, Pool};
use crate::engine::server::Registry;
use crate::engine::{Cancel, Canceller, CursorRows, QueryResult, Session, WaitSignal};
use crate::instrument::Prepared;
use crate::model::{Outcome, StmtError};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_postgres::{CancelToken, NoTls};

/// How long a cancel request (a fresh connection to the server) may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(3);

pub struct PgSession {
    /// `None` only while the session is dropped.
    conn: Option<PgConn>,
    pool: Weak<Pool<PgConn>>,
    /// How long the reset that hands the connection back may take.
    reset_deadline: Duration,
    /// A transaction may be open: the last statement that started or ended
    /// one started it (or failed to end it).
    in_transaction: bool,
    /// Open SQL cursors, with whether a FETCH reached the end.
    cursors: Vec<(String, bool)>,
    pid: u64,
    registry: Arc<Registry>,
    signal: Arc<WaitSignal>,
    canceller: Arc<PgCanceller>,
}

impl PgSession {
    /// Wraps a set-up connection whose backend pid is `pid`; registers it;
    /// `pool` takes the connection back when the session ends.
    pub fn new(
        conn: PgConn,
        (pool, reset_deadline): (Weak<Pool<PgConn>>, Duration),
        pid: u64,
        registry: Arc<Registry>,
        signal: Arc<WaitSignal>,
    ) -> Result<PgSession, StmtError> {
        let token = conn.client()?.cancel_token();
        registry.register(pid, signal.clone());
        let canceller = Arc::new(PgCanceller {
            token,
            signal: signal.clone(),
        });
        Ok(PgSession {
            conn: Some(conn),
            pool,
            reset_deadline,
            in_transaction: false,
            cursors: Vec::new(),
            pid,
            registry,
            signal,
            canceller,
        })
    }

    pub fn pid(&self) -> u64 {
        self.pid
    }
}

impl Drop for PgSession {
    fn drop(&mut self) {
        self.registry.unregister(self.pid);
        if let Some(mut conn) = self.conn.take() {
            conn.set_deadline(Some(self.reset_deadline));
            let open = self.in_transaction;
            hand_back(&self.pool, conn, |c| c.reset(open));
        }
    }
}

/// Whether a transaction is open after `sql` ran (`ok`: it succeeded), given
/// whether one was open before. COMMIT and ROLLBACK end it even when they fail
/// (a failed COMMIT rolls back); `ROLLBACK TO` does not.
fn open_after(sql: &str, ok: bool, before: bool) -> bool {
    let words: Vec<String> = sql
        .split_whitespace()
        .take(2)
        .map(str::to_ascii_uppercase)
        .collect();
    match (
        words.first().map(String::as_str),
        words.get(1).map(String::as_str),
    ) {
        (Some("BEGIN" | "START"), _) => ok || before,
        (Some("ROLLBACK" | "ABORT"), Some("TO")) => before,
        (Some("COMMIT" | "END" | "ROLLBACK" | "ABORT"), _) => false,
        _ => before,
    }
}

impl Session for PgSession {
    fn query(&mut self, sql: &str) -> Result<QueryResult, StmtError> {
        self.signal.clear_cancel();
        // Only running sessions are probed: a tick always belongs to this statement.
        self.registry.set_running(self.pid, true);
        let result = match &self.conn {
            Some(conn) => conn.simple(sql),
            None => Err(StmtError {
                class: crate::model::ErrorClass::ConnectionLost,
                code: "closed".into(),
                message: "the session has ended".into(),
            }),
        };
        self.registry.set_running(self.pid, false);
        self.in_transaction = open_after(sql, result.is_ok(), self.in_transaction);
        result
    }

    fn run(&mut self, p: &Prepared) -> Outcome {
        crate::engine::run_prepared(self, p)
    }

    /// `DECLARE name NO SCROLL CURSOR FOR sql` (a cursor of the
    /// transaction), then its first FETCH.
    fn open_cursor(&mut self, name: &str, sql: &str, rows: u32) -> Result<CursorRows, StmtError> {
        self.query(&format!("DECLARE {name} NO SCROLL CURSOR FOR {sql}"))?;
        self.cursors.retain(|(n, _)| n != name);
        self.cursors.push((name.to_string(), false));
        self.fetch_cursor(name, rows)
    }

    /// `FETCH FORWARD rows FROM name`: fewer rows than asked is the end.
    fn fetch_cursor(&mut self, name: &str, rows: u32) -> Result<CursorRows, StmtError> {
        let Some(at) = self.cursors.iter().position(|(n, _)| n == name) else {
            return Err(crate::engine::no_such_cursor(name));
        };
        if self.cursors[at].1 {
            return Ok(CursorRows {
                rows: Vec::new(),
                done: true,
            });
        }
        let got = self.query(&format!("FETCH FORWARD {rows} FROM {name}"))?;
        let done = got.rows.len() < rows as usize;
        self.cursors[at].1 = done;
        Ok(CursorRows {
            rows: got.rows,
            done,
        })
    }

    fn close_cursor(&mut self, name: &str) -> Result<(), StmtError> {
        let Some(at) = self.cursors.iter().position(|(n, _)| n == name) else {
            return Err(crate::engine::no_such_cursor(name));
        };
        self.cursors.remove(at);
        self.query(&format!("CLOSE {name}")).map(|_| ())
    }

    fn canceller(&self) -> Arc<dyn Canceller> {
        self.canceller.clone()
    }
}

/// Sends the protocol's CancelRequest for the session's backend (over a new
/// connection, as PostgreSQL requires). The cancelled statement then fails with
/// 57014 on its own connection, which the executor waits for.
pub struct PgCanceller {
    token: CancelToken,
    signal: Arc<WaitSignal>,
}

impl Canceller for PgCanceller {
    fn cancel(&self) -> Cancel {
        self.signal.request_cancel();
        let token = self.token.clone();
        // A plain thread with its own runtime: `cancel` may be called from any
        // thread, including one inside a runtime (where `block_on` would panic).
        let sent = std::thread::Builder::new()
            .name("txfuzz-pg-cancel".into())
            .spawn(move || -> Result<(), String> {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?;
                match rt.block_on(async {
                    tokio::time::timeout(CANCEL_TIMEOUT, token.cancel_query(NoTls)).await
                }) {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("timed out".into()),
                }
            })
            .map_err(|e| e.to_string())
            .and_then(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("cancel thread panicked".into()))
            });
        match sent {
            Ok(()) => Cancel::Sent,
            Err(e) => {
                // The postmaster took no cancel request: the server is gone
                // or frozen (a stuck backend alone still takes one).
                tracing::debug!("postgres cancel request failed: {e}");
                Cancel::Unreachable
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::open_after;

    #[test]
    fn the_session_knows_whether_a_transaction_may_be_open() {
        assert!(open_after(
            "BEGIN ISOLATION LEVEL SERIALIZABLE",
            true,
            false
        ));
        assert!(open_after("START TRANSACTION", true, false));
        assert!(!open_after("BEGIN", false, false));
        assert!(open_after("UPDATE t0 SET c0 = 1", false, true));
        assert!(open_after("ROLLBACK TO SAVEPOINT sp1", true, true));
        assert!(!open_after("COMMIT", false, true));
        assert!(!open_after("rollback", true, true));
        assert!(!open_after("SELECT 1", true, false));
    }
}
