//! Case and finding files come from strangers: nothing in them reaches SQL
//! unchecked. A property test puts hostile strings (quotes, backticks, `;`,
//! comments, NUL, look-alike letters, `ATTACH`, keywords, very long names)
//! into any string of otherwise valid generated cases, one at a time, and
//! asks of each file: either txfuzz refuses it on load with a one-line
//! error, or every SQL text txfuzz renders from it parses, with
//! sqlparser-rs in the engine's dialect, as exactly one statement that
//! names no table the case does not declare.

mod common;

use proptest::prelude::*;
use serde_json::Value as Json;
use sqlparser::ast::visit_relations;
use sqlparser::dialect::{MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::OnceLock;
use txfuzz::finding::load_case_file;
use txfuzz::gen::{generate_case, GenConfig};
use txfuzz::instrument::{prepare_case, Target, UpdateCapture};
use txfuzz::model::{Isolation, TestCase};
use txfuzz::sql::{self, Dialect, Layout};

/// The engines whose SQL is checked, with their dialect and capture.
const ENGINES: &[(&str, Dialect)] = &[
    ("sqlite", Dialect::Sqlite),
    ("mysql", Dialect::Mysql),
    ("postgres", Dialect::Postgres),
];

/// Generated cases per engine, as JSON.
fn base_cases() -> &'static Vec<Vec<Json>> {
    static CASES: OnceLock<Vec<Vec<Json>>> = OnceLock::new();
    CASES.get_or_init(|| {
        ENGINES
            .iter()
            .map(|(name, _)| {
                let kind = txfuzz::engine::registry::kind(name).unwrap();
                let gen = GenConfig {
                    isolations: vec![Isolation::ReadCommitted, Isolation::Serializable],
                    features: (kind.profile)(&BTreeMap::new()).features,
                    ..GenConfig::default()
                };
                (0..12)
                    .map(|i| serde_json::to_value(generate_case(58, i, &gen)).unwrap())
                    .collect()
            })
            .collect()
    })
}

/// JSON pointers of every string in `v` (object keys are not values).
fn string_leaves(v: &Json, at: String, out: &mut Vec<String>) {
    match v {
        Json::String(_) => out.push(at),
        Json::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                string_leaves(x, format!("{at}/{i}"), out);
            }
        }
        Json::Object(m) => {
            for (k, x) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                string_leaves(x, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// Every SQL text txfuzz renders from `case` for `dialect`: schema in both
/// layouts, capture triggers, initial rows, state reads, session set-up and
/// settings, and each statement as instrumented and as written.
fn rendered(dialect: Dialect, case: &TestCase) -> Vec<String> {
    let mut out = Vec::new();
    for layout in [Layout::Instrumented, Layout::Plain] {
        for t in &case.schema.tables {
            out.extend(sql::create_table_as(dialect, t, layout));
            out.push(sql::select_state_as(dialect, t, layout));
            if let Some(d) = case.data.iter().find(|d| d.table == t.name) {
                out.extend(sql::insert_rows_as(dialect, t, &d.rows, layout));
            }
        }
    }
    if dialect == Dialect::Mysql {
        out.extend(case.schema.tables.iter().flat_map(sql::capture_triggers));
    }
    for t in &case.txns {
        out.extend(sql::session_setup(
            dialect,
            t.isolation.unwrap_or(case.isolation),
        ));
        out.extend(sql::session_settings(dialect, &t.settings));
    }
    let captures = match dialect {
        Dialect::Mysql => vec![
            UpdateCapture::UserVariable { returning: true },
            UpdateCapture::UserVariable { returning: false },
        ],
        _ => vec![Target::from(dialect).update_capture],
    };
    for update_capture in captures {
        let target = Target {
            dialect,
            update_capture,
        };
        let prepared: BTreeMap<_, _> = prepare_case(target, case).into_iter().collect();
        for p in prepared.into_values() {
            out.extend([p.sql, p.plain]);
            out.extend(p.pre);
            out.extend(p.capture);
        }
    }
    out.retain(|s| !s.trim().is_empty());
    out
}

/// Why `text` is not one statement over `declared` tables, if it is not.
fn one_statement(dialect: Dialect, text: &str, declared: &[String]) -> Result<(), String> {
    let parsed = match dialect {
        Dialect::Sqlite => Parser::parse_sql(&SQLiteDialect {}, text),
        Dialect::Mysql => Parser::parse_sql(&MySqlDialect {}, text),
        Dialect::Postgres => Parser::parse_sql(&PostgreSqlDialect {}, text),
    };
    let stmts = parsed.map_err(|e| format!("does not parse: {e}"))?;
    if stmts.len() != 1 {
        return Err(format!("{} statements", stmts.len()));
    }
    let mut stray = None;
    let _ = visit_relations(&stmts, |rel| {
        let name = rel.to_string();
        if !declared.iter().any(|d| d.eq_ignore_ascii_case(&name)) {
            stray = Some(name);
            return ControlFlow::Break(());
        }
        ControlFlow::<()>::Continue(())
    });
    match stray {
        Some(name) => Err(format!(
            "names table {name}, which the case does not declare"
        )),
        None => Ok(()),
    }
}

/// The token classes of `text`: what a value from a file may change is a
/// token's content, never the sequence of kinds (a name stays a word, a
/// number a number or word, a text one quoted string).
fn token_classes(dialect: Dialect, text: &str) -> Result<Vec<String>, String> {
    let tokens = match dialect {
        Dialect::Sqlite => Tokenizer::new(&SQLiteDialect {}, text).tokenize(),
        Dialect::Mysql => Tokenizer::new(&MySqlDialect {}, text).tokenize(),
        Dialect::Postgres => Tokenizer::new(&PostgreSqlDialect {}, text).tokenize(),
    }
    .map_err(|e| format!("does not tokenize: {e}"))?;
    let tokens: Vec<Token> = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(w) if w.to_string().trim().is_empty()))
        .collect();
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let next_is_number = matches!(tokens.get(i + 1), Some(Token::Number(..)));
        out.push(match t {
            Token::Minus if next_is_number => continue,
            Token::Word(_) | Token::Number(..) => "atom".to_string(),
            // The variant's name, not its content.
            other => format!("{other:?}")
                .split(['(', ' ', '{'])
                .next()
                .unwrap_or_default()
                .to_string(),
        });
    }
    Ok(out)
}

