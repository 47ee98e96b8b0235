//! Properties of generated cases: determinism, validity, constraint-satisfying
//! data, type safety, determinism rules for LIMIT and locking, value reuse.

use super::check::check_case;
use super::*;
use crate::model::{Expr, OnConflict, Stmt, StmtRef, TestCase, Value};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

mod deferred;
mod keys;
mod snapshot_reads;
mod subquery_view;
mod turso_shapes;

fn cfg_for(features: Features) -> GenConfig {
    GenConfig {
        isolations: Isolation::ALL.to_vec(),
        features,
        ..GenConfig::default()
    }
}

fn all_configs() -> Vec<GenConfig> {
    vec![
        GenConfig::default(),
        cfg_for(Features::mysql()),
        cfg_for(Features::postgres()),
    ]
}

/// The statements of `c` that differ from those of `plain`, the same case
/// drawn with one stream off (same transactions and statement counts).
fn changed_statements(c: &TestCase, plain: &TestCase) -> Vec<StmtRef> {
    c.txns
        .iter()
        .zip(&plain.txns)
        .flat_map(|(t, p)| {
            assert_eq!(t.stmts.len(), p.stmts.len());
            (0..t.stmts.len())
                .filter(|&j| t.stmts[j].stmt != p.stmts[j].stmt)
                .map(|j| StmtRef {
                    txn: t.id,
                    index: j as u32,
                })
        })
        .collect()
}

fn json(c: &TestCase) -> String {
    serde_json::to_string(c).expect("serialise")
}

#[test]
fn same_seed_and_index_give_the_same_case() {
    for cfg in all_configs() {
        for i in 0..50 {
            assert_eq!(
                json(&generate_case(42, i, &cfg)),
                json(&generate_case(42, i, &cfg))
            );
        }
    }
}

#[test]
fn different_indexes_give_different_cases() {
    let cfg = GenConfig::default();
    let cases: HashSet<String> = (0..200)
        .map(|i| {
            let mut c = generate_case(7, i, &cfg);
            c.index = 0;
            json(&c)
        })
        .collect();
    assert_eq!(cases.len(), 200);
    let mut a = generate_case(1, 0, &cfg);
    let b = generate_case(2, 0, &cfg);
    a.seed = b.seed;
    assert_ne!(json(&a), json(&b));
}

#[test]
fn many_cases_are_valid_and_well_typed() {
    for cfg in all_configs() {
        for i in 0..2000 {
            check_case(&generate_case(99, i, &cfg), &cfg);
        }
    }
}

#[test]
fn small_and_degenerate_configs() {
    let cfg = GenConfig {
        max_txns: 1,
        max_stmts_per_txn: 1,
        max_tables: 1,
        max_rows: 0,
        isolations: Vec::new(),
        mixed_share: None,
        settings: Vec::new(),
        server_settings: Default::default(),
        features: Features {
            replace: false,
            locking_reads: false,
            savepoints: false,
            upsert: false,
            foreign_keys: false,
            fk_actions: false,
            fk_actions_on_checked_columns: false,
            deferrable_fks: false,
            set_constraints: false,
            start_modes: &[crate::model::StartMode::Default],
            read_only: false,
            deferrable: false,
            cursors: false,
            cursors_insensitive: false,
            checkpoints: false,
            echo_updates: false,
            subquery_locking_reads: false,
            key_moves: false,
            key_change_phantoms: false,
            moved_row_scans: false,
            subquery_read_views: false,
            deferred_key_shapes: false,
            parent_replaces: false,
            null_side_subqueries: false,
            snapshot_index_reads: false,
        },
    };
    for i in 0..300 {
        let c = generate_case(5, i, &cfg);
        c.validate().expect("valid");
        assert_eq!(c.isolation, Isolation::Serializable);
        assert_eq!(c.txns.len(), 1);
        assert!(c.data.iter().all(|d| d.rows.is_empty()));
    }
}

/// Every literal in an expression tree.
fn literals<'e>(e: &'e Expr, out: &mut Vec<&'e Value>) {
    match e {
        Expr::Lit(v) => out.push(v),
        Expr::Col { .. }
        | Expr::Excluded(_)
        | Expr::Agg { arg: None, .. }
        | Expr::Exists { .. } => {}
        Expr::Agg { arg: Some(a), .. } | Expr::Not(a) | Expr::IsNull { expr: a, .. } => {
            literals(a, out)
        }
        Expr::InSubquery { expr, .. } => literals(expr, out),
        Expr::Bin { left, right, .. } | Expr::Concat(left, right) | Expr::Coalesce(left, right) => {
            literals(left, out);
            literals(right, out);
        }
        Expr::InList { expr, list, .. } => {
            literals(expr, out);
            list.iter().for_each(|x| literals(x, out));
        }
        Expr::Between { expr, low, high } => {
            literals(expr, out);
            literals(low, out);
            literals(high, out);
        }
    }
}

