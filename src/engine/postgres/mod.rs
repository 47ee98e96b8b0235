//! PostgreSQL over its wire protocol (tokio-postgres, NoTls).
//!
//! - Every connection (admin, monitor, one per session) owns a current-thread
//!   tokio runtime ([`conn::PgConn`]); statements run with `simple_query` (text
//!   protocol) and values go through [`Value::from_db_text`].
//! - Each engine works in its own schema `txfuzz_<pid>_<n>` (created on connect,
//!   dropped on drop) and every connection sets `search_path` to it, so several
//!   engines share one server.
//! - Lock waits: a [`Monitor`] polls `pg_stat_activity`/`pg_blocking_pids` for
//!   the running sessions every 2 ms ([`monitor::PgProbe`]).
//! - Cancellation: the protocol's cancel request ([`session::PgCanceller`]).
//! - Errors: by SQLSTATE ([`errors::class_of`]).

mod admin;
mod conn;
mod errors;
mod monitor;
mod profile;
mod session;

pub use profile::profile;

pub use errors::{class_of, classify};
pub use session::PgSession;

use super::server::{Monitor, Registry};
use super::{Engine, EngineError, EngineProfile, Session, WaitSignal};
use crate::model::{
    DbState, EngineInfo, ErrorClass, Isolation, Schema, StmtError, TableData, TestCase, Value,
};
use crate::sql::{self, Dialect, Layout};
use conn::PgConn;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::Config;

/// Numbers the engines of this process (schema names).
static ENGINES: AtomicU32 = AtomicU32::new(0);

/// Connects to the server named by `url` (may hold a password: never print it).
pub fn open(url: &str) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(PgEngine::connect(url)?))
}

/// The case loaded last: what [`Engine::reset`] restores, as one SQL text.
struct Loaded {
    reset: String,
    layout: Layout,
}

pub struct PgEngine {
    cfg: Config,
    schema: String,
    admin: PgConn,
    registry: Arc<Registry>,
    monitor: Option<Monitor>,
    info: EngineInfo,
    profile: EngineProfile,
    loaded: Option<Loaded>,
    /// Candidate server log files (only for a server on this machine).
    logs: Vec<PathBuf>,
}

pub(crate) fn setup_err(what: &str, e: StmtError) -> EngineError {
    EngineError::Setup(format!("{what}: {} (SQLSTATE {})", e.message, e.code))
}

impl PgEngine {
    /// Connects to `postgres://user[:password]@host:port/db` (or `postgresql://`;
    /// `PGPASSWORD` is used when the URL has no password) and creates the
    /// engine's schema.
    pub fn connect(url: &str) -> Result<PgEngine, EngineError> {
        let redacted = super::url::redact(url);
        let mut cfg: Config = url.parse().map_err(|e: tokio_postgres::Error| {
            let reason = format!("invalid URL: {e}");
            EngineError::Connect {
                url: redacted.clone(),
                reason: reason.replace(url, &redacted),
            }
        })?;
        if cfg.get_password().is_none() {
            if let Ok(p) = std::env::var("PGPASSWORD") {
                cfg.password(p);
            }
        }
        cfg.connect_timeout(conn::CONNECT_TIMEOUT);
        cfg.application_name("txfuzz");
        let connect_err = |reason: String| EngineError::Connect {
            url: redacted.clone(),
            reason,
        };
        let schema = format!(
            "txfuzz_{}_{}",
            std::process::id(),
            ENGINES.fetch_add(1, Ordering::SeqCst)
        );
        let admin = admin::admin_conn(&cfg, &schema, true).map_err(&connect_err)?;
        let probe = monitor::PgProbe::connect(&cfg).map_err(&connect_err)?;
        let registry = Arc::new(Registry::default());
        let monitor = Monitor::spawn(registry.clone(), Box::new(probe), monitor::POLL);
        let (info, logs) = admin::describe(&admin, &cfg, redacted)?;
        Ok(PgEngine {
            cfg,
            schema,
            admin,
            registry,
            monitor: Some(monitor),
            info,
            profile: profile(&Default::default()),
            loaded: None,
            logs,
        })
    }

    /// The schema this engine works in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The backend pid of the admin connection (tests simulate crashes with it).
    pub fn admin_pid(&self) -> Result<u64, EngineError> {
        match self.admin.scalar("SELECT pg_backend_pid()") {
            Ok(Value::Int(pid)) => Ok(u64::try_from(pid).unwrap_or(0)),
            Ok(other) => Err(EngineError::Setup(format!(
                "unexpected backend pid {other}"
            ))),
            Err(e) => Err(EngineError::Lost(e.message)),
        }
    }
}

impl Engine for PgEngine {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
    fn profile(&self) -> &EngineProfile {
        &self.profile
    }

