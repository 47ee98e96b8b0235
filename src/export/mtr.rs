//! A MariaDB mysql-test-run test: `NAME.test` replays the schedule, one
//! connection per session, a statement that waited for a lock `send` and
//! `reap`ed where it finished (after waiting until InnoDB shows it in LOCK
//! WAIT); `NAME.result` is the output of a correct engine, written as
//! mysqltest writes it (every command echoed, result columns tab-separated,
//! rows sorted with `--sorted_result`).
//!
//! Run it with mysql-test-run (copy both files to `mysql-test/main/` or a
//! suite's `t/` and `r/`) or straight with mysqltest against a server:
//! `MASTER_MYPORT=3306 mariadb-test --host=127.0.0.1 --port=3306 --user=root
//! --database=test --basedir=/usr/share/mysql/mysql-test/ --test-file=NAME.test
//! --result-file=NAME.result`.

use super::columns::{result_columns, value_text};
use super::Correction;
use crate::model::{ErrorClass, EventKind, History, Stmt, StmtRef, TestCase, Value};
use crate::sql::{self, Dialect, Layout};
use std::collections::HashSet;
use std::fmt::Write;

const D: Dialect = Dialect::Mysql;

/// The test and its result for `case` run as `history` records, expecting
/// the observed outputs except `fix`'s statement (`None`: the observed
/// schedule as it ran, which passes on the same engine).
pub fn render(
    case: &TestCase,
    history: &History,
    fix: Option<&Correction>,
    header: &[String],
) -> Result<(String, String), String> {
    super::supported(D, case)?;
    let mut w = Mtr::default();
    for line in header {
        w.note(line);
    }
    if let Some(fix) = fix {
        w.note(&super::judged_note(fix));
        w.note("This test expects the correct rows: it fails while the bug lives.");
    }
    w.directive("--source include/have_innodb.inc");
    w.directive("--disable_warnings");
    // txfuzz's sessions store a 0 given for a key generator as 0; only a
    // schema with one needs the setting.
    let sql_mode = case
        .schema
        .tables
        .iter()
        .any(|t| t.columns.iter().any(|c| c.auto_key));
    if sql_mode {
        w.sql(SQL_MODE);
    }
    let names: Vec<&str> = case
        .schema
        .tables
        .iter()
        .rev()
        .map(|t| t.name.as_str())
        .collect();
    if !names.is_empty() {
        w.sql(&format!("DROP TABLE IF EXISTS {}", names.join(", ")));
    }
    for t in &case.schema.tables {
        for stmt in sql::create_table_as(D, t, Layout::Plain) {
            w.sql(&stmt);
        }
        if let Some(data) = case.data.iter().find(|x| x.table == t.name) {
            if let Some(ins) = sql::insert_rows_as(D, t, &data.rows, Layout::Plain) {
                w.sql(&ins);
            }
        }
    }
    for t in &case.txns {
        w.connect(&session(t.id));
        if sql_mode {
            w.sql(SQL_MODE);
        }
        let level = t.isolation.unwrap_or(case.isolation);
        for st in sql::session_setup(D, level)
            .into_iter()
            .chain(sql::session_settings(D, &t.settings))
        {
            w.sql(&st);
        }
        w.directive(&format!(
            "let ${}_id= `SELECT CONNECTION_ID()`;",
            session(t.id)
        ));
    }
    // A correction about the end of the schedule (the final state, the
    // constraints), or about one statement that must run (a crash), says
    // nothing of the other outputs, which the bug may have changed: the
    // schedule runs with its outputs not compared.
    if fix.is_some_and(Correction::leaves_outputs_unchecked) {
        w.note("The schedule's outputs are not compared: the finding is not about them.");
        w.directive("--disable_result_log");
        w.directive("--disable_abort_on_error");
        w.quiet = true;
    }
    let waited: HashSet<StmtRef> = history
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Blocked { .. }))
        .map(|e| e.stmt)
        .collect();
    // The judged statement that must wait for a lock or fail: the schedule
    // ends with it.
    let ends_at = fix
        .filter(|f| f.must_wait_for.is_some() || f.must_fail.is_some())
        .and_then(|f| f.stmt);
    // Connections with a statement sent and not reaped yet.
    let mut pending: Vec<String> = Vec::new();
    for e in &history.events {
        let Some(cs) = case.stmt(e.stmt) else {
            continue;
        };
        let con = session(e.stmt.txn);
        let text = sql::render_stmt(D, &cs.stmt);
        let outcome = history.outcome(e.stmt);
        let rows = super::rows_of(e.stmt, outcome, fix);
        let fix_here = fix.filter(|_| ends_at == Some(e.stmt));
        match &e.kind {
            EventKind::Submitted if fix_here.is_some_and(|f| f.must_wait_for.is_some()) => {
                let holder = fix_here.and_then(|f| f.must_wait_for).unwrap_or_default();
                w.note(&format!(
                    "A correct engine makes this statement wait for {}'s lock.",
                    session(holder)
                ));
                w.use_connection(&con);
                w.send(&text);
                pending.push(con.clone());
                w.use_connection("default");
                w.directive("let $wait_timeout= 10;");
                w.wait_for_lock_wait(&con);
                break;
            }
            EventKind::Submitted | EventKind::Completed { .. }
                if fix_here.is_some_and(|f| f.must_fail.is_some())
                    && (waited.contains(&e.stmt)
                        == matches!(e.kind, EventKind::Completed { .. })) =>
            {
                let class = fix_here
                    .and_then(|f| f.must_fail)
                    .unwrap_or(ErrorClass::Other);
                w.note(&format!(
                    "A correct engine fails this statement ({class:?}): any of these errors."
                ));
                w.use_connection(&con);
                // Several codes: mysqltest prints which one in no error
                // line, and fails the test if the statement succeeds.
                w.directive(&format!("--error {}", concurrency_errors(class)));
                if waited.contains(&e.stmt) {
                    w.reap();
                    pending.retain(|c| *c != con);
                } else {
                    w.sql(&text);
                }
                let _ = writeln!(w.result, "Got one of the listed errors");
                break;
            }
            EventKind::Submitted if waited.contains(&e.stmt) => {
                pending.push(con.clone());
                w.use_connection(&con);
                w.send(&text);
                w.use_connection("default");
                w.wait_for_lock_wait(&con);
            }
            EventKind::Submitted
                if fix.is_some_and(|f| f.must_succeed && f.stmt == Some(e.stmt)) =>
            {
                // The judged statement must run: an error ends the test.
                w.use_connection(&con);
                w.directive("--enable_abort_on_error");
                w.sql(&text);
                w.directive("--disable_abort_on_error");
            }
            EventKind::Submitted => {
                w.use_connection(&con);
                w.statement(case, &cs.stmt, outcome, rows, |w| w.sql(&text));
            }
            EventKind::Completed { .. } if waited.contains(&e.stmt) => {
                pending.retain(|c| *c != con);
                w.use_connection(&con);
                w.statement(case, &cs.stmt, outcome, rows, Mtr::reap);
            }
            EventKind::Aborted => {
                w.use_connection(&con);
                w.sql("ROLLBACK");
            }
            EventKind::TimedOut => {
                return Err(format!(
                    "T{}#{} timed out in the finding's run: the schedule has no end to replay",
                    e.stmt.txn, e.stmt.index
                ));
            }
            EventKind::Blocked { .. } | EventKind::Completed { .. } | EventKind::Skipped => {}
        }
    }
    if ends_at.is_some() {
        end_schedule(&mut w, case, &pending);
    }
    w.use_connection("default");
    if w.quiet {
        w.directive("--enable_abort_on_error");
        w.directive("--enable_result_log");
        w.quiet = false;
    }
    for inv in fix.map_or(&[][..], |f| f.invariants.as_slice()) {
        w.note(&format!(
            "{}: a correct engine leaves no row that breaks it",
            inv.what
        ));
        w.sql(&inv.sql);
        let _ = writeln!(w.result, "violations\n0");
    }
    for (table, rows) in fix.map_or(&[][..], |f| f.final_state.as_slice()) {
        let Some(q) = super::read_table(case, table) else {
            continue;
        };
        w.note(&format!(
            "the final state of {table} a correct engine leaves"
        ));
        w.directive("--sorted_result");
        w.sql(&sql::render_select(D, &q));
        w.rows(case, &q, rows);
    }
    for t in &case.txns {
        w.echoed(
            &format!("disconnect {}", session(t.id)),
            &format!("disconnect {};", session(t.id)),
        );
    }
    if !names.is_empty() {
        w.sql(&format!("DROP TABLE {}", names.join(", ")));
    }
    Ok((w.test, w.result))
}

