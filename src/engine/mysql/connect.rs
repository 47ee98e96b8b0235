//! Connecting: the driver's options for a URL and what the server must be
//! or is asked before txfuzz works on it (sql_mode, error log).

use super::*;

/// The driver's options for `url` (mariadb:// read as mysql://), with the
/// password from MYSQL_PWD when the URL has none, like the mysql client.
pub(super) fn base_opts(
    url: &str,
    connect_err: &dyn Fn(String) -> EngineError,
) -> Result<Opts, EngineError> {
    let driver_url = match url.split_once("://") {
        Some(("mariadb", rest)) => format!("mysql://{rest}"),
        _ => url.to_string(),
    };
    // The parser's message may quote the URL, password included: not shown.
    let base = Opts::from_url(&driver_url).map_err(|_| {
        connect_err("invalid URL (expected mysql://user[:password]@host:port/db)".into())
    })?;
    if base.ssl_opts().is_some() {
        return Err(EngineError::Usage(crate::engine::NO_TLS.into()));
    }
    // Like the mysql client, take the password from MYSQL_PWD when the URL has none.
    let base = match (base.pass(), std::env::var("MYSQL_PWD")) {
        (None, Ok(p)) if !p.is_empty() => OptsBuilder::from_opts(base).pass(Some(p)).into(),
        _ => base,
    };
    Ok(OptsBuilder::from_opts(base).init(vec![SQL_MODE]).into())
}

/// Every connection's first statement (sessions, the loader, the scratch and
/// the shadow run; again after a pooled connection's reset): a 0 written into
/// an AUTO_INCREMENT column (`Column::auto_key`) is stored as written, as in
/// the other engines, instead of being replaced by a generated key (MariaDB KB
/// "SQL_MODE": NO_AUTO_VALUE_ON_ZERO).
pub(super) const SQL_MODE: &str =
    "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'NO_AUTO_VALUE_ON_ZERO')";

/// A setup error when the server's sql_mode has SIMULTANEOUS_ASSIGNMENT: the
/// UPDATE instrumentation relies on MariaDB's left-to-right SET assignments
/// (docs/design.md §2).
pub(super) fn check_sql_mode(admin: &mut Link) -> Result<(), EngineError> {
    let sql_mode = scalar(admin, "SELECT @@GLOBAL.sql_mode")?;
    if sql_mode.contains("SIMULTANEOUS_ASSIGNMENT") {
        return Err(EngineError::Setup(
            "sql_mode SIMULTANEOUS_ASSIGNMENT is set: txfuzz's UPDATE instrumentation needs \
             left-to-right SET assignments (remove it from the server's sql_mode)"
                .into(),
        ));
    }
    Ok(())
}

/// The server's error log file, or why it cannot be read here (not on this
/// machine, no log file, or not said).
pub(super) fn log_error_path(admin: &mut Link, local: bool) -> Result<String, String> {
    match scalar(admin, "SELECT @@log_error") {
        _ if !local => {
            Err("the server is not on this machine; its log is not readable here".into())
        }
        Ok(p) if p.is_empty() || p == "stderr" => Err(
            "the server writes no error log file (log_error is empty: its log goes to the \
             stderr of whoever started it)"
                .into(),
        ),
        Ok(p) if p.starts_with('/') => Ok(p),
        Ok(p) => {
            let datadir = scalar(admin, "SELECT @@datadir").unwrap_or_default();
            Ok(format!("{}/{}", datadir.trim_end_matches('/'), p))
        }
        Err(e) => Err(format!("the server does not say where it logs: {e}")),
    }
}
