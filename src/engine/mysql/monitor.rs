//! The lock-wait probe of the MariaDB engine.
//!
//! Why not `information_schema.INNODB_TRX` / `INNODB_LOCK_WAITS`: InnoDB serves
//! those tables from a cache that is refreshed only when it has not been read for
//! 100 ms (`CACHE_MIN_IDLE_TIME` in trx0i_s.cc). Polled every few milliseconds it
//! is never refreshed at all: observed on 10.11, a lock wait stayed invisible for
//! 1.3 s of 2 ms polling. `SHOW ENGINE INNODB STATUS` is computed on every call,
//! so the probe parses its TRANSACTIONS section instead:
//! - a transaction block with a `LOCK WAIT` line and `MariaDB thread id N` is a
//!   waiting session; the lock it waits for follows `TRX HAS BEEN WAITING`;
//! - with `innodb_status_output_locks=ON` (set at connect, best effort) every
//!   transaction lists its locks, and the blocker is another transaction holding
//!   a granted lock on the same record (space, page, heap no) or table (else a
//!   transaction queued on it earlier).
//!
//! Metadata-lock and table-lock waits are not InnoDB lock waits; they appear in
//! `PROCESSLIST.STATE` as `Waiting for ... lock` (no blocker known).

use super::link::Link;
use super::Flavor;
use crate::engine::server::WaitProbe;
use mysql_async::Opts;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Statement generations per connection: odd while a statement runs. A probe
/// answer is reported only when the generation did not change while the probe
/// ran, so a lock wait of a finished statement is not pinned on the next one.
#[derive(Default)]
pub struct Activity {
    gens: Mutex<HashMap<u64, u64>>,
}

impl Activity {
    pub fn step(&self, id: u64) {
        if let Ok(mut g) = self.gens.lock() {
            *g.entry(id).or_insert(0) += 1;
        }
    }
    pub fn forget(&self, id: u64) {
        if let Ok(mut g) = self.gens.lock() {
            g.remove(&id);
        }
    }
    fn get(&self, id: u64) -> Option<u64> {
        self.gens.lock().ok().and_then(|g| g.get(&id).copied())
    }
}

pub struct InnodbProbe {
    flavor: Flavor,
    opts: Opts,
    link: Option<Link>,
    activity: Arc<Activity>,
    last_attempt: Option<Instant>,
}

const RECONNECT_EVERY: Duration = Duration::from_millis(500);

impl InnodbProbe {
    pub fn new(opts: Opts, activity: Arc<Activity>, flavor: Flavor) -> InnodbProbe {
        let link = Link::connect(&opts).ok().map(|mut l| {
            l.set_deadline(Some(PROBE_DEADLINE));
            l
        });
        InnodbProbe {
            flavor,
            opts,
            link,
            activity,
            last_attempt: Some(Instant::now()),
        }
    }

    fn link(&mut self) -> Result<&mut Link, String> {
        if self.link.is_none() {
            if self
                .last_attempt
                .is_some_and(|t| t.elapsed() < RECONNECT_EVERY)
            {
                return Err("monitor connection down".into());
            }
            self.last_attempt = Some(Instant::now());
            let mut l = Link::connect(&self.opts)?;
            l.set_deadline(Some(PROBE_DEADLINE));
            self.link = Some(l);
        }
        self.link
            .as_mut()
            .ok_or_else(|| "monitor connection down".into())
    }
}

/// A probe round trip that takes longer is abandoned (the monitor thread
/// must always be able to stop, even when the server hangs).
const PROBE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

