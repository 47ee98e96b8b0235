//! Engine profiles checked against the real servers (Hermitage sequences, as in
//! docs/engine-facts.md): where the engine lets an anomaly happen that the
//! isolation level (Adya) forbids, the `graph` oracle must find it and the
//! verdict policy must permit it through the profile's documented permission
//! for that level; where the engine prevents it, or the level itself allows it,
//! the oracle must report nothing. Each test also checks that the profile
//! permits exactly the anomalies the engine shows, so a wrong permission fails.

mod common;

use common::hermitage::check_level;
use common::open;
use txfuzz::model::Isolation::*;

#[test]
fn mariadb_read_uncommitted_permits_what_its_manual_says() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    check_level(
        open(&url).as_mut(),
        ReadUncommitted,
        &["G1a", "G1b", "G1c", "P4", "G-single", "G2-item"],
    );
}

#[test]
fn mariadb_read_committed_permits_what_its_manual_says() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    check_level(
        open(&url).as_mut(),
        ReadCommitted,
        &["P4", "G-single", "G2-item"],
    );
}

#[test]
fn mariadb_repeatable_read_permits_what_its_manual_says() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    check_level(open(&url).as_mut(), RepeatableRead, &["P4", "G2-item"]);
}

#[test]
fn mariadb_serializable_prevents_every_anomaly() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    check_level(open(&url).as_mut(), Serializable, &[]);
}

#[test]
fn postgres_read_committed_permits_what_its_manual_says() {
    let Some(url) = common::pg_url() else {
        return;
    };
    check_level(
        open(&url).as_mut(),
        ReadCommitted,
        &["P4", "G-single", "G2-item"],
    );
}

#[test]
fn postgres_repeatable_read_permits_what_its_manual_says() {
    let Some(url) = common::pg_url() else {
        return;
    };
    check_level(open(&url).as_mut(), RepeatableRead, &["G2-item"]);
}

#[test]
fn postgres_serializable_prevents_every_anomaly() {
    let Some(url) = common::pg_url() else {
        return;
    };
    check_level(open(&url).as_mut(), Serializable, &[]);
}

#[test]
fn sqlite_prevents_every_anomaly() {
    let mut e = txfuzz::engine::open(None).unwrap();
    check_level(e.as_mut(), Serializable, &[]);
}
