//! MariaDB/MySQL over its wire protocol (mysql_async, text protocol).
//!
//! Each [`MysqlEngine`] works in a private database `txfuzz_<pid>_<n>` (created on
//! connect, dropped when the engine is dropped), so several engines can share one
//! server. It holds an admin connection (load, reset, final state) and a
//! lock-wait monitor ([`monitor::InnodbProbe`]) on a connection of its own; every
//! session gets a new dedicated connection. Connections are blocking wrappers
//! around mysql_async, each with its own current-thread tokio runtime
//! ([`link::Link`]), so sessions can run on the executor's threads.

mod connect;
mod errors;
mod link;
mod monitor;
mod plans;
mod profile;
mod session;
mod status_locks;

pub use profile::profile;

pub use errors::class_of;
pub use monitor::lock_waits;

use super::server::{Monitor, Registry};
use super::{Engine, EngineError, EngineProfile, Session, WaitSignal};
use crate::engine::pool::Pool;
use crate::instrument::Prepared;
use crate::model::{DbState, EngineInfo, Isolation, Schema, StmtRef, TableData, TestCase, Value};
use crate::sql::{self, Dialect, Layout};
use connect::{base_opts, log_error_path};
use link::Link;
use monitor::{Activity, InnodbProbe};
use mysql_async::{Opts, OptsBuilder};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the monitor asks the server about lock waits.
const MONITOR_POLL: Duration = Duration::from_millis(2);

/// Connects to the server named by `url` (may hold a password: never print it).
pub fn open(url: &str) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(MysqlEngine::connect(url)?))
}

/// Which server answers: MariaDB and MySQL share a protocol and much of
/// InnoDB, but not their SQL (RETURNING), their lock monitors, their
/// settings or their manuals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    MariaDb,
    MySql,
}

impl Flavor {
    /// From `VERSION()` and `@@version_comment` (MariaDB says so in one of
    /// them; MySQL's comment is its distribution's, e.g. "(Debian)").
    pub fn of(version: &str, comment: &str) -> Flavor {
        let says = |s: &str| s.to_ascii_lowercase().contains("mariadb");
        if says(version) || says(comment) {
            Flavor::MariaDb
        } else {
            Flavor::MySql
        }
    }

    /// The engine's name in findings and known issues.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::MariaDb => "mariadb",
            Flavor::MySql => "mysql",
        }
    }
}

pub struct MysqlEngine {
    flavor: Flavor,
    /// The view oracle's scratch database ([`Engine::scratch_database`])
    /// and the schema whose tables it holds.
    scratch: Option<(String, Option<Schema>)>,
    /// Options for connections to the private database.
    opts: Opts,
    database: String,
    admin: Link,
    registry: Arc<Registry>,
    activity: Arc<Activity>,
    monitor: Option<Monitor>,
    info: EngineInfo,
    profile: EngineProfile,
    /// The server's error log file, or why there is none.
    log_error: Result<String, String>,
    loaded: Option<(Schema, Vec<TableData>, Layout)>,
    /// How long one admin round trip may take.
    deadline: Duration,
    /// Earlier private databases of this engine not dropped yet (a hung
    /// session may hold locks in them); dropped again when the engine is.
    stale: Vec<String>,
    /// The server is on this machine (its leftovers and log are ours to read).
    local: bool,
    /// A recovery failed: the server is gone or frozen, so the exit does not
    /// wait on it (the next run removes what is left, [`super::leftover`]).
    gave_up: bool,
    /// A connection whose read view, opened after each fill, keeps InnoDB's
    /// purge from removing the records a run delete-marks ([`Self::hold_purge`]).
    purge_guard: Option<Link>,
    /// Connections of ended sessions, reset, for the next ones; replaced when
    /// the engine moves to a new private database.
    pool: Arc<Pool<Link>>,
}

/// An admin-connection failure: a lost connection (the server went away) is
/// `Lost` and a missed deadline `Hung`, so campaigns treat them as a crash;
/// anything else is a setup error.
fn setup(what: &str, e: crate::model::StmtError) -> EngineError {
    super::admin_error(what, e)
}

/// Creates (or re-creates) the private database `db`, marked with its owner
/// ([`crate::engine::leftover`]), and makes it current.
fn create_database(admin: &mut Link, db: &str) -> Result<(), crate::model::StmtError> {
    let mark = super::leftover::owner_mark();
    admin
        .batch(&format!(
            "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db} COMMENT '{mark}'; USE {db}"
        ))
        .or_else(|_| {
            // Servers without database comments (MySQL, MariaDB < 10.5).
            admin.batch(&format!(
                "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}; USE {db}"
            ))
        })
}

