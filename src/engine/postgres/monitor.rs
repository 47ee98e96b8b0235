//! The lock-wait probe of the shared [`crate::engine::server::Monitor`]: its own
//! autocommit connection asks `pg_stat_activity` which running sessions wait for
//! a heavyweight lock and `pg_blocking_pids` who holds it.

use super::conn::PgConn;
use crate::engine::server::WaitProbe;
use std::time::{Duration, Instant};
use tokio_postgres::{Config, Statement};

/// How often the monitor asks (docs/design.md: 5-10 ms; faster is cheap here).
pub const POLL: Duration = Duration::from_millis(2);

/// A probe query that takes longer than this is abandoned (so the monitor
/// thread can always stop).
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How often a lost monitor connection is re-established.
const RECONNECT_EVERY: Duration = Duration::from_millis(250);

/// Waiters are sessions in a `Lock` wait with at least one blocking backend.
/// Requiring a blocker leaves out waits that are not lock conflicts between
/// transactions (relation extension locks, which `pg_blocking_pids` does not
/// report), so a non-conflicting statement is never reported blocked. A waiter
/// whose blocker just released may show no blocker for one poll: it is simply
/// confirmed on the next one.
const WAITERS: &str = "SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity \
     WHERE pid = ANY($1) AND wait_event_type = 'Lock'";

pub struct PgProbe {
    cfg: Config,
    conn: Option<(PgConn, Statement)>,
    last_attempt: Option<Instant>,
}

impl PgProbe {
    /// Connects the monitor connection (autocommit, no session settings needed).
    pub fn connect(cfg: &Config) -> Result<PgProbe, String> {
        let mut p = PgProbe {
            cfg: cfg.clone(),
            conn: None,
            last_attempt: None,
        };
        p.reconnect()?;
        Ok(p)
    }

    fn reconnect(&mut self) -> Result<(), String> {
        self.last_attempt = Some(Instant::now());
        self.conn = None;
        let conn = PgConn::connect(&self.cfg)?;
        let client = conn.client().map_err(|e| e.message)?;
        let stmt = conn
            .block_on(async { tokio::time::timeout(PROBE_TIMEOUT, client.prepare(WAITERS)).await })
            .map_err(|_| format!("preparing the lock-wait query took over {PROBE_TIMEOUT:?}"))?
            .map_err(|e| format!("preparing the lock-wait query: {e}"))?;
        self.conn = Some((conn, stmt));
        Ok(())
    }
}

impl WaitProbe for PgProbe {
    fn waiting(&mut self, running: &[u64]) -> Result<Vec<(u64, Option<u64>)>, String> {
        if self.conn.as_ref().is_none_or(|(c, _)| c.is_closed()) {
            if self
                .last_attempt
                .is_some_and(|t| t.elapsed() < RECONNECT_EVERY)
            {
                return Ok(Vec::new());
            }
            self.reconnect()?;
        }
        let Some((conn, stmt)) = &self.conn else {
            return Ok(Vec::new());
        };
        let pids: Vec<i32> = running
            .iter()
            .filter_map(|&p| i32::try_from(p).ok())
            .collect();
        let client = conn.client().map_err(|e| e.message)?;
        let rows = match conn.block_on(async {
            tokio::time::timeout(PROBE_TIMEOUT, client.query(stmt, &[&pids])).await
        }) {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => {
                let msg = e.to_string();
                if e.as_db_error().is_none() {
                    self.conn = None;
                }
                return Err(msg);
            }
            Err(_) => return Err(format!("lock-wait query took over {PROBE_TIMEOUT:?}")),
        };
        let mut out = Vec::new();
        for row in rows {
            let (Ok(pid), Ok(blockers)) = (row.try_get::<_, i32>(0), row.try_get::<_, Vec<i32>>(1))
            else {
                continue;
            };
            let (Ok(pid), Some(&first)) = (u64::try_from(pid), blockers.first()) else {
                continue;
            };
            out.push((pid, u64::try_from(first).ok()));
        }
        Ok(out)
    }
}