impl WaitProbe for InnodbProbe {
    fn waiting(&mut self, running: &[u64]) -> Result<Vec<(u64, Option<u64>)>, String> {
        let gens: Vec<(u64, Option<u64>)> = running
            .iter()
            .map(|&id| (id, self.activity.get(id)))
            .collect();
        let flavor = self.flavor;
        let link = self.link()?;
        // One round trip for both. `SHOW PROCESSLIST`, not a query of
        // `information_schema.PROCESSLIST`: its INFO column is a LONGTEXT, so
        // every such query materialises an on-disk (Aria) temporary table, two
        // files created and deleted per probe, about 8% of the server's CPU in
        // a campaign.
        let mut answers = link
            .query_each(&[flavor.lock_wait_query(), "SHOW PROCESSLIST"])
            .into_iter();
        let (locks, mdl) = match (answers.next(), answers.next()) {
            (Some(Ok(s)), Some(Ok(m))) => (s, m),
            (Some(Err(e)), _) | (_, Some(Err(e))) => {
                if e.class == crate::model::ErrorClass::ConnectionLost {
                    self.link = None;
                }
                return Err(format!("{} {}", e.code, e.message));
            }
            _ => return Err("the probe's answer is incomplete".into()),
        };
        let mut waits: Vec<(u64, Option<u64>)> = flavor
            .lock_waits(&locks.rows)
            .into_iter()
            .filter(|(w, _)| running.contains(w))
            .collect();
        let cell = |v: Option<&crate::model::Value>| match v {
            Some(crate::model::Value::Int(i)) => i.to_string(),
            Some(crate::model::Value::Text(s)) => s.clone(),
            _ => String::new(),
        };
        // SHOW PROCESSLIST: Id, User, Host, db, Command, Time, State, ...
        for row in &mdl.rows {
            let (Ok(id), state) = (cell(row.first()).parse::<u64>(), cell(row.get(6))) else {
                continue;
            };
            if running.contains(&id)
                && metadata_lock_wait(&state)
                && !waits.iter().any(|(w, _)| *w == id)
            {
                waits.push((id, None));
            }
        }
        // Only waits of statements still running, and the same ones as before.
        waits.retain(|(w, _)| {
            gens.iter().any(|(id, g)| {
                id == w && g.is_some_and(|g| g % 2 == 1) && self.activity.get(*id) == *g
            })
        });
        Ok(waits)
    }
}

/// A thread state of a metadata-lock or table-lock wait (`Waiting for
/// table metadata lock`, `Waiting for table level lock`, ...).
fn metadata_lock_wait(state: &str) -> bool {
    state
        .strip_prefix("Waiting for")
        .is_some_and(|rest| rest.contains("lock"))
}

/// MySQL's lock waits, with the waiting and the blocking connection
/// (MySQL 9.7 Reference Manual 29.12.13.2 "The data_lock_waits Table": "The
/// data_lock_waits table implements a many-to-many relationship showing
/// which data lock requests in the data_locks table are blocked by which
/// held data locks"). Read from the lock system on every query. MySQL's
/// `SHOW ENGINE INNODB STATUS` leaves out a waiting transaction that has
/// written nothing, so it is not used there.
///
/// A lock's `THREAD_ID` is not its owner's: 29.12.13.1 "The data_locks
/// Table": "THREAD_ID: The thread ID of the session that created the lock".
/// Seen on 9.7.4: after the holder of a shared lock on a row updated it,
/// the exclusive request another transaction had waiting on that row was
/// listed under the holder's thread, and the waiter was absent; every such
/// wait was lost for the hang timeout (tests/mysql_family.rs,
/// `a_wait_on_a_row_its_holder_rewrites_is_still_reported`). So sessions
/// are found by transaction: the thread that created the transaction's
/// table locks, which only the transaction's own
/// session takes (record locks come after their table's intention lock).
const MYSQL_LOCK_WAITS: &str = "SELECT \
     COALESCE((SELECT t.PROCESSLIST_ID FROM performance_schema.data_locks l \
         JOIN performance_schema.threads t ON t.THREAD_ID = l.THREAD_ID \
         WHERE l.ENGINE_TRANSACTION_ID = w.REQUESTING_ENGINE_TRANSACTION_ID \
         AND l.LOCK_TYPE = 'TABLE' LIMIT 1), \
       (SELECT t.PROCESSLIST_ID FROM performance_schema.threads t \
         WHERE t.THREAD_ID = w.REQUESTING_THREAD_ID)), \
     (SELECT t.PROCESSLIST_ID FROM performance_schema.data_locks l \
         JOIN performance_schema.threads t ON t.THREAD_ID = l.THREAD_ID \
         WHERE l.ENGINE_TRANSACTION_ID = w.BLOCKING_ENGINE_TRANSACTION_ID \
         AND l.LOCK_TYPE = 'TABLE' LIMIT 1) \
     FROM performance_schema.data_lock_waits w";