/// Ends the schedule after the judged statement, its outputs not compared:
/// every session without a statement in flight rolls back, then those with
/// one reap it (no lock holds them any more) and roll back.
fn end_schedule(w: &mut Mtr, case: &TestCase, pending: &[String]) {
    w.note("The rest of the schedule is not the finding's: every transaction rolls back.");
    if !w.quiet {
        w.directive("--disable_result_log");
        w.directive("--disable_abort_on_error");
        w.quiet = true;
    }
    for t in &case.txns {
        let con = session(t.id);
        if !pending.contains(&con) {
            w.use_connection(&con);
            w.sql("ROLLBACK");
        }
    }
    for con in pending {
        w.use_connection(con);
        w.reap();
        w.sql("ROLLBACK");
    }
}

/// The MariaDB error codes of `class` and of the other errors that end a
/// transaction on a conflict (deadlock, lock wait timeout, snapshot
/// conflict), `class`'s first.
fn concurrency_errors(class: ErrorClass) -> String {
    let own = match class {
        ErrorClass::Deadlock => 1213,
        ErrorClass::LockWaitTimeout => 1205,
        _ => 1020,
    };
    let mut codes = vec![own];
    codes.extend([1020, 1205, 1213].into_iter().filter(|c| *c != own));
    codes
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Every connection txfuzz opens runs with this (`engine/mysql/connect.rs`).
const SQL_MODE: &str =
    "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'NO_AUTO_VALUE_ON_ZERO')";

/// An error message with the database txfuzz ran the case in (a private
/// one per campaign) named `test`, where the exported test runs: foreign-key
/// errors name the table as `` (`db`.`t1`, CONSTRAINT ... ``.
fn in_test_database(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("(`") {
        let (head, tail) = rest.split_at(at + 2);
        out.push_str(head);
        match tail.find("`.`") {
            Some(end) if !tail[..end].contains('`') => {
                out.push_str("test");
                rest = &tail[end..];
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

fn session(txn: u32) -> String {
    format!("con{txn}")
}

/// The two files as they are written, side by side.
#[derive(Default)]
struct Mtr {
    test: String,
    result: String,
    connection: String,
    /// The schedule's outputs are not compared (`--disable_result_log`,
    /// `--disable_abort_on_error`): only what follows it.
    quiet: bool,
}

impl Mtr {
    fn note(&mut self, line: &str) {
        let _ = writeln!(self.test, "# {line}");
    }
    /// A mysqltest command that is not echoed.
    fn directive(&mut self, line: &str) {
        let _ = writeln!(self.test, "{line}");
    }
    fn echoed(&mut self, test: &str, result: &str) {
        let _ = writeln!(self.test, "{test};");
        let _ = writeln!(self.result, "{result}");
    }
    fn sql(&mut self, text: &str) {
        self.echoed(text, &format!("{text};"));
    }
    fn connect(&mut self, name: &str) {
        let args = format!("{name},127.0.0.1,root,,test,$MASTER_MYPORT");
        self.echoed(&format!("connect ({args})"), &format!("connect  {args};"));
        self.connection = name.to_string();
    }
    fn use_connection(&mut self, name: &str) {
        if self.connection != name {
            self.echoed(
                &format!("connection {name}"),
                &format!("connection {name};"),
            );
            self.connection = name.to_string();
        }
    }
    fn send(&mut self, text: &str) {
        self.echoed(&format!("send {text}"), &format!("{text};"));
    }
    fn reap(&mut self) {
        let _ = writeln!(self.test, "reap;");
    }
    /// Waits on the current connection until `con` waits for a row lock.
    fn wait_for_lock_wait(&mut self, con: &str) {
        self.directive(&format!(
            "let $wait_condition= SELECT COUNT(*) = 1 FROM information_schema.innodb_trx \
             WHERE trx_mysql_thread_id = ${con}_id AND trx_state = 'LOCK WAIT';"
        ));
        self.directive("--source include/wait_condition.inc");
    }
    /// A statement's run (`run`: the statement itself, or the `reap` of
    /// one sent earlier) with what it prints: its error, or a SELECT's
    /// rows, sorted.
    fn statement(
        &mut self,
        case: &TestCase,
        stmt: &Stmt,
        outcome: Option<&crate::model::Outcome>,
        rows: &[Vec<Value>],
        run: impl FnOnce(&mut Self),
    ) {
        if self.quiet {
            run(self);
            return;
        }
        let error = outcome.and_then(|o| o.error.as_ref());
        self.expect_error(error);
        let select = match stmt {
            Stmt::Select(q) if error.is_none() => Some(q),
            _ => None,
        };
        // One row (an aggregate without GROUP BY) needs no sorting.
        if select.is_some_and(|q| !(q.is_aggregate() && q.group_by.is_empty())) {
            self.directive("--sorted_result");
        }
        run(self);
        match select {
            Some(q) => self.rows(case, q, rows),
            None => self.error_line(error),
        }
    }
    fn expect_error(&mut self, e: Option<&crate::model::StmtError>) {
        if let Some(e) = e {
            let errno = e.code.split_whitespace().next().unwrap_or(&e.code);
            self.directive(&format!("--error {errno}"));
        }
    }
    fn error_line(&mut self, e: Option<&crate::model::StmtError>) {
        if let Some(e) = e {
            let state = e
                .code
                .split_once('(')
                .and_then(|(_, s)| s.strip_suffix(')'))
                .unwrap_or("HY000");
            let _ = writeln!(
                self.result,
                "ERROR {state}: {}",
                in_test_database(&e.message)
            );
        }
    }
    fn rows(&mut self, case: &TestCase, q: &crate::model::Select, rows: &[Vec<Value>]) {
        let cols = result_columns(D, &case.schema, q);
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        let _ = writeln!(self.result, "{}", names.join("\t"));
        let mut lines: Vec<String> = rows
            .iter()
            .map(|r| {
                let vals: Vec<String> = r
                    .iter()
                    .zip(&cols)
                    .map(|(v, c)| value_text(D, v, c.shape))
                    .collect();
                vals.join("\t")
            })
            .collect();
        lines.sort();
        for l in lines {
            let _ = writeln!(self.result, "{l}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::in_test_database;

    #[test]
    fn error_messages_name_the_test_database() {
        assert_eq!(
            in_test_database(
                "a foreign key constraint fails (`txfuzz_1_2`.`t1`, CONSTRAINT `t1_ibfk_1` FOREIGN KEY (`c0`) REFERENCES `t0` (`c0`))"
            ),
            "a foreign key constraint fails (`test`.`t1`, CONSTRAINT `t1_ibfk_1` FOREIGN KEY (`c0`) REFERENCES `t0` (`c0`))"
        );
        assert_eq!(
            in_test_database("Duplicate entry '19' for key 'PRIMARY'"),
            "Duplicate entry '19' for key 'PRIMARY'"
        );
    }
}
