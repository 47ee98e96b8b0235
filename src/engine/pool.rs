//! Connections kept between the sessions of one server engine.
//!
//! A case opens one session per transaction for every run (the judged run,
//! each oracle's replays, the shadow run): a dozen sessions a case. Opening a
//! connection costs the server a thread (MariaDB) or a backend process
//! (PostgreSQL), an authentication and the driver's own set-up queries; most
//! of a MariaDB case's round trips were those. A session that ends cleanly
//! hands its connection back after the engine's reset has cleared everything
//! the session could have changed (its transaction rolled back, session
//! variables, user variables, temporary tables, cursors), so the next session
//! starts as a new connection would. A connection whose reset fails, or that
//! missed a deadline, is closed instead.
//!
//! Each engine owns its pool; sessions hold a [`Weak`] reference, so a
//! session that ends after its engine replaced the pool (a reconnect to a
//! restarted server, a new private database) closes its connection.

use std::sync::{Arc, Mutex, Weak};

/// Idle connections kept at most (a case has at most a few transactions).
const MAX_IDLE: usize = 16;

pub struct Pool<C> {
    idle: Mutex<Vec<C>>,
}

impl<C> Pool<C> {
    pub fn new() -> Arc<Pool<C>> {
        Arc::new(Pool {
            idle: Mutex::new(Vec::new()),
        })
    }

    /// An idle connection, if one was handed back.
    pub fn take(&self) -> Option<C> {
        self.idle.lock().ok().and_then(|mut idle| idle.pop())
    }

    /// Keeps a connection that was reset (dropped when the pool is full).
    pub fn give(&self, c: C) {
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE {
                idle.push(c);
            }
        }
    }

    /// Takes every idle connection out (the engine closes them as the
    /// server's state allows).
    pub fn drain(&self) -> Vec<C> {
        self.idle
            .lock()
            .map(|mut idle| std::mem::take(&mut *idle))
            .unwrap_or_default()
    }

    /// How many connections are idle.
    #[cfg(test)]
    pub fn idle(&self) -> usize {
        self.idle.lock().map_or(0, |idle| idle.len())
    }
}

/// Hands `c` back to `pool` (if the engine still has it) once `reset`
/// succeeded on it; otherwise `c` is dropped (closed).
pub fn hand_back<C>(pool: &Weak<Pool<C>>, mut c: C, reset: impl FnOnce(&mut C) -> bool) {
    if let Some(pool) = pool.upgrade() {
        if reset(&mut c) {
            pool.give(c);
        }
    }
}

/// Whether a kept connection's first round trip failed because the server
/// closed it while it was idle (its idle timeout, an operator's kill): the
/// session then takes another. A missed deadline is not that (the server may
/// hang; every kept connection would wait it out), nor is any other error.
pub fn closed_while_kept(e: &crate::model::StmtError) -> bool {
    e.class == crate::model::ErrorClass::ConnectionLost && e.code != super::DEADLINE_CODE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_comes_back_only_after_its_reset_succeeded() {
        let pool = Pool::new();
        let weak = Arc::downgrade(&pool);
        hand_back(&weak, 1, |_| true);
        hand_back(&weak, 2, |_| false);
        assert_eq!(pool.idle(), 1);
        assert_eq!(pool.take(), Some(1));
        assert_eq!(pool.take(), None);
    }

    #[test]
    fn only_a_closed_connection_sends_the_session_to_the_next_one() {
        use crate::model::{ErrorClass, StmtError};
        let err = |class, code: &str| StmtError {
            class,
            code: code.into(),
            message: String::new(),
        };
        assert!(closed_while_kept(&err(
            ErrorClass::ConnectionLost,
            "closed"
        )));
        assert!(closed_while_kept(&err(ErrorClass::ConnectionLost, "57P01")));
        let hung = crate::engine::deadline_error(std::time::Duration::from_secs(1));
        assert!(!closed_while_kept(&hung));
        assert!(!closed_while_kept(&err(ErrorClass::Other, "1064 (42000)")));
    }

    #[test]
    fn a_replaced_pool_takes_nothing_back_and_a_full_one_closes_the_rest() {
        let pool = Pool::new();
        let weak = Arc::downgrade(&pool);
        for i in 0..MAX_IDLE + 3 {
            pool.give(i);
        }
        assert_eq!(pool.idle(), MAX_IDLE);
        drop(pool);
        let mut reset_called = false;
        hand_back(&weak, 99, |_| {
            reset_called = true;
            true
        });
        assert!(!reset_called, "no reset for a pool that is gone");
    }
}