/// Drops the private databases of txfuzz processes of this machine that no
/// longer run; says so in one line.
fn remove_leftovers(admin: &mut Link, local: bool) {
    let q = "SELECT SCHEMA_NAME, SCHEMA_COMMENT FROM information_schema.SCHEMATA \
             WHERE SCHEMA_NAME LIKE 'txfuzz\\_%'";
    let rows = match admin.query(q) {
        Ok(r) => r.rows,
        // No SCHEMA_COMMENT column (MySQL): unmarked, by name only.
        Err(_) => match admin.query(
            "SELECT SCHEMA_NAME, NULL FROM information_schema.SCHEMATA \
             WHERE SCHEMA_NAME LIKE 'txfuzz\\_%'",
        ) {
            Ok(r) => r.rows,
            Err(_) => return,
        },
    };
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    for row in rows {
        let Some(Value::Text(name)) = row.first() else {
            continue;
        };
        let mark = match row.get(1) {
            Some(Value::Text(m)) if !m.is_empty() => Some(m.as_str()),
            _ => None,
        };
        if !super::leftover::is_stale(name, mark, local) {
            continue;
        }
        match admin.batch(&format!("DROP DATABASE IF EXISTS {name}")) {
            Ok(()) => removed.push(name.clone()),
            Err(e) => {
                tracing::warn!("dropping leftover database {name}: {}", e.message);
                failed.push(name.clone());
            }
        }
    }
    super::leftover::report("database", &removed, &failed);
}

impl MysqlEngine {
    pub fn connect(url: &str) -> Result<MysqlEngine, EngineError> {
        let redacted = super::url::redact(url);
        let connect_err = |reason: String| EngineError::Connect {
            url: redacted.clone(),
            reason,
        };
        let base = base_opts(url, &connect_err)?;
        let scrub = |reason: String| match base.pass() {
            Some(p) if !p.is_empty() => reason.replace(p, "***"),
            _ => reason,
        };
        // Connecting to the URL's database checks that it exists and is
        // accessible; txfuzz works in a database of its own next to it and
        // leaves the URL's database untouched.
        let mut admin = Link::connect(&base).map_err(|e| connect_err(scrub(e)))?;
        let deadline = super::DEFAULT_ADMIN_DEADLINE;
        admin.set_deadline(Some(deadline));
        let database = super::leftover::private_name();
        create_database(&mut admin, &database)
            .map_err(|e| setup("creating the private database", e))?;
        let local = matches!(base.ip_or_hostname(), "localhost" | "127.0.0.1" | "::1")
            || base.socket().is_some();
        remove_leftovers(&mut admin, local);
        let opts: Opts = OptsBuilder::from_opts(base)
            .db_name(Some(database.clone()))
            .into();
        let version = scalar(&mut admin, "SELECT VERSION()")?;
        let flavor = Flavor::of(&version, &scalar(&mut admin, "SELECT @@version_comment")?);
        if flavor == Flavor::MariaDb {
            if let Some(line) = status_locks::acquire(&mut admin) {
                eprintln!("{line}");
            }
        }
        let settings = read_settings(&mut admin)?;
        let log_error = log_error_path(&mut admin, local);
        let profile = match flavor {
            Flavor::MariaDb => profile(&settings),
            Flavor::MySql => profile::mysql_profile(&settings),
        };
        let registry = Arc::new(Registry::default());
        let activity = Arc::new(Activity::default());
        let mut engine = MysqlEngine {
            opts,
            database,
            admin,
            registry,
            activity,
            monitor: None,
            flavor,
            scratch: None,
            info: EngineInfo {
                name: flavor.name().into(),
                version,
                url: redacted,
                settings,
            },
            profile,
            log_error,
            loaded: None,
            deadline,
            stale: Vec::new(),
            local,
            gave_up: false,
            purge_guard: None,
            pool: Pool::new(),
        };
        engine.start_monitor();
        Ok(engine)
    }

    /// The private database this engine works in.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Each of `steps` on the engine's own connection, as one call each
    /// would run them, in as few round trips as their errors allow (what
    /// `keep_plans` sends: `link::Link::query_all`).
    pub fn query_all(
        &mut self,
        steps: &[&str],
    ) -> Vec<Result<crate::engine::QueryResult, crate::model::StmtError>> {
        self.admin.query_all(steps)
    }

