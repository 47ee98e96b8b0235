//! Setting up the admin connection and describing the server: version,
//! settings that change transaction semantics, server log files.

use super::conn::{self, PgConn};
use super::setup_err;
use crate::engine::EngineError;
use crate::model::{EngineInfo, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio_postgres::config::Host;
use tokio_postgres::Config;

/// Settings that change transaction semantics, reported in [`EngineInfo`].
const SETTINGS: [&str; 5] = [
    "default_transaction_isolation",
    "deadlock_timeout",
    "lock_timeout",
    "statement_timeout",
    "max_pred_locks_per_transaction",
];

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Text(s) => s.clone(),
        other => other.to_string(),
    }
}

/// (Re)creates the private schema, marked with its owner
/// ([`crate::engine::leftover`]).
pub fn create_schema_sql(schema: &str) -> String {
    format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; \
         COMMENT ON SCHEMA {schema} IS '{}';\n",
        crate::engine::leftover::owner_mark()
    )
}

/// The admin connection (`application_name` txfuzz-admin): autocommit,
/// `search_path` set to a new private schema, asynchronous commit
/// (durability only; setup is scratch work), every round trip bounded by
/// `deadline` and a lock timeout below it, so that a stuck backend holding a
/// lock gives a lock timeout rather than a missed deadline.
pub fn admin_conn(cfg: &Config, schema: &str, deadline: Duration) -> Result<PgConn, String> {
    let cfg = conn::named(cfg, "admin");
    let mut conn = PgConn::connect(&cfg)?;
    conn.set_deadline(Some(deadline));
    let lock_ms = (deadline.as_millis() * 4 / 5).max(1);
    conn.batch(&format!(
        "SET client_min_messages TO warning; SET lock_timeout TO {lock_ms}; \
         SET synchronous_commit TO off; {} SET search_path TO {schema}",
        create_schema_sql(schema)
    ))
    .map_err(|e| conn::scrub(&cfg, format!("setting up: {} ({})", e.message, e.code)))?;
    Ok(conn)
}

/// Drops the private schemas of txfuzz processes of this machine that no
/// longer run; says so in one line.
pub fn remove_leftovers(admin: &PgConn, cfg: &Config) {
    use crate::engine::leftover;
    let q = "SELECT nspname, obj_description(oid, 'pg_namespace') FROM pg_namespace \
             WHERE nspname LIKE 'txfuzz\\_%'";
    let Ok(res) = admin.simple(q) else { return };
    let local = is_local(cfg);
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    for row in res.rows {
        let (Some(Value::Text(name)), mark) = (row.first(), row.get(1)) else {
            continue;
        };
        let mark = match mark {
            Some(Value::Text(m)) => Some(m.as_str()),
            _ => None,
        };
        if !leftover::is_stale(name, mark, local) {
            continue;
        }
        match admin.batch(&format!("DROP SCHEMA IF EXISTS {name} CASCADE")) {
            Ok(()) => removed.push(name.clone()),
            Err(e) => {
                tracing::warn!("dropping leftover schema {name}: {}", e.message);
                failed.push(name.clone());
            }
        }
    }
    leftover::report("schema", &removed, &failed);
}

/// Whether every host of `cfg` is this machine.
pub fn is_local(cfg: &Config) -> bool {
    cfg.get_hosts().iter().all(|h| match h {
        Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
        #[cfg(unix)]
        Host::Unix(_) => true,
    })
}

/// Version and settings; the server log candidates when the server is local.
pub fn describe(
    admin: &PgConn,
    cfg: &Config,
    url: String,
) -> Result<(EngineInfo, Result<PathBuf, String>), EngineError> {
    let cols: Vec<String> = std::iter::once("server_version")
        .chain(SETTINGS)
        .map(|s| format!("current_setting('{s}')"))
        .collect();
    let row = admin
        .simple(&format!("SELECT {}", cols.join(", ")))
        .map_err(|e| setup_err("reading server settings", e))?
        .rows
        .into_iter()
        .next()
        .unwrap_or_default();
    let get = |i: usize| row.get(i).map(text).unwrap_or_default();
    let mut settings = BTreeMap::new();
    for (i, s) in SETTINGS.iter().enumerate() {
        settings.insert(s.to_string(), get(i + 1));
    }
    settings.insert(
        "synchronous_commit (txfuzz connections)".into(),
        "off".into(),
    );
    let info = EngineInfo {
        name: "postgres".into(),
        version: get(0),
        url,
        settings,
    };
    Ok((info, server_log(admin, cfg)))
}

/// The `deadlock_timeout` of txfuzz's sessions. PostgreSQL looks for a
/// deadlock only once a lock wait has lasted `deadlock_timeout` (13.3.4
/// "Deadlocks"; default 1 s), so at the default every deadlock of a case costs
/// a second of waiting: most of a campaign's time. The manual describes the
/// setting as "the amount of time to wait on a lock before checking to see if
/// there is a deadlock condition" (20.12): a shorter one makes the check
/// sooner, never changes what counts as a deadlock. Changing it needs
/// superuser or its SET privilege; without it sessions keep the server's.
pub const SESSION_DEADLOCK_TIMEOUT: &str = "50ms";

/// Whether this connection's role may set `deadlock_timeout` (tried, then
/// reset).
pub fn may_set_deadlock_timeout(admin: &PgConn) -> bool {
    admin
        .batch(&format!(
            "SET deadlock_timeout TO '{SESSION_DEADLOCK_TIMEOUT}'; RESET deadlock_timeout"
        ))
        .is_ok()
}

/// The log file of the server under test, as the server itself names it
/// (`pg_current_logfile()`, relative to `data_directory`), or why there is
/// none. Never a guessed path: that could be another cluster's log. The
/// server names it in its own root directory (not this machine's `/` for a
/// server in a chroot), so the name is resolved through the server's process
/// ([`crate::engine::server_root`]; `inet_client_port()`/`inet_server_port()`
/// identify txfuzz's connection, NULL over a Unix socket), at connect, so
/// that the path still names the file once the server is gone.
fn server_log(admin: &PgConn, cfg: &Config) -> Result<PathBuf, String> {
    if !is_local(cfg) {
        return Err("the server is not on this machine; its log is not readable here".into());
    }
    // Needs superuser or pg_monitor-like privileges.
    let res = admin
        .simple(
            "SELECT current_setting('data_directory'), pg_current_logfile(), \
             inet_client_port(), inet_server_port()",
        )
        .map_err(|e| format!("the server does not say where it logs: {}", e.message))?;
    let row = res.rows.into_iter().next().unwrap_or_default();
    let named = match (row.first(), row.get(1)) {
        (Some(Value::Text(dir)), Some(Value::Text(file))) => PathBuf::from(dir).join(file),
        _ => {
            return Err(
                "the server writes no log file of its own (logging_collector is off: its log \
                 goes to the stderr of whoever started it)"
                    .into(),
            )
        }
    };
    use crate::engine::server_root::{server_file, Via};
    let number = |i: usize| row.get(i).map(text).and_then(|p| p.parse::<u16>().ok());
    let via = match number(3) {
        Some(port) => Via::Tcp {
            port,
            client_port: number(2),
        },
        None => Via::Socket,
    };
    server_file(via, &named)
}

/// The last `n` lines of a file (reads at most its last 64 KiB).
pub fn tail(path: &std::path::Path, n: usize) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))
        .ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(n);
    Some(lines[from..].join("\n"))
}
