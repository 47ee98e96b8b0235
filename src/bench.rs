//! Micro-benchmarks behind `txfuzz bench`: lock-wait detection latency and reset
//! time on any engine. Campaign throughput is what `txfuzz run` reports.

use crate::engine::{Engine, EngineError};
use crate::exec::{execute, ExecOptions};
use crate::gen::{generate_case, GenConfig};
use crate::model::{EventKind, Isolation, StmtRef};
use crate::testkit::{add, committed, kv_case};
use serde::Serialize;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct Distribution {
    pub samples: usize,
    pub median_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Distribution {
    pub fn of(mut v: Vec<f64>) -> Distribution {
        v.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| {
            if v.is_empty() {
                return 0.0;
            }
            v[((v.len() - 1) as f64 * q).round() as usize]
        };
        Distribution {
            samples: v.len(),
            median_us: at(0.5),
            p99_us: at(0.99),
            max_us: at(1.0),
        }
    }
}

/// Time from submitting a statement that must wait for a row lock until the
/// engine confirms the wait, over `rounds` scripted cases (T2's UPDATE of the
/// row T1 updated). Also counts rounds where the wait was not detected.
pub fn blocked_latency(
    engine: &mut dyn Engine,
    isolation: Isolation,
    rounds: usize,
) -> Result<(Distribution, usize), EngineError> {
    let mut case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![add("t", 1, 2)]),
        ],
        "1 1 2 2 1 2",
    );
    case.isolation = isolation;
    engine.load(&case)?;
    let target = StmtRef { txn: 2, index: 1 };
    let mut samples = Vec::with_capacity(rounds);
    let mut missed = 0;
    for _ in 0..rounds {
        engine.reset()?;
        let h = execute(engine, &case, &ExecOptions::default())?;
        let at = |pred: &dyn Fn(&EventKind) -> bool| {
            h.events
                .iter()
                .find(|e| e.stmt == target && pred(&e.kind))
                .map(|e| e.at_us)
        };
        match (
            at(&|k| *k == EventKind::Submitted),
            at(&|k| matches!(k, EventKind::Blocked { .. })),
        ) {
            (Some(s), Some(b)) => samples.push(b.saturating_sub(s) as f64),
            _ => missed += 1,
        }
    }
    Ok((Distribution::of(samples), missed))
}

/// Time of `Engine::reset` for generated cases (each loaded once, reset `rounds` times).
pub fn reset_time(
    engine: &mut dyn Engine,
    gen: &GenConfig,
    cases: u64,
    rounds: usize,
) -> Result<Distribution, EngineError> {
    let mut samples = Vec::new();
    for i in 0..cases {
        let case = generate_case(1, i, gen);
        engine.load(&case)?;
        for _ in 0..rounds {
            let t = Instant::now();
            engine.reset()?;
            samples.push(duration_us(t.elapsed()));
        }
    }
    Ok(Distribution::of(samples))
}

fn duration_us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sqlite::SqliteEngine;

    #[test]
    fn distribution_quantiles() {
        let d = Distribution::of((1..=100).map(f64::from).collect());
        assert_eq!(
            (d.samples, d.median_us, d.p99_us, d.max_us),
            (100, 51.0, 99.0, 100.0)
        );
        assert_eq!(Distribution::of(vec![]).samples, 0);
    }

    #[test]
    fn sqlite_waits_are_detected_every_time() {
        let mut e = SqliteEngine::open(None).unwrap();
        let (d, missed) = blocked_latency(&mut e, Isolation::Serializable, 20).unwrap();
        assert_eq!((d.samples, missed), (20, 0));
        let r = reset_time(&mut e, &GenConfig::default(), 3, 5).unwrap();
        assert_eq!(r.samples, 15);
    }
}
