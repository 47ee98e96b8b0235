//! How each transaction starts: a start mode and access drawn from what the
//! engine's profile lists (`Features::start_modes`, `read_only`), from a
//! random stream of their own, so the rest of a case is the one the same seed
//! and index gave before start modes existed.

use crate::model::{Begin, Features, Stmt, Txn};
use crate::rng::Rng;

/// Mixed into the seed of the start-mode stream.
const STREAM: u64 = 0x5354_4152_545f_4d44; // "START_MD"

/// Draws the BEGIN options of every explicit transaction of case `index`.
pub fn draw_begins(seed: u64, index: u64, features: &Features, txns: &mut [Txn]) {
    let mut rng = Rng::new(seed ^ STREAM, index);
    for t in txns.iter_mut().filter(|t| !t.autocommit) {
        let writes = t.stmts.iter().any(|s| s.stmt.kind().is_write());
        let Some(first) = t.stmts.first_mut() else {
            continue;
        };
        let Stmt::Begin(begin) = &mut first.stmt else {
            continue;
        };
        *begin = draw(&mut rng, features, writes);
    }
}

/// Half the transactions start in the engine's first mode, the others in one
/// of the rest; a transaction that writes is READ ONLY 1 time in 20 (its
/// writes must fail), one that only reads 1 in 4.
fn draw(rng: &mut Rng, features: &Features, writes: bool) -> Begin {
    let modes = features.start_modes;
    let mode = match modes.split_first() {
        Some((first, rest)) if rest.is_empty() || rng.chance(1, 2) => *first,
        Some((_, rest)) => *rng.pick(rest),
        None => Default::default(),
    };
    let read_only = features.read_only
        && if writes {
            rng.chance(1, 20)
        } else {
            rng.chance(1, 4)
        };
    Begin {
        mode,
        read_only,
        deferrable: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{generate_case, GenConfig};
    use crate::model::StartMode;

    #[test]
    fn modes_are_drawn_from_the_profile_and_leave_the_rest_of_the_case_alone() {
        let cfg = GenConfig::default();
        let mut seen = std::collections::BTreeSet::new();
        for index in 0..200 {
            let case = generate_case(7, index, &cfg);
            let mut plain = case.clone();
            for t in plain.txns.iter_mut().filter(|t| !t.autocommit) {
                t.stmts[0].stmt = Stmt::begin();
            }
            for t in case.txns.iter().filter(|t| !t.autocommit) {
                let b = t.begin();
                assert!(cfg.features.start_modes.contains(&b.mode), "{b:?}");
                assert!(!b.read_only, "SQLite has no READ ONLY");
                seen.insert(b.mode);
            }
            // Stripping the modes gives the case of the old generator: the
            // modes come from their own stream.
            let mut again = case.clone();
            draw_begins(7, index, &cfg.features, &mut again.txns);
            assert_eq!(again, case);
            assert_eq!(plain.stmt_count(), case.stmt_count());
        }
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            vec![
                StartMode::Default,
                StartMode::Deferred,
                StartMode::Immediate,
                StartMode::Exclusive
            ]
        );
    }

    #[test]
    fn read_only_is_drawn_where_the_engine_has_it() {
        let cfg = GenConfig {
            features: Features::postgres(),
            ..GenConfig::default()
        };
        let (mut ro, mut all) = (0, 0);
        for index in 0..300 {
            for t in generate_case(3, index, &cfg)
                .txns
                .iter()
                .filter(|t| !t.autocommit)
            {
                all += 1;
                ro += usize::from(t.begin().read_only);
                assert_eq!(t.begin().mode, StartMode::Default);
            }
        }
        assert!(ro * 30 > all && ro * 5 < all, "{ro} of {all}");
    }
}