    /// Drops the databases left by recoveries (each waits at most 1 s for
    /// its metadata locks); those still locked stay listed.
    fn drop_stale(&mut self) {
        // lock_wait_timeout counts whole seconds: the round trip may take
        // longer than that.
        self.admin
            .set_deadline(Some(self.deadline.max(Duration::from_secs(3))));
        let admin = &mut self.admin;
        self.stale.retain(|db| {
            let r = admin
                .batch("SET SESSION lock_wait_timeout = 1")
                .and_then(|()| admin.batch(&format!("DROP DATABASE IF EXISTS {db}")));
            if let Err(e) = &r {
                tracing::debug!("dropping {db}: {} {}", e.code, e.message);
            }
            r.is_err()
        });
        let _ = self.admin.batch("SET SESSION lock_wait_timeout = DEFAULT");
        self.admin.set_deadline(Some(self.deadline));
    }

    fn start_monitor(&mut self) {
        self.monitor = None;
        let probe = InnodbProbe::new(self.opts.clone(), self.activity.clone(), self.flavor);
        self.monitor = Some(Monitor::spawn(
            self.registry.clone(),
            Box::new(probe),
            MONITOR_POLL,
        ));
    }

    fn connect_err(&self, reason: String) -> EngineError {
        EngineError::Connect {
            url: self.info.url.clone(),
            reason,
        }
    }

    /// `SET FOREIGN_KEY_CHECKS=0; BEGIN; DELETE ...; INSERT ...; COMMIT`: one
    /// round trip, one commit. A load (`delete` false) ends with the tables'
    /// `ANALYZE TABLE`; a reset keeps the statistics of the load
    /// ([`pinned_statistics`]).
    fn fill_sql(schema: &Schema, data: &[TableData], layout: Layout, delete: bool) -> String {
        let mut batch = String::from("SET FOREIGN_KEY_CHECKS=0; BEGIN;\n");
        if delete {
            for t in &schema.tables {
                batch.push_str(&format!("DELETE FROM {};\n", t.name));
            }
        }
        for t in &schema.tables {
            if let Some(d) = data.iter().find(|d| d.table == t.name) {
                if let Some(ins) = sql::insert_rows_as(Dialect::Mysql, t, &d.rows, layout) {
                    batch.push_str(&ins);
                    batch.push_str(";\n");
                }
            }
        }
        batch.push_str("COMMIT; SET FOREIGN_KEY_CHECKS=1;\n");
        if !delete {
            batch.push_str(&analyze_sql(schema));
        }
        batch
    }

    fn run_fill(&mut self, sql: &str) -> Result<(), EngineError> {
        let admin = &mut self.admin;
        super::retry_deadlocks(|| {
            admin.batch(sql).inspect_err(|_| {
                let _ = admin.batch("ROLLBACK; SET FOREIGN_KEY_CHECKS=1");
            })
        })
        .map_err(|e| setup("initial rows", e))?;
        self.hold_purge()
    }

    /// Opens a read view on the purge guard's connection, closing the one
    /// it held. InnoDB removes a delete-marked record only once no read view
    /// can see it (MySQL 17.3 "InnoDB Multi-Versioning": purge, and "a
    /// consistent read view prevents purging"), and whether the record is
    /// still there decides locks: a locking scan waits for the lock another
    /// transaction holds on it, and does not once purge has moved the lock
    /// to the next record's gap. Purge runs on its own threads, so without
    /// the guard two runs of one case could lock differently (a shadow-run
    /// difference of case 2272, docs/engine-facts.md "Purge during a run").
    /// The view is taken after the fill, so the initial rows' own
    /// delete-marks (a reset's DELETE) are purged as before.
    fn hold_purge(&mut self) -> Result<(), EngineError> {
        const VIEW: &str = "COMMIT; START TRANSACTION WITH CONSISTENT SNAPSHOT";
        if let Some(guard) = self.purge_guard.as_mut() {
            guard.set_deadline(Some(self.deadline));
            if guard.batch(VIEW).is_ok() {
                return Ok(());
            }
        }
        // No guard yet, or its connection is gone (a recovered server).
        self.purge_guard = None;
        let mut link = Link::connect(&self.opts).map_err(|e| self.connect_err(e))?;
        link.set_deadline(Some(self.deadline));
        link.batch(VIEW).map_err(|e| setup("purge guard", e))?;
        self.purge_guard = Some(link);
        Ok(())
    }
}

