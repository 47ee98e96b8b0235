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
    // Never `prefer_socket` (the driver's default): after the TCP handshake
    // with a local server the driver asks for `@@socket` and reconnects
    // through that path on this machine's filesystem, which for a server in
    // a chroot is another server's socket (MySQL 9.7 on 127.0.0.1:3307 in
    // /var/cache/txfuzz/roots/sid became the host MariaDB of
    // /run/mysqld/mysqld.sock). The connection stays with the server the URL
    // names, and its log is located through it (`log_error_path`).
    let host = unbracketed(base.ip_or_hostname()).to_string();
    Ok(OptsBuilder::from_opts(base)
        .ip_or_hostname(host)
        .init(vec![SQL_MODE])
        .prefer_socket(false)
        .into())
}

/// An IPv6 literal host as an address: the driver keeps the URL's
/// brackets (`[::1]`) and hands them to name resolution, which fails.
fn unbracketed(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Every connection's first statement (sessions, the loader, the scratch and
/// the shadow run; again after a pooled connection's reset): a 0 written into
/// an AUTO_INCREMENT column (`Column::auto_key`) is stored as written, as in
/// the other engines, instead of being replaced by a generated key (MariaDB KB
/// "SQL_MODE": NO_AUTO_VALUE_ON_ZERO).
pub(super) const SQL_MODE: &str =
    "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'NO_AUTO_VALUE_ON_ZERO')";

/// The server's error log file as a path on this machine, or why it cannot
/// be read here (not on this machine, no log file, not said, or its process
/// not found). The server names the file in its own root directory, which
/// is not this machine's `/` for a server in a chroot: the name is resolved
/// through the server's process ([`crate::engine::server_root`]), now, so
/// that the path still names the file once that process is gone.
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
        Ok(p) if p.starts_with('/') => on_this_machine(admin, &p),
        Ok(p) => {
            let datadir = scalar(admin, "SELECT @@datadir").unwrap_or_default();
            on_this_machine(admin, &format!("{}/{}", datadir.trim_end_matches('/'), p))
        }
        Err(e) => Err(format!("the server does not say where it logs: {e}")),
    }
}

/// `path`, absolute in the server's root, as a path on this machine,
/// located through txfuzz's TCP connection to the server's `@@port`. The
/// server also reports this connection's client port where it knows it
/// (`HOST` is `address:port` over TCP; empty under `--skip-grant-tables`;
/// a bare host name over a Unix socket).
fn on_this_machine(admin: &mut Link, path: &str) -> Result<String, String> {
    use crate::engine::server_root::{self, Via};
    let asked = scalar(admin, "SELECT @@port").and_then(|port| {
        let q = "SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()";
        Ok((port, scalar(admin, q)?))
    });
    let (port, host) = asked.map_err(|e| {
        server_root::not_found(&format!(
            "the server does not say which connection is txfuzz's ({e}); so {path} as the \
             server names it is not read here"
        ))
    })?;
    let via = Via::Tcp {
        port: port.parse().map_err(|_| bad_answer(&port))?,
        client_port: host.rsplit_once(':').and_then(|(_, p)| p.parse().ok()),
    };
    let file = server_root::server_file(via, std::path::Path::new(path))?;
    file.into_os_string()
        .into_string()
        .map_err(|f| format!("{} is not UTF-8", f.to_string_lossy()))
}

/// A `@@port` that does not parse.
fn bad_answer(answer: &str) -> String {
    crate::engine::server_root::not_found(&format!("the server's port ({answer:?}) does not parse"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mysql://u@[::1]:3306/db` connects to the address `::1`: the host
    /// reaches the driver without its brackets (it used to reach DNS).
    #[test]
    fn an_ipv6_literal_host_loses_its_brackets() {
        let err = |m: String| EngineError::Setup(m);
        let opts = base_opts("mysql://u@[::1]:3306/db", &err).unwrap();
        assert_eq!(opts.ip_or_hostname(), "::1");
        let opts = base_opts("mariadb://u@127.0.0.1:3306/db", &err).unwrap();
        assert_eq!(opts.ip_or_hostname(), "127.0.0.1");
    }
}