impl Flavor {
    fn lock_wait_query(self) -> &'static str {
        match self {
            Flavor::MariaDb => "SHOW ENGINE INNODB STATUS",
            Flavor::MySql => MYSQL_LOCK_WAITS,
        }
    }

    /// `(waiting, blocking)` connections from the answer to
    /// [`Flavor::lock_wait_query`]; one pair per waiter.
    fn lock_waits(self, rows: &[Vec<crate::model::Value>]) -> Vec<(u64, Option<u64>)> {
        use crate::model::Value;
        let id = |v: Option<&Value>| match v {
            Some(Value::Int(i)) => u64::try_from(*i).ok(),
            Some(Value::Text(s)) => s.parse().ok(),
            _ => None,
        };
        match self {
            Flavor::MariaDb => {
                let text = match rows.first().and_then(|r| r.get(2)) {
                    Some(Value::Text(s)) => s.as_str(),
                    _ => "",
                };
                lock_waits(text)
            }
            Flavor::MySql => {
                let mut out: Vec<(u64, Option<u64>)> = Vec::new();
                for row in rows {
                    let Some(waiter) = id(row.first()) else {
                        continue;
                    };
                    if !out.iter().any(|(w, _)| *w == waiter) {
                        out.push((waiter, id(row.get(1))));
                    }
                }
                out
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum LockKey {
    Record { space: u64, page: u64, heap: u64 },
    Table(String),
}

#[derive(Debug, Default)]
struct TrxBlock {
    thread: Option<u64>,
    lock_wait: bool,
    /// The locks this transaction waits for.
    waits_for: Vec<(LockKey, String)>,
    /// (lock, mode, waiting)
    locks: Vec<(LockKey, String, bool)>,
}

/// `(waiting thread, blocking thread)` pairs from `SHOW ENGINE INNODB STATUS`.
pub fn lock_waits(status: &str) -> Vec<(u64, Option<u64>)> {
    let trxs = parse_transactions(status);
    let mut out = Vec::new();
    for (i, t) in trxs.iter().enumerate() {
        let (true, Some(thread)) = (t.lock_wait, t.thread) else {
            continue;
        };
        let holder = |granted: bool| {
            trxs.iter().enumerate().find_map(|(j, o)| {
                if i == j {
                    return None;
                }
                let hit = o.locks.iter().any(|(k, mode, waiting)| {
                    *waiting != granted
                        && t.waits_for
                            .iter()
                            .any(|(wk, wmode)| wk == k && conflicts(wk, wmode, mode))
                });
                if hit {
                    o.thread
                } else {
                    None
                }
            })
        };
        out.push((thread, holder(true).or_else(|| holder(false))));
    }
    out
}

/// Whether a held table lock in `held` mode can block a request in `wanted`
/// mode. Record locks: any lock on the same record may conflict (gap and
/// insert-intention subtleties are not modelled).
fn conflicts(key: &LockKey, wanted: &str, held: &str) -> bool {
    let LockKey::Table(_) = key else { return true };
    let m = |s: &str| {
        ["AUTO-INC", "IX", "IS", "X", "S"]
            .into_iter()
            .find(|m| s.starts_with(m))
            .unwrap_or("X")
    };
    !matches!(
        (m(wanted), m(held)),
        ("IS", "IS" | "IX" | "S" | "AUTO-INC")
            | ("IX", "IS" | "IX" | "AUTO-INC")
            | ("S", "IS" | "S")
            | ("AUTO-INC", "IS" | "IX")
    )
}

fn parse_transactions(status: &str) -> Vec<TrxBlock> {
    let Some(start) = status.find("LIST OF TRANSACTIONS FOR EACH SESSION") else {
        return Vec::new();
    };
    let section = &status[start..];
    let section = section
        .find("\n--------\n")
        .map_or(section, |end| &section[..end]);
    let mut out = Vec::new();
    for block in section.split("---TRANSACTION ").skip(1) {
        let mut t = TrxBlock::default();
        let mut in_wait = false;
        let mut current: Option<(u64, u64, String, bool)> = None; // space, page, mode, waiting
        for line in block.lines() {
            if line.starts_with("LOCK WAIT") {
                t.lock_wait = true;
            } else if let Some(rest) = line.split_once("thread id ").map(|(_, r)| r) {
                if t.thread.is_none() && (line.starts_with("MariaDB") || line.starts_with("MySQL"))
                {
                    t.thread = rest
                        .split(|c: char| !c.is_ascii_digit())
                        .next()
                        .and_then(|d| d.parse().ok());
                }
            } else if line.starts_with("------- TRX HAS BEEN WAITING") {
                in_wait = true;
            } else if line.starts_with("RECORD LOCKS ") {
                current = record_header(line);
            } else if let Some(rest) = line.strip_prefix("Record lock, heap no ") {
                let heap = rest.split(' ').next().and_then(|d| d.parse().ok());
                if let (Some((space, page, mode, waiting)), Some(heap)) = (&current, heap) {
                    let key = LockKey::Record {
                        space: *space,
                        page: *page,
                        heap,
                    };
                    if in_wait {
                        t.waits_for.push((key.clone(), mode.clone()));
                    }
                    t.locks.push((key, mode.clone(), *waiting));
                }
            } else if let Some(rest) = line.strip_prefix("TABLE LOCK table ") {
                current = None;
                let table = rest.split(" trx id").next().unwrap_or("").to_string();
                let mode = rest
                    .split_once("lock mode ")
                    .map_or("", |(_, m)| m)
                    .trim_end_matches(" waiting")
                    .to_string();
                let waiting = rest.ends_with(" waiting");
                if in_wait {
                    t.waits_for
                        .push((LockKey::Table(table.clone()), mode.clone()));
                }
                t.locks.push((LockKey::Table(table), mode, waiting));
            } else if line.starts_with("------------------") {
                in_wait = false;
            }
        }
        out.push(t);
    }
    out
}

/// `RECORD LOCKS space id 5 page no 3 n bits 320 index PRIMARY of table ... lock_mode X ... [waiting]`
fn record_header(line: &str) -> Option<(u64, u64, String, bool)> {
    let num_after = |tag: &str| {
        line.split_once(tag)
            .and_then(|(_, r)| r.split(' ').next())
            .and_then(|d| d.parse::<u64>().ok())
    };
    let space = num_after("space id ")?;
    let page = num_after("page no ")?;
    let mode = line
        .split_once("lock_mode ")
        .or_else(|| line.split_once("lock mode "))
        .map_or("", |(_, m)| m)
        .trim_end_matches(" waiting")
        .to_string();
    Some((space, page, mode, line.ends_with(" waiting")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lock_wait_states() {
        assert!(metadata_lock_wait("Waiting for table metadata lock"));
        assert!(metadata_lock_wait("Waiting for table level lock"));
        assert!(!metadata_lock_wait("Sending data"));
        assert!(!metadata_lock_wait("Waiting for next activation"));
        assert!(!metadata_lock_wait(""));
    }

    const STATUS: &str = "
------------------------
LATEST DETECTED DEADLOCK
------------------------
*** (1) TRANSACTION:
TRANSACTION 30, ACTIVE 0 sec starting index read
LOCK WAIT 3 lock struct(s), heap size 1128, 2 row lock(s)
MariaDB thread id 99, OS thread handle 1, query id 1 localhost root Updating
------------
TRANSACTIONS
------------
Trx id counter 38
LIST OF TRANSACTIONS FOR EACH SESSION:
---TRANSACTION 37, ACTIVE 0 sec starting index read
mysql tables in use 1, locked 1
LOCK WAIT 2 lock struct(s), heap size 1128, 1 row lock(s)
MariaDB thread id 20, OS thread handle 140325276333760, query id 1685 127.0.0.1 root Updating
update zz_t set v=v+1 where k=1
------- TRX HAS BEEN WAITING 316021 us FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 5 page no 3 n bits 320 index PRIMARY of table `test`.`zz_t` trx id 37 lock_mode X locks rec but not gap waiting
Record lock, heap no 2 PHYSICAL RECORD: n_fields 4; compact format; info bits 0
 0: len 4; hex 80000001; asc     ;;

------------------
TABLE LOCK table `test`.`zz_t` trx id 37 lock mode IX
RECORD LOCKS space id 5 page no 3 n bits 320 index PRIMARY of table `test`.`zz_t` trx id 37 lock_mode X locks rec but not gap waiting
Record lock, heap no 2 PHYSICAL RECORD: n_fields 4; compact format; info bits 0
---TRANSACTION 36, ACTIVE 0 sec
2 lock struct(s), heap size 1128, 1 row lock(s), undo log entries 1
MariaDB thread id 19, OS thread handle 140325276026560, query id 1683 127.0.0.1 root User sleep
select sleep(2)
TABLE LOCK table `test`.`zz_t` trx id 36 lock mode IX
RECORD LOCKS space id 5 page no 3 n bits 320 index PRIMARY of table `test`.`zz_t` trx id 36 lock_mode X locks rec but not gap
Record lock, heap no 3 PHYSICAL RECORD: n_fields 4; compact format; info bits 0
Record lock, heap no 2 PHYSICAL RECORD: n_fields 4; compact format; info bits 0
--------
FILE I/O
--------
";

    #[test]
    fn waiter_and_blocker_from_status() {
        assert_eq!(lock_waits(STATUS), vec![(20, Some(19))]);
    }

    #[test]
    fn without_lock_listing_the_blocker_is_unknown() {
        let cut = STATUS.replace("Record lock, heap no 3 PHYSICAL RECORD: n_fields 4; compact format; info bits 0\nRecord lock, heap no 2", "Record lock, heap no 3");
        assert_eq!(lock_waits(&cut), vec![(20, None)]);
        assert!(lock_waits("no transactions").is_empty());
    }

    #[test]
    fn table_lock_modes() {
        let t = LockKey::Table("t".into());
        assert!(!conflicts(&t, "IX", "IX"));
        assert!(conflicts(&t, "IX", "S"));
        assert!(conflicts(&t, "X", "IS"));
        assert!(!conflicts(&t, "S", "IS"));
    }
}