    fn load_as(&mut self, case: &TestCase, layout: Layout) -> Result<(), EngineError> {
        self.loaded = None;
        let s = &self.schema;
        let mut ddl = format!("DROP SCHEMA IF EXISTS {s} CASCADE; CREATE SCHEMA {s};\n");
        for t in &case.schema.tables {
            for stmt in sql::create_table_as(Dialect::Postgres, t, layout) {
                ddl.push_str(&stmt);
                ddl.push_str(";\n");
            }
        }
        self.admin
            .batch(&ddl)
            .map_err(|e| setup_err("schema rejected", e))?;
        let fill = fill_sql(&case.schema, &case.data, layout);
        if !fill.is_empty() {
            self.admin
                .batch(&fill)
                .map_err(|e| setup_err("initial rows rejected", e))?;
        }
        let names: Vec<&str> = case.schema.tables.iter().map(|t| t.name.as_str()).collect();
        let reset = if names.is_empty() {
            String::new()
        } else {
            format!("TRUNCATE {};\n{fill}", names.join(", "))
        };
        self.loaded = Some(Loaded { reset, layout });
        Ok(())
    }

    /// One round trip: `TRUNCATE` of every table (fresh, identical heap files
    /// each time, so replays start from the same physical state) and the
    /// initial rows, in one implicit transaction.
    fn reset(&mut self) -> Result<(), EngineError> {
        let Some(loaded) = &self.loaded else {
            return Err(EngineError::Setup("reset before load".into()));
        };
        if loaded.reset.is_empty() {
            return Ok(());
        }
        self.admin
            .batch(&loaded.reset)
            .map_err(|e| setup_err("reset", e))
    }

    fn open_session(
        &mut self,
        isolation: Isolation,
        signal: Arc<WaitSignal>,
    ) -> Result<Box<dyn Session>, EngineError> {
        let conn = PgConn::connect(&self.cfg).map_err(|reason| EngineError::Connect {
            url: self.info.url.clone(),
            reason,
        })?;
        // synchronous_commit only changes durability (commits are visible at
        // once either way); it saves an fsync per commit.
        let mut setup = format!(
            "SET search_path TO {}; SET synchronous_commit TO off; ",
            self.schema
        );
        for s in sql::session_setup(Dialect::Postgres, isolation) {
            setup.push_str(&s);
            setup.push_str("; ");
        }
        setup.push_str("SELECT pg_backend_pid()");
        let pid = match conn.scalar(&setup) {
            Ok(Value::Int(pid)) => u64::try_from(pid).unwrap_or(0),
            Ok(other) => {
                return Err(EngineError::Setup(format!(
                    "unexpected backend pid {other}"
                )))
            }
            Err(e) => return Err(setup_err("session setup", e)),
        };
        let session = PgSession::new(conn, pid, self.registry.clone(), signal)
            .map_err(|e| setup_err("session setup", e))?;
        Ok(Box::new(session))
    }

    fn final_state(&mut self, schema: &Schema) -> Result<DbState, EngineError> {
        let mut state = DbState::new();
        for t in &schema.tables {
            let layout = self
                .loaded
                .as_ref()
                .map_or(Layout::Instrumented, |l| l.layout);
            let q = sql::select_state_as(Dialect::Postgres, t, layout);
            let mut rows = self
                .admin
                .simple(&q)
                .map_err(|e| setup_err(&format!("reading {}", t.name), e))?
                .rows;
            rows.sort();
            state.insert(t.name.clone(), rows);
        }
        Ok(state)
    }

    /// Reconnects the admin and monitor connections, retrying until `wait`
    /// has elapsed (a restarted server may refuse connections for a while).
    fn recover(&mut self, wait: Duration) -> Result<(), EngineError> {
        let deadline = Instant::now() + wait;
        loop {
            let attempt = admin::admin_conn(&self.cfg, &self.schema, false)
                .and_then(|admin| monitor::PgProbe::connect(&self.cfg).map(|probe| (admin, probe)));
            match attempt {
                Ok((admin, probe)) => {
                    self.monitor = None; // stops the old monitor thread
                    self.admin = admin;
                    self.monitor = Some(Monitor::spawn(
                        self.registry.clone(),
                        Box::new(probe),
                        monitor::POLL,
                    ));
                    return Ok(());
                }
                Err(e) if Instant::now() >= deadline => {
                    return Err(EngineError::Lost(format!(
                        "{} did not come back within {wait:?}: {e}",
                        self.info.url
                    )))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    fn server_log_tail(&self) -> Option<String> {
        self.logs.iter().find_map(|p| admin::tail(p, 20))
    }
}

/// The INSERTs of the initial rows, parents first (schema order).
fn fill_sql(schema: &Schema, data: &[TableData], layout: Layout) -> String {
    let mut out = String::new();
    for t in &schema.tables {
        if let Some(d) = data.iter().find(|d| d.table == t.name) {
            if let Some(ins) = sql::insert_rows_as(Dialect::Postgres, t, &d.rows, layout) {
                out.push_str(&ins);
                out.push_str(";\n");
            }
        }
    }
    out
}

impl Drop for PgEngine {
    /// Best effort: stop the monitor, drop the schema.
    fn drop(&mut self) {
        self.monitor = None;
        let sql = format!(
            "SET lock_timeout TO '2s'; DROP SCHEMA IF EXISTS {} CASCADE",
            self.schema
        );
        let lost = match self.admin.batch(&sql) {
            Ok(()) => false,
            Err(e) => e.class == ErrorClass::ConnectionLost,
        };
        if lost {
            if let Ok(c) = PgConn::connect(&self.cfg) {
                let _ = c.batch(&sql);
            }
        }
    }
}
