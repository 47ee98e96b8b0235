//! How each transaction starts: a start mode and access drawn from what the
//! engine's profile lists (`Features::start_modes`, `read_only`), and in a
//! mixed-level case its own level, from random streams of their own, so the
//! rest of a case is the one the same seed and index gave before these
//! existed.

use super::{GenConfig, SettingChoice};
use crate::model::{Begin, Features, Isolation, StartMode, Stmt, Txn, OUTERMOST_SAVEPOINT};
use crate::rng::Rng;

/// Mixed into the seed of the start-mode stream.
const STREAM: u64 = 0x5354_4152_545f_4d44; // "START_MD"

/// Mixed into the seed of the level stream.
const LEVELS: u64 = 0x4d49_5845_445f_4c56; // "MIXED_LV"

/// Mixed into the seed of the settings stream.
const SETTINGS: u64 = 0x5345_5454_494e_4753; // "SETTINGS"

/// Every session (explicit transaction or autocommit) draws one value of
/// each setting of `--setting`, from a stream of its own.
pub fn draw_settings(seed: u64, index: u64, choices: &[SettingChoice], txns: &mut [Txn]) {
    if choices.is_empty() {
        return;
    }
    let mut rng = Rng::new(seed ^ SETTINGS, index);
    for t in txns.iter_mut() {
        for c in choices {
            t.settings
                .insert(c.name.clone(), rng.pick(&c.values).clone());
        }
    }
}

/// In a case drawn to be mixed (`GenConfig::mixed_share`), every session
/// (explicit transaction or autocommit) draws its level from
/// `cfg.isolations`; `case_level` is the case's own (sessions at it name
/// none).
pub fn draw_levels(
    seed: u64,
    index: u64,
    cfg: &GenConfig,
    case_level: Isolation,
    txns: &mut [Txn],
) {
    let Some((num, den)) = cfg.mixed_share else {
        return;
    };
    let mut rng = Rng::new(seed ^ LEVELS, index);
    if cfg.isolations.len() < 2 || !rng.chance(num, den) {
        return;
    }
    for t in txns.iter_mut() {
        let level = *rng.pick(&cfg.isolations);
        t.isolation = (level != case_level).then_some(level);
    }
}

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
        let outermost = begin.mode == StartMode::Savepoint;
        // A transaction started by SAVEPOINT ends with RELEASE of it half
        // the time (its COMMIT); a ROLLBACK TO of an inner savepoint is its
        // RELEASE one time in three. In place: the other statements keep
        // their ops.
        let release_txn = rng.chance(1, 2);
        let release_inner = rng.chance(1, 3);
        let last = t.stmts.len() - 1;
        for (i, cs) in t.stmts.iter_mut().enumerate() {
            let end = i == last;
            cs.stmt = match &cs.stmt {
                Stmt::Commit | Stmt::Release(_) if end => match outermost && release_txn {
                    true => Stmt::Release(OUTERMOST_SAVEPOINT.into()),
                    false => Stmt::Commit,
                },
                Stmt::RollbackTo(n) | Stmt::Release(n) if !end => match release_inner {
                    true => Stmt::Release(n.clone()),
                    false => Stmt::RollbackTo(n.clone()),
                },
                other => other.clone(),
            };
        }
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
        // RELEASE of the outermost savepoint, of an inner one.
        let mut releases = (0, 0);
        for index in 0..200 {
            let case = generate_case(7, index, &cfg);
            let mut plain = case.clone();
            for t in plain.txns.iter_mut().filter(|t| !t.autocommit) {
                t.stmts[0].stmt = Stmt::begin();
            }
            case.validate().unwrap();
            for t in case.txns.iter().filter(|t| !t.autocommit) {
                for s in &t.stmts {
                    match &s.stmt {
                        Stmt::Release(n) if n == OUTERMOST_SAVEPOINT => releases.0 += 1,
                        Stmt::Release(_) => releases.1 += 1,
                        _ => {}
                    }
                }
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
                StartMode::Exclusive,
                StartMode::Savepoint
            ]
        );
        assert!(releases.0 > 0 && releases.1 > 0, "{releases:?}");
    }

    #[test]
    fn mixed_cases_draw_a_level_per_transaction_and_leave_the_rest_alone() {
        let levels = vec![Isolation::ReadCommitted, Isolation::Serializable];
        // The locking scans, key-change phantoms and subquery read views,
        // drawn after the levels, follow them: off both ways.
        let single = GenConfig {
            isolations: levels.clone(),
            features: Features {
                moved_row_scans: false,
                subquery_read_views: false,
                key_change_phantoms: false,
                ..Features::mysql()
            },
            ..GenConfig::default()
        };
        let mixed = GenConfig {
            mixed_share: Some((1, 1)),
            ..single.clone()
        };
        let (mut mixed_cases, mut both) = (0, 0);
        for index in 0..200 {
            let a = generate_case(9, index, &single);
            let mut b = generate_case(9, index, &mixed);
            assert!(!a.mixed_levels());
            mixed_cases += usize::from(b.mixed_levels());
            both += usize::from(b.levels().len() == 2);
            for t in &b.txns {
                assert!(levels.contains(&b.level_of(t.id)));
                assert_ne!(
                    t.isolation,
                    Some(b.isolation),
                    "the case's level is not named"
                );
            }
            for t in &mut b.txns {
                t.isolation = None;
            }
            assert_eq!(a, b, "only the levels differ");
        }
        assert!(
            mixed_cases > 100 && both == mixed_cases,
            "{mixed_cases} {both}"
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
