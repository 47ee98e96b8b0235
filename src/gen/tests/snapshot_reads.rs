//! Locking reads through a secondary index after a wait, with
//! `innodb_snapshot_isolation=ON` (`gen::snapshot_reads`, MariaDB).

use super::*;
use crate::model::LockMode;

/// Where sessions draw `innodb_snapshot_isolation=ON,OFF`, the shape comes
/// from a stream of its own: with it off, every case is the same but for
/// up to three statements: A's plain read of a table, B's UPDATE of one of
/// its indexed columns by the key, submitted after it, and A's locking read
/// of exactly an index's columns, submitted after B's UPDATE and before
/// B's COMMIT, A at REPEATABLE READ or SERIALIZABLE with the variable ON.
#[test]
fn snapshot_index_reads_wait_for_a_change_of_an_indexed_column_on_a_stream_of_their_own() {
    let settings = vec!["innodb_snapshot_isolation=ON,OFF".parse().unwrap()];
    let with = GenConfig {
        settings: settings.clone(),
        ..cfg_for(Features::mysql())
    };
    let without = GenConfig {
        settings,
        ..cfg_for(Features {
            snapshot_index_reads: false,
            ..Features::mysql()
        })
    };
    // Without the setting the draw never fires.
    for i in 0..200 {
        let plain = cfg_for(Features::mysql());
        let off = cfg_for(Features {
            snapshot_index_reads: false,
            ..Features::mysql()
        });
        assert_eq!(generate_case(7, i, &plain), generate_case(7, i, &off));
    }
    let mut shapes = 0;
    for i in 0..800 {
        let c = generate_case(7, i, &with);
        let plain = generate_case(7, i, &without);
        c.validate().expect("valid");
        assert_eq!(c.schema, plain.schema);
        assert_eq!(c.submit_order, plain.submit_order);
        let changed = changed_statements(&c, &plain);
        if changed.is_empty() {
            continue;
        }
        shapes += 1;
        assert!(changed.len() <= 3, "{changed:?}");
        let pos = |r: StmtRef| c.submit_order.iter().position(|x| *x == r).unwrap();
        // A's locking read: exactly an index's columns.
        let reads: Vec<StmtRef> = changed
            .iter()
            .copied()
            .filter(|r| matches!(&c.stmt(*r).unwrap().stmt, Stmt::Select(s) if s.lock.is_some()))
            .collect();
        let Some(&read) = reads.first() else { continue };
        let Stmt::Select(s) = &c.stmt(read).unwrap().stmt else {
            unreachable!()
        };
        assert!(matches!(
            s.lock,
            Some(LockMode::ForShare | LockMode::ForUpdate)
        ));
        let t = c.schema.table(&s.from[0].table).unwrap();
        let cols: Vec<String> = s
            .items
            .iter()
            .map(|i| match &i.expr {
                Expr::Col { name, .. } => name.clone(),
                e => panic!("{e:?}"),
            })
            .collect();
        assert!(
            t.indexes.iter().any(|ix| ix.columns == cols),
            "{cols:?} in {t:?}"
        );
        let a = c.txn(read.txn).unwrap();
        assert_eq!(
            a.settings
                .get("innodb_snapshot_isolation")
                .map(String::as_str),
            Some("ON")
        );
        assert!(matches!(
            a.isolation.unwrap_or(c.isolation),
            Isolation::RepeatableRead | Isolation::Serializable
        ));
        // B's UPDATE of an indexed column, before the read; B commits after.
        let fits = c.txns.iter().filter(|b| b.id != a.id).any(|b| {
            let commit = b.stmts.iter().position(|x| x.stmt == Stmt::Commit);
            (0..b.stmts.len()).any(|j| {
                let r = StmtRef {
                    txn: b.id,
                    index: j as u32,
                };
                matches!(&b.stmts[j].stmt, Stmt::Update(u) if u.table == t.name
                    && u.assignments.len() == 1 && cols.contains(&u.assignments[0].column))
                    && pos(r) < pos(read)
                    && commit.is_some_and(|k| {
                        pos(StmtRef {
                            txn: b.id,
                            index: k as u32,
                        }) > pos(read)
                    })
            })
        });
        assert!(fits, "{c:?}");
    }
    eprintln!("{shapes} shapes");
    assert!((5..400).contains(&shapes), "{shapes} shapes");
}

/// A session that sets nothing runs with the server's value: on a server
/// with `innodb_snapshot_isolation` ON by default (MariaDB 11.8) the shape
/// is drawn without `--setting`; on one with it OFF, or where every session
/// sets OFF, it never is.
#[test]
fn snapshot_index_reads_count_the_server_default_as_the_sessions_setting() {
    let server = |v: &str| Settings::from([("innodb_snapshot_isolation".into(), v.into())]);
    let cfg = |server_settings: Settings, snapshot_index_reads: bool, settings: &str| GenConfig {
        server_settings,
        settings: match settings {
            "" => Vec::new(),
            s => vec![s.parse().unwrap()],
        },
        ..cfg_for(Features {
            snapshot_index_reads,
            ..Features::mysql()
        })
    };
    let drawn = |server_settings: Settings, settings: &str| {
        (0..200)
            .filter(|&i| {
                let c = generate_case(7, i, &cfg(server_settings.clone(), true, settings));
                c != generate_case(7, i, &cfg(server_settings.clone(), false, settings))
            })
            .count()
    };
    let on = drawn(server("ON"), "");
    assert!(on > 0, "no shape on a server with the variable ON");
    assert_eq!(drawn(server("OFF"), ""), 0);
    assert_eq!(drawn(Settings::new(), ""), 0);
    assert_eq!(
        drawn(server("ON"), "innodb_snapshot_isolation=OFF"),
        0,
        "sessions that set OFF on an ON server"
    );
}