/// `ANALYZE TABLE` of every table: InnoDB's statistics of freshly filled
/// tables are otherwise whatever its background thread last computed, so
/// the plan of a statement, and with it the locks it takes, would differ
/// between two runs of one case (docs/engine-facts.md, "Plans of the
/// instrumented tables").
pub(super) fn analyze_sql(schema: &Schema) -> String {
    let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
    format!("ANALYZE TABLE {}", names.join(", "))
}

/// Table options that keep a table's persistent statistics as the load's
/// `ANALYZE TABLE` computed them. By default InnoDB recalculates them in the
/// background "when the table changes significantly (more than 10% of the
/// rows)", a setting that "can be overwritten on a per-table basis by use of
/// the STATS_PERSISTENT, STATS_AUTO_RECALC ... clauses in a CREATE TABLE"
/// (MariaDB KB, "InnoDB Persistent Statistics"). Every run of a case (each
/// after a reset: the same rows again) then plans with the statistics of the
/// load, and no recalculation after a run's writes changes them midway.
const PINNED_STATISTICS: &str = " STATS_PERSISTENT=1 STATS_AUTO_RECALC=0";

/// `create` (a `CREATE TABLE` of [`sql::create_table_as`]) with
/// [`PINNED_STATISTICS`]; other statements (its indexes) as they are.
fn pinned_statistics(create: String) -> String {
    if create.starts_with("CREATE TABLE ") && create.ends_with(" ENGINE=InnoDB") {
        create + PINNED_STATISTICS
    } else {
        create
    }
}

fn scalar(link: &mut Link, q: &str) -> Result<String, EngineError> {
    let r = link.query(q).map_err(|e| setup(q, e))?;
    Ok(match r.rows.first().and_then(|r| r.first()) {
        Some(Value::Text(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(Value::Int(i)) => i.to_string(),
        Some(v) => format!("{v:?}"),
    })
}

/// Server settings that change transaction semantics.
fn read_settings(link: &mut Link) -> Result<BTreeMap<String, String>, EngineError> {
    let q = "SHOW VARIABLES WHERE Variable_name IN ('tx_isolation', 'transaction_isolation', \
             'innodb_snapshot_isolation', 'innodb_lock_wait_timeout', 'autocommit', \
             'innodb_deadlock_detect', 'innodb_rollback_on_timeout', 'lock_wait_timeout')";
    let r = link.query(q).map_err(|e| setup("reading settings", e))?;
    let text = |v: Option<&Value>| match v {
        Some(Value::Text(s)) => s.clone(),
        Some(Value::Int(i)) => i.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    };
    Ok(r.rows
        .iter()
        .map(|row| (text(row.first()), text(row.get(1))))
        .collect())
}

impl Engine for MysqlEngine {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }
    /// UPDATEs report their rows through a user variable; MariaDB's INSERT
    /// and DELETE by RETURNING, MySQL's (no RETURNING) by row triggers
    /// ([`sql::capture_triggers`]).
    fn target(&self) -> crate::instrument::Target {
        crate::instrument::Target {
            dialect: Dialect::Mysql,
            update_capture: crate::instrument::UpdateCapture::UserVariable {
                returning: self.flavor == Flavor::MariaDb,
            },
        }
    }
    fn profile(&self) -> &EngineProfile {
        &self.profile
    }

    fn load_as(&mut self, case: &TestCase, layout: Layout) -> Result<(), EngineError> {
        self.load_tables(&case.schema, &case.data, layout)
    }

    fn reset(&mut self) -> Result<(), EngineError> {
        let Some((schema, data, layout)) = &self.loaded else {
            return Err(EngineError::Setup("reset before load".into()));
        };
        let sql = Self::fill_sql(schema, data, *layout, true);
        self.run_fill(&sql)
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

    /// MySQL: `<private database>_s`, made once; dropped with the private
    /// one. Its tables are made again only for a new schema (DDL is most of
    /// a scratch's cost: 150-300 ms a case when made each time). MariaDB's
    /// capture needs no trigger: temporary tables.
    fn scratch_database(&mut self, schema: &Schema) -> Result<Option<(String, bool)>, EngineError> {
        if self.flavor == Flavor::MariaDb {
            return Ok(None);
        }
        let name = format!("{}_s", self.database);
        if self.scratch.as_ref().map(|s| s.0.as_str()) != Some(name.as_str()) {
            self.admin
                .batch(&format!("CREATE DATABASE IF NOT EXISTS {name}"))
                .map_err(|e| setup("creating the scratch database", e))?;
            if let Some((old, _)) = self.scratch.replace((name.clone(), None)) {
                self.stale.push(old);
            }
        }
        let Some((_, made)) = self.scratch.as_mut() else {
            return Ok(None);
        };
        let fresh = made.as_ref() == Some(schema);
        *made = Some(schema.clone());
        Ok(Some((name, fresh)))
    }

    /// The judged run keeps the plain statements' plans (`plans.rs`).
    fn keep_plans(
        &mut self,
        case: &TestCase,
        prepared: &mut HashMap<StmtRef, Prepared>,
    ) -> Result<(), EngineError> {
        plans::keep_plans(&mut self.admin, case, prepared)
    }

    /// Every table in one round trip.
    fn final_state(&mut self, schema: &Schema) -> Result<DbState, EngineError> {
        let layout = self.loaded.as_ref().map_or(Layout::Instrumented, |l| l.2);
        let queries: Vec<String> = schema
            .tables
            .iter()
            .map(|t| sql::select_state_as(Dialect::Mysql, t, layout))
            .collect();
        let steps: Vec<&str> = queries.iter().map(String::as_str).collect();
        let mut state = DbState::new();
        if steps.is_empty() {
            return Ok(state);
        }
        let mut answers = self.admin.query_each(&steps).into_iter();
        for t in &schema.tables {
            let mut rows = answers
                .next()
                .unwrap_or_else(|| Err(errors::lost("no answer")))
                .map_err(|e| setup(&format!("reading {}", t.name), e))?
                .rows;
            rows.sort();
            state.insert(t.name.clone(), rows);
        }
        Ok(state)
    }

    /// Reconnects, retrying until `wait` has elapsed, in a new private
    /// database (a session that hung may still hold locks in the old one,
    /// which is dropped when it can be); the loaded case is created again.
    fn recover(&mut self, wait: Duration, give_up: &dyn Fn() -> bool) -> Result<(), EngineError> {
        let database = super::leftover::private_name();
        let done = self.reconnect(&database, wait, give_up);
        if done.is_err() {
            // An attempt may have created it after all: a server stopped
            // during `CREATE DATABASE` finishes the statement once continued.
            self.stale.push(database);
        }
        self.gave_up = done.is_err();
        done
    }

    fn server_log_tail(&self) -> Result<String, String> {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.log_error.as_ref().map_err(Clone::clone)?;
        let read = || -> std::io::Result<String> {
            let mut f = std::fs::File::open(path)?;
            let len = f.metadata()?.len();
            f.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)))?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf)?;
            let text = String::from_utf8_lossy(&buf);
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(20);
            Ok(lines[from..].join("\n"))
        };
        read().map_err(|e| format!("{path}: {e}"))
    }

    fn forget_server(&mut self) {
        self.gave_up = true;
    }

    fn set_deadline(&mut self, d: Duration) {
        self.deadline = d;
        self.admin.set_deadline(Some(d));
    }
}