/// What must hold of a file derived from `base` by one string: refused in
/// one line, or every text keeps `base`'s token structure, and a text that
/// parsed as one statement over declared tables still does.
fn admitted_or_refused(engine: usize, case_ix: usize, json: &Json) -> Result<(), String> {
    let (_, dialect) = ENGINES[engine];
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("case.json");
    std::fs::write(&path, serde_json::to_vec(json).unwrap()).map_err(|e| e.to_string())?;
    let file = match load_case_file(&path) {
        Ok(f) => f,
        Err(e) if e.contains('\n') => return Err(format!("refusal of more than one line: {e}")),
        Err(_) => return Ok(()),
    };
    let case = file.case();
    let base: TestCase = serde_json::from_value(base_cases()[engine][case_ix].clone()).unwrap();
    let declared: Vec<String> = case.schema.tables.iter().map(|t| t.name.clone()).collect();
    let (texts, base_texts) = (rendered(dialect, case), rendered(dialect, &base));
    if texts.len() != base_texts.len() {
        return Err(format!(
            "{} texts, {} before",
            texts.len(),
            base_texts.len()
        ));
    }
    for (text, before) in texts.iter().zip(&base_texts) {
        let classes = token_classes(dialect, text).map_err(|e| format!("{e}: {text}"))?;
        if classes != token_classes(dialect, before).unwrap() {
            return Err(format!("token structure changed: {before} -> {text}"));
        }
        let base_declared: Vec<String> =
            base.schema.tables.iter().map(|t| t.name.clone()).collect();
        if one_statement(dialect, before, &base_declared).is_ok() {
            one_statement(dialect, text, &declared).map_err(|e| format!("{e}: {text}"))?;
        }
    }
    Ok(())
}

