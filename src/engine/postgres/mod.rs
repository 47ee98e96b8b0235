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

use super::pool::Pool;
use super::server::{Monitor, Registry};
use super::{Engine, EngineError, EngineProfile, Session, WaitSignal};
use crate::model::{DbState, EngineInfo, Isolation, Schema, StmtError, TableData, TestCase, Value};
use crate::sql::{self, Dialect, Layout};
use conn::PgConn;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::Config;

/// Connects to the server named by `url` (may hold a password: never print it).
pub fn open(url: &str) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(PgEngine::connect(url)?))
}

/// The case loaded last: what [`Engine::reset`] restores, as one SQL text,
/// and what creates it again in a new schema after a recovery.
struct Loaded {
    tables: String,
    reset: String,
    layout: Layout,
}

pub struct PgEngine {
    cfg: Config,
    schema: String,
    /// Earlier schemas of this engine that could not be dropped yet (a stuck
    /// backend held a lock in them); dropped again when the engine is.
    stale: Vec<String>,
    /// A recovery failed: the server is gone or frozen, so the exit does not
    /// wait on it (the next run removes what is left, [`super::leftover`]).
    gave_up: bool,
    admin: PgConn,
    deadline: Duration,
    registry: Arc<Registry>,
    monitor: Option<Monitor>,
    info: EngineInfo,
    profile: EngineProfile,
    loaded: Option<Loaded>,
    /// The server's log file, or why there is none.
    log: Result<PathBuf, String>,
    /// Connections of ended sessions, reset, for the next ones; replaced when
    /// the engine reconnects.
    pool: Arc<Pool<PgConn>>,
    /// Sessions set [`admin::SESSION_DEADLOCK_TIMEOUT`] (the role may).
    fast_deadlocks: bool,
}

