//! Shared machinery of server engines: a registry of sessions by connection id
//! and a monitor thread that asks the server which of the running sessions wait
//! for a lock (and on whom), ticking their [`WaitSignal`]s. Blocking is what the
//! server reports, never a timer's guess.

use super::WaitSignal;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

struct Entry {
    signal: Arc<WaitSignal>,
    running: bool,
    /// Bumped as each statement starts and ends: a wait the probe saw is
    /// reported only while the statement it was seen in still runs.
    statement: u64,
}

/// Sessions of one engine by server connection id.
#[derive(Default)]
pub struct Registry {
    sessions: Mutex<HashMap<u64, Entry>>,
}

impl Registry {
    pub fn register(&self, conn_id: u64, signal: Arc<WaitSignal>) {
        if let Ok(mut s) = self.sessions.lock() {
            s.insert(
                conn_id,
                Entry {
                    signal,
                    running: false,
                    statement: 0,
                },
            );
        }
    }
    pub fn unregister(&self, conn_id: u64) {
        if let Ok(mut s) = self.sessions.lock() {
            s.remove(&conn_id);
        }
    }
    /// Marks whether the session is inside a statement (only those are probed).
    pub fn set_running(&self, conn_id: u64, running: bool) {
        if let Ok(mut s) = self.sessions.lock() {
            if let Some(e) = s.get_mut(&conn_id) {
                e.running = running;
                e.statement += 1;
            }
        }
    }
    /// The running sessions and the statement each runs; none while only
    /// one session is open. A lone session has no other session of txfuzz
    /// to wait for (the engine's own connections hold no row or table lock
    /// while a session runs: the purge guard only a read view), so the
    /// serial replays of the oracles that run in one session are not probed
    /// (`SHOW ENGINE INNODB STATUS` on MariaDB, a `pg_locks` query on
    /// PostgreSQL): 16.0 probes a MariaDB case instead of 19.5
    /// (BENCHMARKS.md, "Replays of one case").
    fn running(&self) -> Vec<(u64, u64)> {
        self.sessions
            .lock()
            .map(|s| {
                if s.len() < 2 {
                    return Vec::new();
                }
                s.iter()
                    .filter(|(_, e)| e.running)
                    .map(|(&id, e)| (id, e.statement))
                    .collect()
            })
            .unwrap_or_default()
    }
    /// Ticks the signal of `waiting`, naming the session of `blocker` if
    /// known, if it still runs `statement` (the one it ran when the probe
    /// began). Checked and ticked under the lock that starts and ends
    /// statements: a wait seen in a statement that has ended since is not
    /// pinned on the session's next one (case 1155 of seed 5: a late tick
    /// of an INSERT's wait made its transaction's COMMIT look blocked).
    fn report(&self, waiting: u64, statement: u64, blocker: Option<u64>) {
        let Ok(s) = self.sessions.lock() else { return };
        let Some(e) = s.get(&waiting) else { return };
        if !e.running || e.statement != statement {
            return;
        }
        if let Some(b) = blocker.and_then(|b| s.get(&b)) {
            e.signal.set_blocker(b.signal.txn());
        }
        e.signal.tick();
    }
}

/// Asks the server which of `running` connections wait for a lock.
pub trait WaitProbe: Send {
    /// `(waiting connection, blocking connection if known)` for each waiter.
    fn waiting(&mut self, running: &[u64]) -> Result<Vec<(u64, Option<u64>)>, String>;
}

/// A monitor thread; stops when dropped.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Monitor {
    pub fn spawn(
        registry: Arc<Registry>,
        mut probe: Box<dyn WaitProbe>,
        poll: Duration,
    ) -> Monitor {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("txfuzz-monitor".into())
            .spawn(move || {
                // A probe that keeps failing (a frozen server) warns once.
                let mut failing = false;
                while !flag.load(Ordering::SeqCst) {
                    let running = registry.running();
                    if !running.is_empty() {
                        let ids: Vec<u64> = running.iter().map(|(id, _)| *id).collect();
                        match probe.waiting(&ids) {
                            Ok(waits) => {
                                failing = false;
                                for (w, b) in waits {
                                    if let Some(&(_, statement)) =
                                        running.iter().find(|(id, _)| *id == w)
                                    {
                                        registry.report(w, statement, b);
                                    }
                                }
                            }
                            Err(e) if failing => tracing::debug!("lock-wait monitor: {e}"),
                            Err(e) => {
                                failing = true;
                                tracing::warn!("lock-wait monitor: {e}");
                            }
                        }
                    }
                    std::thread::sleep(poll);
                }
            })
            .ok();
        Monitor { stop, handle }
    }
}

impl Drop for Monitor {
    /// Stops the thread: joined when it ends within a poll or two, else left
    /// to end after its current probe (a probe of a frozen server waits out
    /// its deadline; txfuzz's exit must not wait for it).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let Some(h) = self.handle.take() else {
            return;
        };
        let until = std::time::Instant::now() + Duration::from_millis(200);
        while !h.is_finished() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        if h.is_finished() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait the probe saw while one statement ran ticks that statement's
    /// signal, never the next statement's of the same session.
    #[test]
    fn a_wait_seen_in_an_ended_statement_is_not_reported() {
        let r = Registry::default();
        let signal = WaitSignal::new();
        r.register(7, signal.clone());
        r.register(8, WaitSignal::new());
        r.set_running(7, true);
        let seen = r.running();
        assert_eq!(seen.len(), 1);
        // The statement ends and the session's next one starts before the
        // probe's answer is reported.
        r.set_running(7, false);
        r.set_running(7, true);
        r.report(7, seen[0].1, None);
        assert_eq!(signal.ticks(), 0);
        // A wait seen in the statement running now is reported.
        let now = r.running();
        r.report(7, now[0].1, None);
        assert_eq!(signal.ticks(), 1);
        // And none once the session runs nothing.
        r.set_running(7, false);
        r.report(7, now[0].1, None);
        assert_eq!(signal.ticks(), 1);
    }

    /// A session alone (a serial replay) is not probed; once a second
    /// session is open, it is.
    #[test]
    fn a_lone_session_is_not_probed() {
        let r = Registry::default();
        r.register(7, WaitSignal::new());
        r.set_running(7, true);
        assert!(r.running().is_empty());
        r.register(8, WaitSignal::new());
        assert_eq!(r.running().len(), 1);
        r.unregister(8);
        assert!(r.running().is_empty());
    }
}
