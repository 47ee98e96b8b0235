//! One PostgreSQL connection driven synchronously: a current-thread tokio
//! runtime owned by the connection, with the connection task spawned on it.
//! `block_on` drives that task while a request is in flight, so each connection
//! is self-contained and `Send` (sessions move between threads freely and never
//! share a runtime).

use super::errors::classify;
use crate::engine::QueryResult;
use crate::model::{StmtError, Value};
use std::time::Duration;
use tokio::runtime::{Builder, Runtime};
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Config, NoTls, SimpleQueryMessage};

/// How long a TCP connect and the startup handshake may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

pub struct PgConn {
    client: Option<Client>,
    /// How long one round trip may take (`None`: unbounded, for sessions
    /// whose statements may wait on locks; the executor bounds those).
    deadline: Option<Duration>,
    /// Set when a round trip missed its deadline: the connection has a
    /// request in flight that may never be answered, so it is not used again.
    stuck: std::sync::atomic::AtomicBool,
    task: Option<JoinHandle<()>>,
    // Dropped last (fields drop in declaration order; `Drop` takes the others).
    rt: Runtime,
}

/// `cfg` with `application_name` set to `txfuzz-<role>` (admin, monitor,
/// session), so an operator can tell txfuzz's connections apart.
pub fn named(cfg: &Config, role: &str) -> Config {
    let mut c = cfg.clone();
    c.application_name(format!("txfuzz-{role}"));
    c
}

/// Replaces the password (if any) in `text` with `***`.
pub fn scrub(cfg: &Config, text: String) -> String {
    match cfg.get_password().and_then(|p| std::str::from_utf8(p).ok()) {
        Some(p) if !p.is_empty() => text.replace(p, "***"),
        _ => text,
    }
}

/// A short reason for a failed connect (never holding the password).
fn connect_reason(cfg: &Config, e: &tokio_postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                let t = inner.to_string();
                if !s.contains(&t) {
                    s = format!("{s}: {t}");
                }
                src = inner.source();
            }
            s
        }
    };
    scrub(cfg, text)
}

impl PgConn {
    /// Connects (at most [`CONNECT_TIMEOUT`]); the error is a short reason.
    pub fn connect(cfg: &Config) -> Result<PgConn, String> {
        let rt = Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
        let connected = rt.block_on(async {
            tokio::time::timeout(CONNECT_TIMEOUT + Duration::from_secs(1), cfg.connect(NoTls)).await
        });
        let (client, connection) = match connected {
            Err(_) => return Err(format!("{} {CONNECT_TIMEOUT:?}", crate::engine::NO_ANSWER)),
            Ok(Err(e)) => return Err(connect_reason(cfg, &e)),
            Ok(Ok(pair)) => pair,
        };
        let task = rt.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("postgres connection ended: {e}");
            }
        });
        Ok(PgConn {
            client: Some(client),
            deadline: None,
            stuck: Default::default(),
            task: Some(task),
            rt,
        })
    }

    /// Bounds every later round trip ([`crate::engine::deadline_error`]).
    pub fn set_deadline(&mut self, d: Option<Duration>) {
        self.deadline = d;
    }

    pub fn client(&self) -> Result<&Client, StmtError> {
        if self.stuck.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(StmtError {
                class: crate::model::ErrorClass::ConnectionLost,
                code: crate::engine::DEADLINE_CODE.into(),
                message: "an earlier request on this connection was never answered".into(),
            });
        }
        self.client.as_ref().ok_or_else(|| StmtError {
            class: crate::model::ErrorClass::ConnectionLost,
            code: "closed".into(),
            message: "connection closed".into(),
        })
    }

    /// Runs a request within the deadline, if any.
    fn bounded<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StmtError> {
        let Some(d) = self.deadline else {
            return self.rt.block_on(fut).map_err(|e| classify(&e));
        };
        match self
            .rt
            .block_on(async { tokio::time::timeout(d, fut).await })
        {
            Ok(r) => r.map_err(|e| classify(&e)),
            Err(_) => {
                self.stuck.store(true, std::sync::atomic::Ordering::SeqCst);
                Err(crate::engine::deadline_error(d))
            }
        }
    }

    pub fn is_closed(&self) -> bool {
        self.client.as_ref().is_none_or(|c| c.is_closed())
    }

    /// Runs `fut` to completion on this connection's runtime.
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        self.rt.block_on(fut)
    }

    /// Runs SQL text over the simple (text) protocol: rows of every statement,
    /// each non-NULL value through [`Value::from_db_text`]; `affected` is the
    /// number of rows returned, or the last command's count when none were.
    pub fn simple(&self, sql: &str) -> Result<QueryResult, StmtError> {
        let client = self.client()?;
        let msgs = self.bounded(client.simple_query(sql))?;
        let mut rows = Vec::new();
        let mut count = 0;
        for m in msgs {
            match m {
                SimpleQueryMessage::Row(r) => rows.push(text_row(&r)),
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        let affected = if rows.is_empty() {
            count
        } else {
            rows.len() as u64
        };
        Ok(QueryResult { rows, affected })
    }

    /// Clears what a session changed, for the next one: its transaction
    /// rolled back (`open`: one may be open; a ROLLBACK outside one would
    /// log a warning), then `DISCARD ALL` (session settings back to their
    /// defaults, temporary tables, cursors and prepared statements gone).
    /// False when the connection is unusable or a step fails.
    pub fn reset(&self, open: bool) -> bool {
        if self.is_closed() || (open && self.batch("ROLLBACK").is_err()) {
            return false;
        }
        self.batch("DISCARD ALL").is_ok()
    }

    /// Runs `steps` in one round trip (one implicit transaction): each
    /// statement's rows (or count), in order.
    pub fn simple_each(&self, steps: &[&str]) -> Result<Vec<QueryResult>, StmtError> {
        if steps.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client()?;
        let msgs = self.bounded(client.simple_query(&steps.join("; ")))?;
        let mut out = Vec::with_capacity(steps.len());
        let mut rows = Vec::new();
        for m in msgs {
            match m {
                SimpleQueryMessage::Row(r) => rows.push(text_row(&r)),
                SimpleQueryMessage::CommandComplete(n) => {
                    let rows = std::mem::take(&mut rows);
                    let affected = if rows.is_empty() {
                        n
                    } else {
                        rows.len() as u64
                    };
                    out.push(QueryResult { rows, affected });
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Runs SQL text (several statements: one implicit transaction).
    pub fn batch(&self, sql: &str) -> Result<(), StmtError> {
        let client = self.client()?;
        self.bounded(client.batch_execute(sql))
    }

    /// The single value of a one-row, one-column query.
    pub fn scalar(&self, sql: &str) -> Result<Value, StmtError> {
        let res = self.simple(sql)?;
        Ok(res
            .rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .unwrap_or(Value::Null))
    }
}

/// A row of the simple protocol: each non-NULL value through [`Value::from_db_text`].
fn text_row(r: &tokio_postgres::SimpleQueryRow) -> Vec<Value> {
    (0..r.len())
        .map(|i| match r.try_get(i) {
            Ok(Some(s)) => Value::from_db_text(s),
            _ => Value::Null,
        })
        .collect()
}

impl Drop for PgConn {
    fn drop(&mut self) {
        // Dropping the client makes the connection task send Terminate and end;
        // let it, so the server sees a clean disconnect (no log noise).
        self.client = None;
        if let Some(task) = self.task.take() {
            if tokio::runtime::Handle::try_current().is_err() {
                let _ = self.rt.block_on(async {
                    tokio::time::timeout(Duration::from_millis(200), task).await
                });
            }
        }
    }
}
