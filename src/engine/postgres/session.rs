//! A PostgreSQL session: one dedicated connection per transaction of a case,
//! registered with the engine's lock-wait monitor by its backend pid.

use super::conn::PgConn;
use crate::engine::server::Registry;
use crate::engine::{Cancel, Canceller, CursorRows, QueryResult, Session, WaitSignal};
use crate::instrument::Prepared;
use crate::model::{Outcome, StmtError};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{CancelToken, NoTls};

/// How long a cancel request (a fresh connection to the server) may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(3);

pub struct PgSession {
    conn: PgConn,
    /// Open SQL cursors, with whether a FETCH reached the end.
    cursors: Vec<(String, bool)>,
    pid: u64,
    registry: Arc<Registry>,
    signal: Arc<WaitSignal>,
    canceller: Arc<PgCanceller>,
}

impl PgSession {
    /// Wraps a set-up connection whose backend pid is `pid`; registers it.
    pub fn new(
        conn: PgConn,
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
            conn,
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
    }
}

impl Session for PgSession {
    fn query(&mut self, sql: &str) -> Result<QueryResult, StmtError> {
        self.signal.clear_cancel();
        // Only running sessions are probed: a tick always belongs to this statement.
        self.registry.set_running(self.pid, true);
        let result = self.conn.simple(sql);
        self.registry.set_running(self.pid, false);
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
