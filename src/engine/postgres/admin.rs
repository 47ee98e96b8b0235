//! Setting up the admin connection and describing the server: version,
//! settings that change transaction semantics, server log files.

use super::conn::{self, PgConn};
use super::setup_err;
use crate::engine::EngineError;
use crate::model::{EngineInfo, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
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

/// The admin connection: autocommit, `search_path` set to the engine's schema,
/// asynchronous commit (durability only; setup is scratch work) and a lock
/// timeout so that a leftover backend cannot hang setup forever.
pub fn admin_conn(cfg: &Config, schema: &str, fresh: bool) -> Result<PgConn, String> {
    let conn = PgConn::connect(cfg)?;
    let create = if fresh {
        format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};")
    } else {
        format!("CREATE SCHEMA IF NOT EXISTS {schema};")
    };
    conn.batch(&format!(
        "SET client_min_messages TO warning; SET lock_timeout TO '10s'; \
         SET synchronous_commit TO off; {create} SET search_path TO {schema}"
    ))
    .map_err(|e| conn::scrub(cfg, format!("setting up: {}", e.message)))?;
    Ok(conn)
}

/// Version and settings; the server log candidates when the server is local.
pub fn describe(
    admin: &PgConn,
    cfg: &Config,
    url: String,
) -> Result<(EngineInfo, Vec<PathBuf>), EngineError> {
    let cols: Vec<String> = std::iter::once("server_version")
        .chain(SETTINGS)
        .chain(std::iter::once("server_version_num"))
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
    let major = match row.get(SETTINGS.len() + 1) {
        Some(Value::Int(n)) => n / 10000,
        _ => 0,
    };
    let info = EngineInfo {
        name: "postgres".into(),
        version: get(0),
        url,
        settings,
    };
    Ok((info, log_candidates(admin, cfg, major)))
}

fn log_candidates(admin: &PgConn, cfg: &Config, major: i64) -> Vec<PathBuf> {
    let local = cfg.get_hosts().iter().all(|h| match h {
        Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
        #[cfg(unix)]
        Host::Unix(_) => true,
    });
    if !local {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Needs superuser or pg_monitor-like privileges; best effort.
    if let Ok(res) = admin.simple("SELECT current_setting('data_directory'), pg_current_logfile()")
    {
        if let Some(row) = res.rows.first() {
            if let (Some(Value::Text(dir)), Some(Value::Text(file))) = (row.first(), row.get(1)) {
                out.push(PathBuf::from(dir).join(file));
            }
        }
    }
    if major > 0 {
        out.push(PathBuf::from(format!(
            "/var/log/postgresql/postgresql-{major}-main.log"
        )));
    }
    out
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