#[test]
fn update_and_delete_mostly_target_existing_values() {
    let cfg = cfg_for(Features::postgres());
    let (mut total, mut hits) = (0, 0);
    for i in 0..1000 {
        let case = generate_case(3, i, &cfg);
        // values present in each table: initial rows plus rows inserted by the case
        let mut present: HashMap<&str, HashSet<Value>> = HashMap::new();
        for d in &case.data {
            present
                .entry(&d.table)
                .or_default()
                .extend(d.rows.iter().flat_map(|r| r.values.clone()));
        }
        for s in case.txns.iter().flat_map(|t| &t.stmts) {
            if let Stmt::Insert(ins) = &s.stmt {
                let mut vals = Vec::new();
                ins.rows
                    .iter()
                    .flatten()
                    .for_each(|e| literals(e, &mut vals));
                present
                    .entry(&ins.table)
                    .or_default()
                    .extend(vals.into_iter().cloned());
            }
        }
        for s in case.txns.iter().flat_map(|t| &t.stmts) {
            let (table, w) = match &s.stmt {
                Stmt::Update(u) => (&u.table, &u.where_),
                Stmt::Delete(d) => (&d.table, &d.where_),
                _ => continue,
            };
            total += 1;
            let mut vals = Vec::new();
            if let Some(w) = w {
                literals(w, &mut vals);
            }
            let set = present.get(table.as_str());
            if vals
                .iter()
                .any(|v| !v.is_null() && set.is_some_and(|s| s.contains(*v)))
            {
                hits += 1;
            }
        }
    }
    eprintln!("STATS where-hits {hits}/{total}");
    assert!(total > 500);
    assert!(
        hits * 10 > total * 5,
        "only {hits} of {total} hit existing values"
    );
}

#[test]
fn feature_coverage() {
    // Each generator feature shows up in a modest sample (MySQL has them all).
    let cfg = cfg_for(Features::mysql());
    let mut seen: HashSet<&str> = HashSet::new();
    for i in 0..500 {
        let case = generate_case(11, i, &cfg);
        let t = &case.schema.tables;
        let mark = |c: bool, k: &'static str, s: &mut HashSet<&str>| {
            if c {
                s.insert(k);
            }
        };
        mark(
            t.iter().any(|t| t.primary_key.len() == 2),
            "composite pk",
            &mut seen,
        );
        mark(
            t.iter().any(|t| t.primary_key.is_empty()),
            "no pk",
            &mut seen,
        );
        mark(
            t.iter().any(|t| !t.foreign_keys.is_empty()),
            "fk",
            &mut seen,
        );
        mark(t.iter().any(|t| !t.checks.is_empty()), "check", &mut seen);
        mark(t.iter().any(|t| !t.uniques.is_empty()), "unique", &mut seen);
        mark(
            t.iter().any(|t| t.indexes.iter().any(|i| i.unique)),
            "unique index",
            &mut seen,
        );
        mark(
            case.txns.iter().any(|t| t.autocommit),
            "autocommit",
            &mut seen,
        );
        for s in case.txns.iter().flat_map(|t| &t.stmts) {
            match &s.stmt {
                Stmt::Select(sel) => {
                    mark(sel.limit.is_some(), "limit", &mut seen);
                    mark(sel.lock.is_some(), "lock", &mut seen);
                    mark(sel.from.len() == 2, "join", &mut seen);
                    mark(!sel.group_by.is_empty(), "group by", &mut seen);
                    mark(sel.distinct, "distinct", &mut seen);
                    mark(
                        sel.where_.as_ref().is_some_and(|w| w.has_subquery()),
                        "subquery",
                        &mut seen,
                    );
                }
                Stmt::Insert(i) => {
                    mark(
                        matches!(i.on_conflict, OnConflict::Update { .. }),
                        "upsert",
                        &mut seen,
                    );
                    mark(i.on_conflict == OnConflict::Replace, "replace", &mut seen);
                    mark(i.rows.len() > 1, "multi-row", &mut seen);
                }
                Stmt::RollbackTo(_) => mark(true, "rollback to", &mut seen),
                Stmt::Rollback => mark(true, "rollback", &mut seen),
                _ => {}
            }
        }
    }
    assert_eq!(seen.len(), 18, "{seen:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn prop_valid_and_deterministic(
        seed: u64, index: u64, txns in 1u32..8, stmts in 1u32..8, tables in 1u32..5,
        rows in 0u32..15, which in 0usize..3,
    ) {
        let mut cfg = all_configs().swap_remove(which);
        cfg.max_txns = txns;
        cfg.max_stmts_per_txn = stmts;
        cfg.max_tables = tables;
        cfg.max_rows = rows;
        let a = generate_case(seed, index, &cfg);
        check_case(&a, &cfg);
        prop_assert_eq!(json(&a), json(&generate_case(seed, index, &cfg)));
    }
}

