//! Ablation: pattern-guided vs random generation. For each engine (MariaDB and
//! PostgreSQL at REPEATABLE READ) and anomaly (lost update, write skew, read
//! skew), runs cases until the `graph` oracle first reports the anomaly
//! (bounded by a case count and a duration) and prints time and cases.
//!
//! `cargo run --release --example ablation -- MYSQL_URL PG_URL [MAX_CASES] [MAX_SECS]`

use std::time::{Duration, Instant};
use txfuzz::campaign::{features_for, run_case};
use txfuzz::exec::ExecOptions;
use txfuzz::gen::pattern::{catalogue, Generation};
use txfuzz::gen::GenConfig;
use txfuzz::model::Isolation;
use txfuzz::oracle::{CheckStats, OracleKind};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let urls = [("MariaDB", &args[0]), ("PostgreSQL", &args[1])];
    let max_cases: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let max_time = Duration::from_secs(args.get(3).and_then(|s| s.parse().ok()).unwrap_or(120));
    println!("| engine (REPEATABLE READ) | anomaly | generator | found | cases | time |");
    println!("|---|---|---|---|---|---|");
    for (name, url) in urls {
        let mut e = txfuzz::engine::open(Some(url)).expect("engine");
        let cfg = GenConfig {
            isolations: vec![Isolation::RepeatableRead],
            features: features_for(e.dialect()),
            ..GenConfig::default()
        };
        for anomaly in ["lost-update", "write-skew", "read-skew"] {
            let pattern = catalogue::builtin(anomaly).unwrap().pattern();
            for generation in [Generation::Pattern(vec![pattern]), Generation::Random] {
                let start = Instant::now();
                let mut found = None;
                let mut index = 0;
                while index < max_cases && start.elapsed() < max_time {
                    let (case, _) = generation.case(1, index, &cfg);
                    index += 1;
                    let (_, f) = run_case(
                        e.as_mut(),
                        &case,
                        &[OracleKind::Crash, OracleKind::Graph],
                        &ExecOptions::default(),
                        &mut CheckStats::default(),
                    )
                    .expect("run");
                    if f.iter().any(|f| f.kind == anomaly) {
                        found = Some(start.elapsed());
                        break;
                    }
                }
                let (ok, time) = match found {
                    Some(t) => ("yes", format!("{:.2} s", t.as_secs_f64())),
                    None => ("no", format!("> {:.0} s", start.elapsed().as_secs_f64())),
                };
                println!(
                    "| {name} | {anomaly} | {} | {ok} | {index} | {time} |",
                    generation.name()
                );
            }
        }
    }
}
