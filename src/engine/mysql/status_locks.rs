//! The one server-global setting txfuzz changes on MariaDB:
//! `innodb_status_output_locks`, ON so that the lock-wait monitor can name
//! the blocker of a wait (monitor.rs). It only changes what `SHOW ENGINE
//! INNODB STATUS` prints, but it is global, so it is shared by every txfuzz
//! campaign on the server: the first to need it turns it ON and leaves a
//! marker (the empty database [`MARKER`]); each campaign, when it ends,
//! turns it OFF again only if the marker is there and no other live txfuzz
//! database remains (a campaign that ends first used to turn it OFF under
//! the others). A named lock (`GET_LOCK`) makes each check-and-change one
//! step across campaigns. Best effort: without the SUPER privilege nothing
//! changes and the monitor names fewer blockers.

use super::link::Link;
use super::scalar;
use crate::model::Value;

/// The marker database: txfuzz turned the setting ON; the last campaign
/// turns it OFF and drops the marker.
pub const MARKER: &str = "txfuzz_restore_status_locks";

/// The `GET_LOCK` name that serialises the check-and-change.
const LOCK: &str = "txfuzz_status_output_locks";

/// Runs `f` holding the named lock (waits at most 5 s for it; without it,
/// `f` runs anyway: the worst case is the old behaviour).
fn locked<T>(admin: &mut Link, f: impl FnOnce(&mut Link) -> T) -> T {
    let got = scalar(admin, &format!("SELECT GET_LOCK('{LOCK}', 5)")).is_ok_and(|v| v == "1");
    let out = f(admin);
    if got {
        let _ = admin.batch(&format!("DO RELEASE_LOCK('{LOCK}')"));
    }
    out
}

/// At connect: turns the setting ON if it is OFF and marks the server.
/// Returns the line that says so, when this campaign changed it.
pub(super) fn acquire(admin: &mut Link) -> Option<String> {
    locked(admin, |admin| {
        let on = scalar(admin, "SELECT @@GLOBAL.innodb_status_output_locks").ok()?;
        if !matches!(on.as_str(), "0" | "OFF") {
            return None;
        }
        admin
            .batch("SET GLOBAL innodb_status_output_locks = ON")
            .ok()?;
        let _ = admin.batch(&format!(
            "CREATE DATABASE IF NOT EXISTS {MARKER} COMMENT 'txfuzz turned innodb_status_output_locks ON; the last txfuzz campaign on this server turns it OFF'"
        )).or_else(|_| admin.batch(&format!("CREATE DATABASE IF NOT EXISTS {MARKER}")));
        Some(
            "txfuzz: turned the server-global innodb_status_output_locks ON (the lock-wait \
             monitor names blockers with it); the last txfuzz campaign on this server turns \
             it OFF again"
                .into(),
        )
    })
}

/// At exit, after this engine dropped its own database: turns the setting
/// OFF if txfuzz turned it ON and no other live txfuzz campaign's database
/// is left on the server. Returns the line to say, if any: turned OFF, or
/// left ON for a campaign of another process.
pub(super) fn release(admin: &mut Link, local: bool) -> Option<String> {
    locked(admin, |admin| {
        let rows = admin
            .query(
                "SELECT SCHEMA_NAME, SCHEMA_COMMENT FROM information_schema.SCHEMATA \
                 WHERE SCHEMA_NAME LIKE 'txfuzz\\_%'",
            )
            .or_else(|_| {
                admin.query(
                    "SELECT SCHEMA_NAME, NULL FROM information_schema.SCHEMATA \
                     WHERE SCHEMA_NAME LIKE 'txfuzz\\_%'",
                )
            })
            .ok()?
            .rows;
        let mut marked = false;
        let mut live = Vec::new();
        for row in rows {
            let Some(Value::Text(name)) = row.first() else {
                continue;
            };
            if name == MARKER {
                marked = true;
                continue;
            }
            let mark = match row.get(1) {
                Some(Value::Text(m)) if !m.is_empty() => Some(m.as_str()),
                _ => None,
            };
            if crate::engine::leftover::pid_of(name).is_some()
                && !crate::engine::leftover::is_stale(name, mark, local)
            {
                live.push(name.clone());
            }
        }
        if !marked {
            return None; // txfuzz did not turn it ON (or another campaign already turned it OFF)
        }
        let mine = format!("txfuzz_{}_", std::process::id());
        if !live.is_empty() {
            let others: Vec<&String> = live.iter().filter(|n| !n.starts_with(&mine)).collect();
            return (!others.is_empty()).then(|| {
                format!(
                    "txfuzz: left the server-global innodb_status_output_locks ON: {} other \
                     txfuzz campaign database(s) on this server still use it",
                    others.len()
                )
            });
        }
        admin
            .batch("SET GLOBAL innodb_status_output_locks = OFF")
            .ok()?;
        let _ = admin.batch(&format!("DROP DATABASE IF EXISTS {MARKER}"));
        Some("txfuzz: turned the server-global innodb_status_output_locks back OFF".into())
    })
}