#[test]
fn cursors_are_drawn_only_where_the_profile_lists_them() {
    let count = |features: Features| {
        let cfg = cfg_for(features);
        (0..300)
            .map(|i| generate_case(3, i, &cfg))
            .inspect(|c| check_case(c, &cfg))
            .filter(|c| !crate::model::cursor::cursors(c).is_empty())
            .count()
    };
    let sqlite = count(Features::sqlite());
    assert!(sqlite > 30, "{sqlite} of 300 SQLite cases with a cursor");
    assert_eq!(count(Features::mysql()), 0);
    // Each cursor is stepped at least once and closed.
    let cfg = cfg_for(Features::sqlite());
    for i in 0..300 {
        for c in crate::model::cursor::cursors(&generate_case(3, i, &cfg)) {
            assert!(!c.judged.is_empty() || !c.unjudged.is_empty(), "{c:?}");
            assert!(c.close.is_some(), "{c:?}");
        }
    }
}

/// One case in four checkpoints after its set-up where the engine can, on a
/// stream of its own: the case is otherwise the one the same seed gave
/// without checkpoints.
#[test]
fn one_case_in_four_checkpoints_where_the_engine_can() {
    let sqlite = cfg_for(Features::sqlite());
    let without = cfg_for(Features {
        checkpoints: false,
        ..Features::sqlite()
    });
    let mut checkpointed = 0;
    for i in 0..400 {
        let mut c = generate_case(3, i, &sqlite);
        if c.checkpoint {
            checkpointed += 1;
        }
        c.checkpoint = false;
        assert_eq!(c, generate_case(3, i, &without));
    }
    assert!((70..130).contains(&checkpointed), "{checkpointed} of 400");
    let mysql = cfg_for(Features::mysql());
    assert!((0..100).all(|i| !generate_case(3, i, &mysql).checkpoint));
}

/// Where the profile asks for them, one UPDATE in three (of a transaction
/// after one with an UPDATE of constants) repeats such an UPDATE of an
/// earlier transaction, on a stream of its own: every other statement is the
/// one the same seed gave without echoes.
#[test]
fn echoed_updates_repeat_an_earlier_transactions_update_of_constants() {
    // The locking reads' subqueries, the key moves and the key-change
    // phantoms, drawn after the echoes, follow the UPDATEs: off both ways.
    let mysql = cfg_for(Features {
        subquery_locking_reads: false,
        key_moves: false,
        key_change_phantoms: false,
        moved_row_scans: false,
        subquery_read_views: false,
        ..Features::mysql()
    });
    let without = cfg_for(Features {
        echo_updates: false,
        ..mysql.features
    });
    let (mut echoed, mut cases_with) = (0, 0);
    for i in 0..400 {
        let c = generate_case(3, i, &mysql);
        let plain = generate_case(3, i, &without);
        c.validate().expect("valid");
        assert_eq!(c.submit_order, plain.submit_order);
        assert_eq!(c.txns.len(), plain.txns.len());
        let mut here = 0;
        for (ti, (t, p)) in c.txns.iter().zip(&plain.txns).enumerate() {
            assert_eq!(t.stmts.len(), p.stmts.len());
            for (s, ps) in t.stmts.iter().zip(&p.stmts) {
                assert_eq!(s.op, ps.op);
                if s.stmt == ps.stmt {
                    continue;
                }
                // Only an UPDATE changes, into an earlier transaction's
                // UPDATE of constants.
                assert!(matches!(ps.stmt, Stmt::Update(_)), "{:?}", ps.stmt);
                let Stmt::Update(u) = &s.stmt else {
                    panic!("an UPDATE became {:?}", s.stmt)
                };
                assert!(u
                    .assignments
                    .iter()
                    .all(|a| matches!(a.value, Expr::Lit(_))));
                assert!(plain.txns[..ti]
                    .iter()
                    .flat_map(|e| &e.stmts)
                    .any(|e| e.stmt == s.stmt));
                here += 1;
            }
        }
        echoed += here;
        cases_with += usize::from(here > 0);
    }
    assert!(
        (40..200).contains(&cases_with),
        "{cases_with} of 400 cases, {echoed} UPDATEs"
    );
}

