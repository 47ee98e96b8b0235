//! A MariaDB session: one dedicated connection per transaction, registered with
//! the engine's lock-wait monitor by its connection id; the connection goes
//! back to the engine's pool, reset, when the session ends
//! ([`crate::engine::pool`]).

use super::errors::classify;
use super::link::Link;
use super::monitor::Activity;
use crate::engine::pool::{hand_back, Pool};
use crate::engine::server::Registry;
use crate::engine::{Cancel, Canceller, QueryResult, Session, WaitSignal};
use crate::instrument::Prepared;
use crate::model::{Outcome, StmtError};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};
use std::sync::{Arc, Weak};
use std::time::Duration;

pub struct MysqlSession {
    /// `None` only while the session is dropped.
    link: Option<Link>,
    id: u64,
    pool: Weak<Pool<Link>>,
    /// How long the reset that hands the connection back may take.
    reset_deadline: Duration,
    opts: Opts,
    registry: Arc<Registry>,
    activity: Arc<Activity>,
}

impl MysqlSession {
    /// Registers an open connection (already set up) as a session; `pool`
    /// takes it back when the session ends.
    pub fn new(
        link: Link,
        (pool, reset_deadline): (Weak<Pool<Link>>, Duration),
        opts: Opts,
        registry: Arc<Registry>,
        activity: Arc<Activity>,
        signal: Arc<WaitSignal>,
    ) -> MysqlSession {
        let id = link.id();
        registry.register(id, signal);
        MysqlSession {
            link: Some(link),
            id,
            pool,
            reset_deadline,
            opts,
            registry,
            activity,
        }
    }
}

impl MysqlSession {
    /// Runs `f` on the connection while the lock-wait monitor probes the
    /// session (`None` once the session has ended).
    fn in_statement<T>(&mut self, f: impl FnOnce(&mut Link) -> T) -> Option<T> {
        self.activity.step(self.id);
        self.registry.set_running(self.id, true);
        let result = self.link.as_mut().map(f);
        self.registry.set_running(self.id, false);
        self.activity.step(self.id);
        result
    }
}

fn ended() -> StmtError {
    super::errors::lost("the session has ended")
}

impl Session for MysqlSession {
    fn query(&mut self, sql: &str) -> Result<QueryResult, StmtError> {
        self.in_statement(|link| link.query(sql))
            .unwrap_or_else(|| Err(ended()))
    }

    /// One round trip for all the steps.
    fn query_each(&mut self, steps: &[&str]) -> Vec<Result<QueryResult, StmtError>> {
        self.in_statement(|link| link.query_each(steps))
            .unwrap_or_else(|| vec![Err(ended())])
    }

    fn run(&mut self, p: &Prepared) -> Outcome {
        crate::engine::run_prepared(self, p)
    }

    fn canceller(&self) -> Arc<dyn Canceller> {
        Arc::new(KillQuery {
            opts: self.opts.clone(),
            id: self.id,
        })
    }
}

impl Drop for MysqlSession {
    fn drop(&mut self) {
        self.registry.unregister(self.id);
        self.activity.forget(self.id);
        if let Some(mut link) = self.link.take() {
            link.set_deadline(Some(self.reset_deadline));
            hand_back(&self.pool, link, Link::reset);
        }
    }
}

/// Cancels a session's running statement with `KILL QUERY id` from a connection
/// of its own (opened on demand: cancelling is rare). The statement fails with
/// 1317 (ER_QUERY_INTERRUPTED), which the session reports as usual.
struct KillQuery {
    opts: Opts,
    id: u64,
}

impl Canceller for KillQuery {
    fn cancel(&self) -> Cancel {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return Cancel::Sent;
        };
        let id = self.id;
        let opts = self.opts.clone();
        // Bounded as a whole: a hung server must not hang the executor.
        let kill = async move {
            let mut conn = tokio::time::timeout(super::link::CONNECT_TIMEOUT, Conn::new(opts))
                .await
                .map_err(|_| (Cancel::Unreachable, "connect timeout".to_string()))?
                .map_err(|e| (Cancel::Unreachable, e.to_string()))?;
            let r = conn
                .query_drop(format!("KILL QUERY {id}"))
                .await
                .map_err(|e| (Cancel::Sent, classify(&e).message));
            let _ = conn.disconnect().await;
            r
        };
        let res = rt.block_on(async {
            tokio::time::timeout(2 * super::link::CONNECT_TIMEOUT, kill)
                .await
                .unwrap_or_else(|_| Err((Cancel::Sent, "no answer".into())))
        });
        match res {
            Ok(()) => Cancel::Sent,
            Err((how, e)) => {
                tracing::debug!("KILL QUERY {id} failed: {e}");
                how
            }
        }
    }
}
