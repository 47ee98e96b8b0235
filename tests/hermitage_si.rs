//! MariaDB REPEATABLE READ with `innodb_snapshot_isolation=ON` (snapshot
//! isolation: a write to a row changed since the read view fails with 1020)
//! permits write skew only. In its own test binary because it sets the global
//! variable (cargo runs test binaries one at a time), restored at the end.

mod common;

use common::hermitage::check_level;
use txfuzz::model::Isolation::RepeatableRead;

/// Sets the global variable for connections made from now on.
fn set_global(url: &str, on: bool) {
    use mysql_async::prelude::Queryable;
    let opts = mysql_async::Opts::from_url(url).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = mysql_async::Conn::new(opts).await.unwrap();
        let v = if on { "ON" } else { "OFF" };
        c.query_drop(format!("SET GLOBAL innodb_snapshot_isolation = {v}"))
            .await
            .unwrap();
        c.disconnect().await.unwrap();
    });
}

/// Turns the variable off again when the test ends, even when it fails.
struct Restore(String);

impl Drop for Restore {
    fn drop(&mut self) {
        set_global(&self.0, false);
    }
}

#[test]
fn mariadb_snapshot_isolation_repeatable_read_permits_only_write_skew() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    set_global(&url, true);
    let _restore = Restore(url.clone());
    let mut e = common::open(&url);
    assert_eq!(
        e.info()
            .settings
            .get("innodb_snapshot_isolation")
            .map(String::as_str),
        Some("ON"),
        "{:?}",
        e.info().settings
    );
    check_level(e.as_mut(), RepeatableRead, &["G2-item"]);
}
