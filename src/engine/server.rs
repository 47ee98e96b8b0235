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
            }
        }
    }
    fn running(&self) -> Vec<u64> {
        self.sessions
            .lock()
            .map(|s| {
                s.iter()
                    .filter(|(_, e)| e.running)
                    .map(|(&id, _)| id)
                    .collect()
            })
            .unwrap_or_default()
    }
    /// Ticks the signal of `waiting`, naming the session of `blocker` if known.
    fn report(&self, waiting: u64, blocker: Option<u64>) {
        let Ok(s) = self.sessions.lock() else { return };
        let Some(e) = s.get(&waiting) else { return };
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
                        match probe.waiting(&running) {
                            Ok(waits) => {
                                failing = false;
                                for (w, b) in waits {
                                    registry.report(w, b);
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