/// The locking-read subqueries come from a stream of their own: with them
/// off, every case is the same but for SELECTs without a subquery that lock
/// (or, in autocommit transactions, may lock), and each changed one only
/// gained a subquery conjunct (and a locking clause).
#[test]
fn locking_reads_gain_a_subquery_on_a_stream_of_their_own() {
    // The subquery read views, drawn later, replace whole statements: off
    // both ways.
    let mysql = cfg_for(Features {
        subquery_read_views: false,
        ..Features::mysql()
    });
    let without = cfg_for(Features {
        subquery_locking_reads: false,
        ..mysql.features
    });
    let (mut locking, mut gained, mut gained_autocommit) = (0, 0, 0);
    // IN subqueries on a written column, of those where the table has one,
    // and how many a uniform pick of the column would give.
    let mut correlated_on_written = (0.0, 0.0, 0.0);
    for i in 0..400 {
        let c = generate_case(3, i, &mysql);
        let plain = generate_case(3, i, &without);
        c.validate().expect("valid");
        assert_eq!(c.schema, plain.schema);
        assert_eq!(c.submit_order, plain.submit_order);
        for (t, p) in c.txns.iter().zip(&plain.txns) {
            assert_eq!(t.stmts.len(), p.stmts.len());
            for (s, ps) in t.stmts.iter().zip(&p.stmts) {
                if let Stmt::Select(q) = &ps.stmt {
                    locking += usize::from(q.lock.is_some());
                }
                if s.stmt == ps.stmt {
                    continue;
                }
                let (Stmt::Select(q), Stmt::Select(pq)) = (&s.stmt, &ps.stmt) else {
                    panic!("{:?} became {:?}", ps.stmt, s.stmt)
                };
                // A locking read, or an autocommit SELECT that now locks.
                assert!(
                    pq.lock.is_some() || (t.autocommit && q.lock.is_some()),
                    "{pq:?}"
                );
                assert!(!pq.where_.as_ref().is_some_and(Expr::has_subquery));
                assert!(q.where_.as_ref().is_some_and(Expr::has_subquery), "{q:?}");
                gained_autocommit += usize::from(pq.lock.is_none());
                let mut back = q.clone();
                back.lock = pq.lock;
                back.where_ = match q.where_.clone() {
                    Some(Expr::Bin { left, .. }) if pq.where_.is_some() => Some(*left),
                    _ => None,
                };
                assert_eq!(&back, pq, "only the WHERE gained a conjunct");
                gained += 1;
                // `b.c IN (SELECT sq.c ...)`: is `c` a column an UPDATE of
                // the case writes?
                let added = match q.where_.as_ref() {
                    Some(Expr::Bin { right, .. }) if pq.where_.is_some() => right.as_ref(),
                    Some(w) => w,
                    None => unreachable!(),
                };
                if let Expr::InSubquery { expr, .. } = added {
                    let Expr::Col { name, .. } = expr.as_ref() else {
                        panic!("{added:?}")
                    };
                    let written: Vec<&str> = c
                        .txns
                        .iter()
                        .flat_map(|t| &t.stmts)
                        .filter_map(|s| match &s.stmt {
                            Stmt::Update(u) if u.table == q.from[0].table => Some(u),
                            _ => None,
                        })
                        .flat_map(|u| u.assignments.iter().map(|a| a.column.as_str()))
                        .collect();
                    if !written.is_empty() {
                        let table = c.schema.tables.iter().find(|t| t.name == q.from[0].table);
                        let columns = table.unwrap().columns.len() as f64;
                        let mut distinct = written.clone();
                        distinct.sort_unstable();
                        distinct.dedup();
                        correlated_on_written.0 +=
                            f64::from(u8::from(written.contains(&name.as_str())));
                        correlated_on_written.1 += 1.0;
                        correlated_on_written.2 += distinct.len() as f64 / columns;
                    }
                }
            }
        }
    }
    assert!(
        locking > 0 && gained_autocommit > 0 && (locking / 4..locking).contains(&gained),
        "{gained} of {locking} locking reads gained a subquery, {gained_autocommit} autocommit"
    );
    // Three times in four on a written column where the table has one (and
    // by chance the other time): well above a uniform pick.
    let (on_written, of, uniform) = correlated_on_written;
    assert!(
        of > 20.0 && on_written - uniform >= (of - uniform) * 0.6,
        "{on_written} of {of} IN subqueries correlated on a written column, {uniform:.1} by chance"
    );
}
