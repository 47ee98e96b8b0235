//! A crash finding carries the tested server's own log, read in that
//! server's root directory: the servers of scripts/provision-current.sh run
//! in chroots (MySQL 9.7 and PostgreSQL 18 in `sid`, MariaDB 11.8 in
//! `trixie`, under `TXFUZZ_ROOTS`) and name `/var/log/...` files just as the
//! host's own servers do, whose files txfuzz must not read instead.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use txfuzz::engine::mysql::MysqlEngine;
use txfuzz::engine::server_root;
use txfuzz::engine::{Engine, WaitSignal};
use txfuzz::model::{Isolation, Value};

/// The chroots of scripts/provision-current.sh.
fn roots() -> PathBuf {
    std::env::var_os("TXFUZZ_ROOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/txfuzz/roots"))
}

/// `host:port` of a `scheme://user[:password]@host:port/db` URL.
fn address(url: &str) -> SocketAddr {
    let rest = url.split_once("://").unwrap().1;
    let host_port = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let host_port = host_port.split('/').next().unwrap();
    host_port
        .parse()
        .unwrap_or_else(|e| panic!("{host_port}: {e}"))
}

/// Text values of one row.
fn texts(sql: &str, row: Vec<Value>) -> Vec<String> {
    row.into_iter()
        .map(|v| match v {
            Value::Text(t) => t,
            other => panic!("{sql}: {other:?}"),
        })
        .collect()
}

/// The MySQL-family server's answer to `sql` (one row), on the admin
/// connection of an engine of its own (a session needs a loaded case).
fn ask_mysql(url: &str, sql: &str) -> Vec<String> {
    let mut e = MysqlEngine::connect(url).unwrap();
    let mut answers = e.query_all(&[sql]);
    texts(sql, answers.remove(0).unwrap().rows.remove(0))
}

/// PostgreSQL's answer to `sql` (one row) on a session of an engine.
fn ask_pg(url: &str, sql: &str) -> Vec<String> {
    let mut e = txfuzz::engine::open(Some(url)).unwrap();
    let mut s = e
        .open_session(Isolation::ReadCommitted, WaitSignal::new())
        .unwrap();
    texts(sql, s.query(sql).unwrap().rows.remove(0))
}

/// The engine's log tail is the end of `file`. The log may grow between
/// the reads (a connection warning): then again.
fn assert_tail_is_from(e: &dyn Engine, file: &Path) {
    for _ in 0..5 {
        let before = std::fs::read_to_string(file).unwrap();
        let tail = e.server_log_tail().unwrap_or_else(|why| panic!("{why}"));
        let after = std::fs::read_to_string(file).unwrap();
        if before != after {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        assert!(!tail.trim().is_empty(), "{} is empty", file.display());
        assert!(
            after.trim_end().ends_with(tail.trim_end()),
            "the engine's log tail is not the end of {}:\n{tail}",
            file.display()
        );
        return;
    }
    panic!("{} kept changing", file.display());
}

/// The server at `url` runs in `root`: its process is found there, and
/// the engine's log tail is the end of `root` + the log's name in the
/// server's root (`parts` joined: the data directory and the name in it,
/// or an absolute name).
fn check(url: &str, root: &Path, parts: &[String]) {
    let found = server_root::of_listener(address(url)).unwrap();
    assert_eq!(found.root, root, "the process listening for {url}");
    let e = txfuzz::engine::open(Some(url)).unwrap();
    let named = parts
        .iter()
        .fold(PathBuf::from("/"), |p, part| p.join(part));
    let here = found.file(&named).unwrap();
    assert!(here.starts_with(root), "{}", here.display());
    assert_tail_is_from(e.as_ref(), &here);
}

#[test]
fn the_log_of_mysql_9_7_in_a_chroot_is_read_in_its_root() {
    let Some(url) = common::current_url("TXFUZZ_MYSQL97_URL") else {
        return;
    };
    let parts = ask_mysql(&url, "SELECT @@datadir, @@log_error");
    check(&url, &roots().join("sid"), &parts);
}

#[test]
fn the_log_of_mariadb_11_8_in_a_chroot_is_read_in_its_root() {
    let Some(url) = common::current_url("TXFUZZ_MARIADB118_URL") else {
        return;
    };
    let parts = ask_mysql(&url, "SELECT @@datadir, @@log_error");
    check(&url, &roots().join("trixie"), &parts);
}

#[test]
fn the_log_of_postgres_18_in_a_chroot_is_read_in_its_root() {
    let Some(url) = common::current_url("TXFUZZ_PG18_URL") else {
        return;
    };
    let sql = "SELECT current_setting('data_directory'), pg_current_logfile()";
    check(&url, &roots().join("sid"), &ask_pg(&url, sql));
}