/// Strings an attacker would try, and any string at all.
fn hostile() -> impl Strategy<Value = String> {
    let known = prop::sample::select(vec![
        "t0; DROP TABLE canary; --",
        "t0`; DROP TABLE canary; -- ",
        "t0\"; DROP TABLE canary; --",
        "x' OR '1'='1",
        "1; DROP TABLE canary",
        "1.5); DROP TABLE canary; --",
        "1e5",
        "-0.25",
        "c0 /* */",
        "c0 -- ",
        "c0\nDROP TABLE canary",
        "t0\0",
        "t\u{0430}0",
        "a\\",
        "a\\'; DROP TABLE canary; --",
        "x; ATTACH DATABASE '/tmp/txfuzz-evil.db' AS evil",
        "select",
        "ATTACH",
        "key",
        "ON",
        "8",
        "READ-COMMITTED",
    ])
    .prop_map(str::to_string);
    let long = "[a-z]{49,80}";
    prop_oneof![4 => known, 1 => long, 3 => any::<String>(), 2 => "[ -~]{0,24}"]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("TXFUZZ_HOSTILE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// One string of a generated case replaced by a hostile one: refused on
    /// load, or harmless in every SQL text txfuzz renders.
    #[test]
    fn a_hostile_string_is_refused_or_stays_inside_its_token(
        engine in 0..ENGINES.len(),
        case_ix in 0..12usize,
        pick in any::<prop::sample::Index>(),
        value in hostile(),
    ) {
        let base = &base_cases()[engine][case_ix];
        let mut leaves = Vec::new();
        string_leaves(base, String::new(), &mut leaves);
        let at = pick.get(&leaves);
        let mut json = base.clone();
        *json.pointer_mut(at).unwrap() = Json::String(value.clone());
        if let Err(e) = admitted_or_refused(engine, case_ix, &json) {
            return Err(TestCaseError::fail(format!("{} at {at} = {value:?}: {e}", ENGINES[engine].0)));
        }
    }
}

/// The generated cases themselves keep their structure and parse (the
/// property's baseline: a file that changes nothing is admitted).
#[test]
fn the_unchanged_cases_are_admitted() {
    for engine in 0..ENGINES.len() {
        for case_ix in 0..12 {
            let json = base_cases()[engine][case_ix].clone();
            admitted_or_refused(engine, case_ix, &json).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("case.json");
            std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
            load_case_file(&path).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The attacks a fault probe made work before the gate (issue 58): a
/// table, column, index or savepoint name, a `real` in the initial rows or
/// in an UPDATE, a session setting's value, and SQLite's `ATTACH` through
/// a table name; each as a JSON pointer into a key/value case and the
/// value put there.
fn vectors() -> Vec<(&'static str, &'static str, Json)> {
    use serde_json::json;
    let drop = "x; DROP TABLE txfuzz_canary; --";
    vec![
        ("table name", "/schema/tables/0/name", json!(drop)),
        (
            "column name",
            "/schema/tables/0/columns/1/name",
            json!(drop),
        ),
        (
            "index name",
            "/schema/tables/0/indexes",
            json!([{ "name": drop, "columns": ["v"] }]),
        ),
        (
            "real in the initial rows",
            "/data/0/rows/0/values/1",
            json!({ "real": "1); DROP TABLE txfuzz_canary; --" }),
        ),
        (
            "real in an UPDATE",
            "/txns/0/stmts/1/stmt/update/assignments/0/value",
            json!({ "lit": { "real": "1 WHERE 0; DROP TABLE txfuzz_canary; --" } }),
        ),
        (
            "savepoint name",
            "/txns/0/stmts/1/stmt",
            json!({ "savepoint": drop }),
        ),
        (
            "setting value",
            "/txns/0/settings",
            json!({ "innodb_snapshot_isolation": "ON; DROP TABLE txfuzz_canary" }),
        ),
        (
            "ATTACH through a table name",
            "/schema/tables/0/name",
            json!("x AS y; ATTACH DATABASE '/tmp/txfuzz-evil.db' AS evil; --"),
        ),
    ]
}

/// `txfuzz replay FILE --db URL` on each vector: exit 2 with one line that
/// names the file, before any connection (the canary table in the URL's
/// own database is still there: `canary_exists`).
fn every_vector_is_refused(url: &str) {
    use txfuzz::testkit::*;
    let case = kv_case(
        &[(1, 10), (2, 20)],
        vec![committed(vec![add("t", 1, 1)])],
        "1 1 1",
    );
    let dir = tempfile::tempdir().unwrap();
    for (what, at, value) in vectors() {
        let mut json = serde_json::to_value(&case).unwrap();
        match json.pointer_mut(at) {
            Some(slot) => *slot = value,
            // A field left out when empty (settings) is added to its object.
            None => {
                let (parent, key) = at.rsplit_once('/').unwrap();
                let object = json.pointer_mut(parent).and_then(Json::as_object_mut);
                object
                    .unwrap_or_else(|| panic!("{what}: no {parent}"))
                    .insert(key.to_string(), value);
            }
        }
        let err = replay_refusal(dir.path(), &json, url);
        assert!(err.contains("case.json"), "{what}: {err}");
    }
}

/// `txfuzz replay` of `json` (written as `dir/case.json`) on `url`: exit
/// 2 with one line on stderr, which it returns.
#[track_caller]
fn replay_refusal(dir: &std::path::Path, json: &Json, url: &str) -> String {
    let path = dir.join("case.json");
    std::fs::write(&path, serde_json::to_vec(json).unwrap()).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args(["replay", path.to_str().unwrap(), "--db", url])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn every_vector_is_refused_on_sqlite_and_the_canary_survives() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("user.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE txfuzz_canary (x INTEGER); INSERT INTO txfuzz_canary VALUES (1);",
    )
    .unwrap();
    every_vector_is_refused(&format!("sqlite:{}", db.display()));
    let n: i64 = conn
        .query_row("SELECT count(*) FROM txfuzz_canary", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
    assert!(!std::path::Path::new("/tmp/txfuzz-evil.db").exists());
}

/// A runtime for the canary's own connection.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn every_vector_is_refused_on_mysql_and_the_canary_survives() {
    use mysql_async::prelude::Queryable;
    let Some(url) = common::mysql_url() else {
        return;
    };
    let rt = runtime();
    let opts = mysql_async::Opts::from_url(&url).unwrap();
    let opts = mysql_async::OptsBuilder::from_opts(opts).prefer_socket(false);
    let mut conn = rt.block_on(mysql_async::Conn::new(opts)).unwrap();
    let table = format!("txfuzz_canary_{}", std::process::id());
    rt.block_on(conn.query_drop(format!("CREATE TABLE {table} (x INT)")))
        .unwrap();
    every_vector_is_refused(&url);
    let n: Option<i64> = rt
        .block_on(conn.query_first(format!("SELECT COUNT(*) FROM {table}")))
        .unwrap();
    assert_eq!(n, Some(0));
    rt.block_on(conn.query_drop(format!("DROP TABLE {table}")))
        .unwrap();
}

#[test]
fn every_vector_is_refused_on_postgres_and_the_canary_survives() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let rt = runtime();
    let (client, conn) = rt
        .block_on(tokio_postgres::connect(&url, tokio_postgres::NoTls))
        .unwrap();
    rt.spawn(conn);
    let table = format!("txfuzz_canary_{}", std::process::id());
    rt.block_on(client.batch_execute(&format!("CREATE TABLE {table} (x INT)")))
        .unwrap();
    every_vector_is_refused(&url);
    let rows = rt
        .block_on(client.query(&format!("SELECT COUNT(*) FROM {table}"), &[]))
        .unwrap();
    assert_eq!(rows[0].get::<_, i64>(0), 0);
    rt.block_on(client.batch_execute(&format!("DROP TABLE {table}")))
        .unwrap();
}

/// A NUL character in a text value on PostgreSQL, which cannot store it: a
/// one-line refusal naming the statement (it used to become a false
/// `crash:connection-lost`: the client library refused to send it).
#[test]
fn a_nul_in_text_is_refused_on_postgres() {
    use txfuzz::testkit::*;
    let Some(url) = common::pg_url() else {
        return;
    };
    let case = kv_case(&[(1, 10)], vec![committed(vec![add("t", 1, 1)])], "1 1 1");
    let mut json = serde_json::to_value(&case).unwrap();
    *json
        .pointer_mut("/txns/0/stmts/1/stmt/update/assignments/0/value")
        .unwrap() = serde_json::json!({ "lit": { "text": "a\u{0}b" } });
    let dir = tempfile::tempdir().unwrap();
    let err = replay_refusal(dir.path(), &json, &url);
    assert!(err.contains("NUL") && err.contains("op 2"), "{err}");
}