pub(crate) fn setup_err(what: &str, e: StmtError) -> EngineError {
    super::admin_error(what, e)
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
        if !matches!(
            cfg.get_ssl_mode(),
            tokio_postgres::config::SslMode::Disable | tokio_postgres::config::SslMode::Prefer
        ) {
            return Err(EngineError::Usage(super::NO_TLS.into()));
        }
        if cfg.get_password().is_none() {
            if let Ok(p) = std::env::var("PGPASSWORD") {
                cfg.password(p);
            }
        }
        cfg.connect_timeout(conn::CONNECT_TIMEOUT);
        let connect_err = |reason: String| EngineError::Connect {
            url: redacted.clone(),
            reason,
        };
        let schema = super::leftover::private_name();
        let deadline = super::DEFAULT_ADMIN_DEADLINE;
        let admin = admin::admin_conn(&cfg, &schema, deadline).map_err(&connect_err)?;
        let probe =
            monitor::PgProbe::connect(&conn::named(&cfg, "monitor")).map_err(&connect_err)?;
        let registry = Arc::new(Registry::default());
        let monitor = Monitor::spawn(registry.clone(), Box::new(probe), monitor::POLL);
        let (mut info, log) = admin::describe(&admin, &cfg, redacted)?;
        let fast_deadlocks = admin::may_set_deadlock_timeout(&admin);
        if fast_deadlocks {
            info.settings.insert(
                "deadlock_timeout (txfuzz sessions)".into(),
                admin::SESSION_DEADLOCK_TIMEOUT.into(),
            );
        }
        admin::remove_leftovers(&admin, &cfg);
        Ok(PgEngine {
            cfg,
            schema,
            stale: Vec::new(),
            gave_up: false,
            admin,
            deadline,
            registry,
            monitor: Some(monitor),
            info,
            profile: profile(&Default::default()),
            loaded: None,
            log,
            pool: Pool::new(),
            fast_deadlocks,
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
            Err(e) => Err(setup_err("reading the backend pid", e)),
        }
    }

    /// Creates the loaded case's tables and rows in the current schema.
    fn create_loaded(&mut self) -> Result<(), EngineError> {
        let Some(loaded) = &self.loaded else {
            return Ok(());
        };
        self.admin
            .batch(&loaded.tables)
            .map_err(|e| setup_err("creating the case again", e))
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

    fn forget_server(&mut self) {
        self.gave_up = true;
    }

    fn set_deadline(&mut self, d: Duration) {
        self.deadline = d;
        self.admin.set_deadline(Some(d));
    }

    fn load_as(&mut self, case: &TestCase, layout: Layout) -> Result<(), EngineError> {
        self.loaded = None;
        let mut tables = String::new();
        for t in &case.schema.tables {
            for stmt in sql::create_table_as(Dialect::Postgres, t, layout) {
                tables.push_str(&stmt);
                tables.push_str(";\n");
            }
        }
        let ddl = format!("{}{tables}", admin::create_schema_sql(&self.schema));
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
        tables.push_str(&fill);
        self.loaded = Some(Loaded {
            tables,
            reset,
            layout,
        });
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
        let admin = &self.admin;
        super::retry_deadlocks(|| admin.batch(&loaded.reset)).map_err(|e| setup_err("reset", e))
    }

    fn open_session(
        &mut self,
        isolation: Isolation,
        signal: Arc<WaitSignal>,
    ) -> Result<Box<dyn Session>, EngineError> {
        self.session(isolation, signal, false)
    }

    fn open_bounded_session(
        &mut self,
        isolation: Isolation,
    ) -> Result<Box<dyn Session>, EngineError> {
        self.session(isolation, WaitSignal::new(), true)
    }

    /// Every table in one round trip.
    fn final_state(&mut self, schema: &Schema) -> Result<DbState, EngineError> {
        let layout = self
            .loaded
            .as_ref()
            .map_or(Layout::Instrumented, |l| l.layout);
        let queries: Vec<String> = schema
            .tables
            .iter()
            .map(|t| sql::select_state_as(Dialect::Postgres, t, layout))
            .collect();
        let steps: Vec<&str> = queries.iter().map(String::as_str).collect();
        let answers = self
            .admin
            .simple_each(&steps)
            .map_err(|e| setup_err("reading the final state", e))?;
        if answers.len() != steps.len() {
            return Err(EngineError::Setup(format!(
                "reading the final state: {} answers to {} queries",
                answers.len(),
                steps.len()
            )));
        }
        let mut state = DbState::new();
        for (t, answer) in schema.tables.iter().zip(answers) {
            let mut rows = answer.rows;
            rows.sort();
            state.insert(t.name.clone(), rows);
        }
        Ok(state)
    }

    /// Reconnects the admin and monitor connections, retrying until `wait`
    /// has elapsed (a restarted server may refuse connections for a while),
    /// in a new private schema: a backend that hung may still hold locks in
    /// the old one, which is dropped when it can be. The loaded case is
    /// created again there.
    fn recover(&mut self, wait: Duration, give_up: &dyn Fn() -> bool) -> Result<(), EngineError> {
        let schema = super::leftover::private_name();
        let done = self.reconnect(&schema, wait, give_up);
        if done.is_err() {
            // An attempt may have created it after all: a backend stopped
            // during `CREATE SCHEMA` finishes the statement once continued.
            self.stale.push(schema);
        }
        self.gave_up = done.is_err();
        done
    }

    fn server_log_tail(&self) -> Result<String, String> {
        let path = self.log.as_ref().map_err(Clone::clone)?;
        admin::tail(path, 20).ok_or_else(|| format!("{} is not readable", path.display()))
    }
}

impl PgEngine {
    /// Drops the schemas left by recoveries, each waiting at most `lock_wait`
    /// for its locks; those still locked stay listed. The backends that hold
    /// or wait for a lock in such a schema are txfuzz's own, abandoned by a
    /// run that hung: they are terminated first, or a backend that was
    /// stopped and resumes late would keep its schema from being dropped.
    fn drop_stale(&mut self, lock_wait: Duration) {
        // Below the round-trip deadline, so a lock gives an error in time.
        let ms = lock_wait.min(self.deadline * 2 / 5).as_millis().max(1);
        let admin = &self.admin;
        self.stale.retain(|s| {
            let _ = admin.simple(&terminate_lockers_sql(s));
            let sql = format!("SET lock_timeout TO {ms}; DROP SCHEMA IF EXISTS {s} CASCADE");
            admin.batch(&sql).is_err()
        });
        let _ = self.admin.batch(&format!(
            "SET lock_timeout TO {}",
            (self.deadline.as_millis() * 4 / 5).max(1)
        ));
    }
}

/// Terminates the other backends that hold or wait for a lock on the schema
/// `schema` or on one of its relations.
fn terminate_lockers_sql(schema: &str) -> String {
    format!(
        "SELECT pg_terminate_backend(pid) FROM (SELECT DISTINCT l.pid FROM pg_locks l \
         JOIN pg_namespace n ON n.nspname = '{schema}' \
         LEFT JOIN pg_class c ON c.oid = l.relation \
         WHERE l.pid <> pg_backend_pid() AND (c.relnamespace = n.oid \
         OR (l.classid = 'pg_namespace'::regclass AND l.objid = n.oid))) p"
    )
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

impl PgEngine {
    /// A session; `bounded`: every round trip keeps the engine's deadline.
    fn session(
        &mut self,
        isolation: Isolation,
        signal: Arc<WaitSignal>,
        bounded: bool,
    ) -> Result<Box<dyn Session>, EngineError> {
        // synchronous_commit only changes durability (commits are visible at
        // once either way); it saves an fsync per commit.
        let mut setup = format!(
            "SET search_path TO {}; SET synchronous_commit TO off; ",
            self.schema
        );
        if self.fast_deadlocks {
            setup.push_str(&format!(
                "SET deadlock_timeout TO '{}'; ",
                admin::SESSION_DEADLOCK_TIMEOUT
            ));
        }
        for s in sql::session_setup(Dialect::Postgres, isolation) {
            setup.push_str(&s);
            setup.push_str("; ");
        }
        setup.push_str("SELECT pg_backend_pid()");
        // A kept connection the server closed while it was idle
        // (`idle_session_timeout`, an operator's `pg_terminate_backend`) is
        // dropped and the next one tried; a new connection's failure is the
        // session's. Setup is bounded; the case's statements are bounded by
        // the executor.
        let (mut conn, pid) = loop {
            let (mut conn, kept) = match self.pool.take() {
                Some(conn) => (conn, true),
                None => {
                    let conn =
                        PgConn::connect(&conn::named(&self.cfg, "session")).map_err(|reason| {
                            EngineError::Connect {
                                url: self.info.url.clone(),
                                reason,
                            }
                        })?;
                    (conn, false)
                }
            };
            conn.set_deadline(Some(self.deadline));
            match conn.scalar(&setup) {
                Ok(Value::Int(pid)) => break (conn, u64::try_from(pid).unwrap_or(0)),
                Err(e) if kept && super::pool::closed_while_kept(&e) => continue,
                Ok(other) => {
                    return Err(EngineError::Setup(format!(
                        "unexpected backend pid {other}"
                    )))
                }
                Err(e) => return Err(setup_err("session setup", e)),
            }
        };
        if !bounded {
            conn.set_deadline(None);
        }
        let pool = (Arc::downgrade(&self.pool), self.deadline);
        let session = PgSession::new(conn, pool, pid, self.registry.clone(), signal)
            .map_err(|e| setup_err("session setup", e))?;
        Ok(Box::new(session))
    }

    /// [`Engine::recover`]: waits for the server and reconnects.
    fn reconnect(
        &mut self,
        schema: &str,
        wait: Duration,
        give_up: &dyn Fn() -> bool,
    ) -> Result<(), EngineError> {
        // The old monitor would probe the lost server while this waits.
        self.monitor = None;
        let deadline = Instant::now() + wait;
        loop {
            if give_up() {
                return Err(super::abandoned());
            }
            let attempt = admin::admin_conn(&self.cfg, schema, self.deadline).and_then(|admin| {
                monitor::PgProbe::connect(&conn::named(&self.cfg, "monitor"))
                    .map(|probe| (admin, probe))
            });
            match attempt {
                Ok((admin, probe)) => {
                    self.monitor = None; // stops the old monitor thread
                    self.admin = admin;
                    self.pool = Pool::new();
                    let old = std::mem::replace(&mut self.schema, schema.to_string());
                    self.stale.push(old);
                    self.drop_stale(Duration::from_secs(1));
                    self.monitor = Some(Monitor::spawn(
                        self.registry.clone(),
                        Box::new(probe),
                        monitor::POLL,
                    ));
                    return self.create_loaded();
                }
                Err(e) => {
                    super::retry_pause(deadline, || {
                        EngineError::Lost(format!(
                            "{} did not come back within {wait:?}: {e}",
                            self.info.url
                        ))
                    })?;
                }
            }
        }
    }
}

impl Drop for PgEngine {
    /// Stops the monitor and drops the schemas, each round trip bounded
    /// (a hung server must not hang txfuzz's exit; a schema that cannot be
    /// dropped now is removed by a later run, [`super::leftover`]).
    fn drop(&mut self) {
        self.monitor = None;
        if self.gave_up {
            return;
        }
        const EXIT_DEADLINE: Duration = Duration::from_secs(5);
        let current = self.schema.clone();
        self.stale.push(current);
        self.deadline = EXIT_DEADLINE;
        self.admin.set_deadline(Some(EXIT_DEADLINE));
        if self.admin.is_closed() || self.admin.client().is_err() {
            match PgConn::connect(&conn::named(&self.cfg, "admin")) {
                Ok(mut c) => {
                    c.set_deadline(Some(EXIT_DEADLINE));
                    self.admin = c;
                }
                Err(_) => return,
            }
        }
        self.drop_stale(Duration::from_secs(2));
        if self.admin.client().is_err() && !self.stale.is_empty() {
            // The connection broke during the drops: one more try.
            if let Ok(mut c) = PgConn::connect(&conn::named(&self.cfg, "admin")) {
                c.set_deadline(Some(EXIT_DEADLINE));
                self.admin = c;
                self.drop_stale(Duration::from_secs(2));
            }
        }
    }
}
