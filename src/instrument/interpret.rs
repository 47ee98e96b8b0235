//! Running a prepared statement on a session and reading its instrumentation.

use super::prepare::{Prepared, Shape};
use crate::engine::Session;
use crate::model::{Outcome, RowVersion, RowWrite, StmtKind, Value};

/// Runs `p` on `session` and interprets the returned rows.
pub fn run_prepared(session: &mut dyn Session, p: &Prepared) -> Outcome {
    if let Some(pre) = &p.pre {
        if let Err(e) = session.query(pre) {
            return Outcome::failed(e);
        }
    }
    let res = match session.query(&p.sql) {
        Err(e) => return Outcome::failed(e),
        Ok(res) => res,
    };
    let Some(capture) = &p.capture else {
        return interpret(p, res.rows, res.affected);
    };
    let rows = match session.query(capture) {
        Ok(c) => parse_capture(c.rows.first().and_then(|r| r.first()), p.op),
        Err(_) => Vec::new(),
    };
    interpret(p, rows, res.affected)
}

/// `rid:wl-before;...` captured by MariaDB UPDATEs -> `(rid, wl-after)` rows.
fn parse_capture(v: Option<&Value>, op: u32) -> Vec<Vec<Value>> {
    let Some(Value::Text(list)) = v else {
        return Vec::new();
    };
    list.split(';')
        .filter_map(|item| item.split_once(':'))
        .filter_map(|(rid, wl)| {
            let rid = rid.parse::<i64>().ok()?;
            Some(vec![Value::Int(rid), Value::Text(format!("{wl},{op}"))])
        })
        .collect()
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Text(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

fn rid(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Text(s) => s.parse().ok(),
        _ => None,
    }
}

/// The version a write list was produced from: `0,3,7` -> `0,3`.
pub fn previous_version(wl: &str) -> Option<String> {
    wl.rsplit_once(',').map(|(prev, _)| prev.to_string())
}

pub(crate) fn interpret(p: &Prepared, rows: Vec<Vec<Value>>, affected: u64) -> Outcome {
    let mut out = Outcome {
        affected,
        ..Outcome::default()
    };
    match &p.shape {
        Shape::Control => {
            out.reads_complete = true;
        }
        Shape::Select {
            user_cols,
            instances,
            complete,
        } => {
            out.reads_complete = *complete;
            for mut row in rows {
                let extra = row.split_off((*user_cols).min(row.len()));
                for (i, table) in instances.iter().enumerate() {
                    let (Some(r), Some(w)) = (
                        extra.get(2 * i).and_then(rid),
                        extra.get(2 * i + 1).and_then(text),
                    ) else {
                        continue; // the unmatched side of an outer join
                    };
                    out.reads.push(RowVersion {
                        table: table.clone(),
                        rid: r,
                        wl: w,
                    });
                }
                out.rows.push(row);
            }
            out.reads.sort();
            out.reads.dedup();
        }
        Shape::Write { table, complete } => {
            out.reads_complete = false;
            out.writes_complete = *complete;
            let own = p.op.to_string();
            for row in rows {
                let (Some(r), Some(w)) = (row.first().and_then(rid), row.get(1).and_then(text))
                else {
                    continue;
                };
                let write = match p.kind {
                    StmtKind::Delete => RowWrite {
                        table: table.clone(),
                        rid: r,
                        before: Some(w),
                        after: None,
                    },
                    _ if w == own => RowWrite {
                        table: table.clone(),
                        rid: r,
                        before: None,
                        after: Some(w),
                    },
                    _ => RowWrite {
                        table: table.clone(),
                        rid: r,
                        before: previous_version(&w),
                        after: Some(w),
                    },
                };
                if let Some(before) = &write.before {
                    out.reads.push(RowVersion {
                        table: table.clone(),
                        rid: r,
                        wl: before.clone(),
                    });
                }
                out.writes.push(write);
            }
            out.writes.sort();
        }
    }
    out
}