impl MysqlEngine {
    /// A session; `bounded`: every round trip keeps the engine's deadline.
    fn session(
        &mut self,
        isolation: Isolation,
        signal: Arc<WaitSignal>,
        bounded: bool,
    ) -> Result<Box<dyn Session>, EngineError> {
        let statements = sql::session_setup(Dialect::Mysql, isolation).join("; ");
        // A kept connection runs its `init` statement again, in the same round
        // trip; one the server closed while it was idle (its `wait_timeout`, an
        // operator's KILL) is dropped and the next one tried; a new
        // connection's failure is the session's. Setup is bounded; the case's
        // statements are bounded by the executor.
        let mut link = loop {
            match self.pool.take() {
                Some(mut link) => {
                    link.set_deadline(Some(self.deadline));
                    match link.batch(&format!("{}; {statements}", connect::SQL_MODE)) {
                        Ok(()) => break link,
                        Err(e) if crate::engine::pool::closed_while_kept(&e) => continue,
                        Err(e) => return Err(setup("session setup", e)),
                    }
                }
                None => {
                    let mut link = Link::connect(&self.opts).map_err(|e| self.connect_err(e))?;
                    link.set_deadline(Some(self.deadline));
                    link.batch(&statements)
                        .map_err(|e| setup("session setup", e))?;
                    break link;
                }
            }
        };
        if !bounded {
            link.set_deadline(None);
        }
        Ok(Box::new(session::MysqlSession::new(
            link,
            (Arc::downgrade(&self.pool), self.deadline),
            self.opts.clone(),
            self.registry.clone(),
            self.activity.clone(),
            signal,
        )))
    }

