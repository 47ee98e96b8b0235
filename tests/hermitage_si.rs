//! MariaDB REPEATABLE READ with `innodb_snapshot_isolation=ON` (snapshot
//! isolation: a write to a row changed since the read view fails with 1020)
//! permits write skew only. In its own test binary because it sets the global
//! variable (cargo runs test binaries one at a time), restored at the end.

mod common;

use common::hermitage::check_level;
use txfuzz::model::Isolation::RepeatableRead;

/// Sets the global variable for connections made from now on; returns
/// the value it had.
fn set_global(url: &str, on: bool) -> bool {
    use mysql_async::prelude::Queryable;
    let opts = mysql_async::Opts::from_url(url).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = mysql_async::Conn::new(opts).await.unwrap();
        let was: Option<i64> = c
            .query_first("SELECT @@GLOBAL.innodb_snapshot_isolation")
            .await
            .unwrap();
        let v = if on { "ON" } else { "OFF" };
        c.query_drop(format!("SET GLOBAL innodb_snapshot_isolation = {v}"))
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        was == Some(1)
    })
}

/// Gives the variable its earlier value again when the test ends, even
/// when it fails (OFF on 10.11, ON on 11.8).
struct Restore(String, bool);

impl Drop for Restore {
    fn drop(&mut self) {
        set_global(&self.0, self.1);
    }
}

#[test]
fn mariadb_snapshot_isolation_repeatable_read_permits_only_write_skew() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let was = set_global(&url, true);
    let _restore = Restore(url.clone(), was);
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

/// At SERIALIZABLE every read locks, and the read view that snapshot
/// isolation checks writes against is made at the transaction's first read
/// operation, a locking one (the model takes no snapshot there): T1 reads
/// row 1, T2 (autocommit) changes row 2, T1's UPDATE of row 2 fails with
/// 1020, and `view` decides the case, with no finding. The other way: T2's
/// change before T1 began, T1's UPDATE succeeds, decided, no finding.
#[test]
fn mariadb_snapshot_isolation_serializable_conflict_after_a_locking_first_read_is_explained() {
    use txfuzz::model::{ErrorClass, Isolation};
    use txfuzz::testkit::*;
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    for (order, fails) in [("1 1 2 1 1", true), ("2 1 1 1 1", false)] {
        let mut case = kv_case(
            &[(1, 10), (2, 20)],
            vec![
                committed(vec![select("t", Some(1)), add("t", 2, 1)]),
                autocommit(vec![add("t", 2, 100)]),
            ],
            order,
        );
        case.isolation = Isolation::Serializable;
        case.txns[0]
            .settings
            .insert("innodb_snapshot_isolation".into(), "ON".into());
        let (h, findings, view) = common::run_defaults(e.as_mut(), &case);
        let update = h
            .outcome(txfuzz::model::StmtRef { txn: 1, index: 2 })
            .unwrap();
        let class = update.error.as_ref().map(|e| e.class);
        assert_eq!(
            class,
            fails.then_some(ErrorClass::SnapshotConflict),
            "{order}: {h:#?}"
        );
        assert!(findings.is_empty(), "{order}: {findings:#?}");
        assert_eq!(view.undecided, 0, "{order}: {:?}", view.undecided_by);
        assert_eq!(view.checked, 1, "{order}");
    }
}
