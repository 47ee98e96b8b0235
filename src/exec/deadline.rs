//! Deadlines of the executor that count only the time txfuzz itself ran.
//!
//! The driver checks its deadlines between polls a millisecond apart. When
//! two checks are far more apart than that, the process was not running in
//! between (SIGSTOP, a suspended machine or container, a debugger): no
//! statement could make progress then, so that time does not count towards
//! the hang timeout. Without this, a statement that was about to finish when
//! the process was frozen would be cancelled as hung the moment it continued
//! (a false `crash:hang`; docs/reliability.md).

use std::time::{Duration, Instant};

/// A gap between two checks longer than this is time the process did not
/// run. Scheduling delays on a loaded machine are milliseconds, far below it.
const STOPPED_GAP: Duration = Duration::from_secs(1);

pub struct Deadline {
    end: Instant,
    last: Instant,
}

impl Deadline {
    pub fn after(d: Duration) -> Deadline {
        let now = Instant::now();
        Deadline {
            end: now + d,
            last: now,
        }
    }

    /// Whether the deadline has passed, not counting any stop of the process
    /// since the last check.
    pub fn passed(&mut self) -> bool {
        self.passed_at(Instant::now())
    }

    fn passed_at(&mut self, now: Instant) -> bool {
        let gap = now.saturating_duration_since(self.last);
        if gap > STOPPED_GAP {
            self.end += gap;
        }
        self.last = now;
        now > self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_spent_stopped_does_not_count() {
        let t0 = Instant::now();
        let mut d = Deadline {
            end: t0 + Duration::from_secs(2),
            last: t0,
        };
        // Checked every 10 ms for 1.5 s: not passed.
        let mut t = t0;
        for _ in 0..150 {
            t += Duration::from_millis(10);
            assert!(!d.passed_at(t));
        }
        // Then the process is stopped for 30 s: the deadline moves with it.
        t += Duration::from_secs(30);
        assert!(!d.passed_at(t));
        t += Duration::from_millis(400);
        assert!(!d.passed_at(t));
        // Another 200 ms of running time passes the deadline (1.5 + 0.6 > 2).
        t += Duration::from_millis(200);
        assert!(d.passed_at(t));
    }

    #[test]
    fn a_running_process_passes_its_deadline_on_time() {
        let t0 = Instant::now();
        let mut d = Deadline {
            end: t0 + Duration::from_millis(100),
            last: t0,
        };
        assert!(!d.passed_at(t0 + Duration::from_millis(99)));
        assert!(d.passed_at(t0 + Duration::from_millis(101)));
    }
}