    /// [`Engine::recover`]: waits for the server and reconnects.
    fn reconnect(
        &mut self,
        database: &str,
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
            let attempt = Link::connect(&self.opts_without_db()).and_then(|mut l| {
                l.set_deadline(Some(self.deadline));
                create_database(&mut l, database).map_err(|e| e.message)?;
                Ok(l)
            });
            match attempt {
                Ok(l) => {
                    self.admin = l;
                    let old = std::mem::replace(&mut self.database, database.to_string());
                    self.stale.push(old);
                    self.opts = OptsBuilder::from_opts(self.opts.clone())
                        .db_name(Some(database))
                        .into();
                    // Their current database is the old one.
                    self.pool = Pool::new();
                    self.drop_stale();
                    // A restarted server starts with the setting OFF again.
                    if self.flavor == Flavor::MariaDb {
                        if let Some(line) = status_locks::acquire(&mut self.admin) {
                            tracing::debug!("{line}");
                        }
                    }
                    self.start_monitor();
                    if let Some((schema, data, layout)) = self.loaded.clone() {
                        self.load_tables(&schema, &data, layout)?;
                    }
                    return Ok(());
                }
                Err(e) => {
                    super::retry_pause(deadline, || self.connect_err(e))?;
                }
            }
        }
    }

    /// Drops every table of the private database and creates `schema`
    /// with `data` in `layout`.
    fn load_tables(
        &mut self,
        schema: &Schema,
        data: &[TableData],
        layout: Layout,
    ) -> Result<(), EngineError> {
        self.loaded = None;
        let tables = self
            .admin
            .query("SHOW TABLES")
            .map_err(|e| setup("listing tables", e))?;
        let mut ddl = String::from("SET FOREIGN_KEY_CHECKS=0;\n");
        for row in &tables.rows {
            if let Some(Value::Text(name)) = row.first() {
                ddl.push_str(&sql::drop_table(Dialect::Mysql, &format!("`{name}`")));
                ddl.push_str(";\n");
            }
        }
        for t in &schema.tables {
            for s in sql::create_table_as(Dialect::Mysql, t, layout) {
                ddl.push_str(&pinned_statistics(s));
                ddl.push_str(";\n");
            }
            if layout.instrumented() && self.flavor == Flavor::MySql {
                for s in sql::capture_triggers(t) {
                    ddl.push_str(&s);
                    ddl.push_str(";\n");
                }
            }
        }
        ddl.push_str("SET FOREIGN_KEY_CHECKS=1");
        self.admin.batch(&ddl).map_err(|e| {
            let _ = self.admin.batch("SET FOREIGN_KEY_CHECKS=1");
            setup("schema rejected", e)
        })?;
        self.run_fill(&Self::fill_sql(schema, data, layout, false))?;
        self.loaded = Some((schema.clone(), data.to_vec(), layout));
        Ok(())
    }

    /// Connection options without the private database (it may not exist).
    fn opts_without_db(&self) -> Opts {
        OptsBuilder::from_opts(self.opts.clone())
            .db_name(None::<String>)
            .into()
    }
}

impl Drop for MysqlEngine {
    /// Stops the monitor, drops the private databases and restores the
    /// global setting txfuzz changed; every round trip bounded (a hung
    /// server must not hang txfuzz's exit; what is left is removed by a later
    /// run, [`super::leftover`]).
    fn drop(&mut self) {
        const EXIT_DEADLINE: Duration = Duration::from_secs(5);
        self.monitor = None;
        // Kept connections: closed politely only if the server answers.
        let idle = self.pool.drain();
        if self.gave_up {
            idle.into_iter().for_each(Link::abandon);
            return;
        }
        let current = self.database.clone();
        self.stale.push(current);
        self.stale.extend(self.scratch.take().map(|s| s.0));
        self.deadline = EXIT_DEADLINE;
        self.admin.set_deadline(Some(EXIT_DEADLINE));
        if self.admin.batch("DO 1").is_err() {
            match Link::connect(&self.opts_without_db()) {
                Ok(mut l) => {
                    l.set_deadline(Some(EXIT_DEADLINE));
                    self.admin = l;
                }
                Err(_) => {
                    idle.into_iter().for_each(Link::abandon);
                    return;
                }
            }
        }
        drop(idle);
        self.drop_stale();
        if self.flavor == Flavor::MariaDb {
            if let Some(line) = status_locks::release(&mut self.admin, self.local) {
                eprintln!("{line}");
            }
        }
    }
}
