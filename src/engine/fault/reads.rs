//! Read faults, for the `view` oracle's tests (SQLite only; on other dialects
//! they never fire):
//! - `dirty-read`: a SELECT inside a transaction also sees another open
//!   transaction's uncommitted writes (read back from the writer's session
//!   after each of its writes).
//! - `missed-own-write`: a SELECT inside a transaction does not see the rows
//!   its own transaction wrote (pre-images captured before each UPDATE/DELETE
//!   once the transaction holds a snapshot, so capturing changes no locking).
//!
//! Both run the SELECT on TEMP tables shadowing the real ones: a copy of what
//! the session sees, with the faulty rows swapped in.

use crate::engine::run_prepared;
use crate::engine::Session;
use crate::instrument::{Prepared, Shape};
use crate::model::{Outcome, Schema, StmtKind, Value, RID, WL};
use crate::sql::{self, Dialect};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One row as a faulty read shows it: `None` when it does not exist.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Image {
    table: String,
    rid: i64,
    row: Option<Vec<Value>>,
}

/// Uncommitted after-images of every session (per execution, shared).
#[derive(Default)]
pub(super) struct Uncommitted {
    by_session: BTreeMap<usize, Vec<Image>>,
}

impl Uncommitted {
    fn others(&self, me: usize) -> Vec<Image> {
        self.by_session
            .iter()
            .filter(|(id, _)| **id != me)
            .flat_map(|(_, v)| v.iter().cloned())
            .collect()
    }
    pub(super) fn clear(&mut self) {
        self.by_session.clear();
    }
    /// Adds `other`'s images, a newer image of a row replacing an older one.
    pub(super) fn merge(&mut self, other: Uncommitted) {
        for (id, images) in other.by_session {
            let mine = self.by_session.entry(id).or_default();
            for img in images {
                mine.retain(|i| !(i.table == img.table && i.rid == img.rid));
                mine.push(img);
            }
        }
    }
}

static NEXT_SESSION: AtomicUsize = AtomicUsize::new(1);

/// A session's state for the read faults.
pub(super) struct SessionReads {
    id: usize,
    /// The transaction has read (holds a snapshot), so reading more is harmless.
    has_read: bool,
    /// Rows of the table about to be written, as they were (candidates).
    captured: Vec<Image>,
    /// Pre-images of the rows this transaction wrote.
    pre: Vec<Image>,
}

impl Default for SessionReads {
    fn default() -> Self {
        SessionReads {
            id: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
            has_read: false,
            captured: Vec::new(),
            pre: Vec::new(),
        }
    }
}

fn select_rows(
    session: &mut dyn Session,
    schema: &Schema,
    table: &str,
    rids: Option<&[i64]>,
) -> Vec<Image> {
    let Some(t) = schema.table(table) else {
        return Vec::new();
    };
    let mut cols = vec![RID.to_string(), WL.to_string()];
    cols.extend(t.columns.iter().map(|c| c.name.clone()));
    let filter = match rids {
        Some([]) => return Vec::new(),
        Some(r) => format!(
            " WHERE {RID} IN ({})",
            r.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => String::new(),
    };
    let Ok(res) = session.query(&format!(
        "SELECT {} FROM main.{table}{filter}",
        cols.join(", ")
    )) else {
        return Vec::new();
    };
    res.rows
        .into_iter()
        .filter_map(|row| match row.first() {
            Some(Value::Int(rid)) => Some(Image {
                table: table.to_string(),
                rid: *rid,
                row: Some(row.clone()),
            }),
            _ => None,
        })
        .collect()
}

impl SessionReads {
    pub(super) fn end_txn(&mut self, uncommitted: &mut Uncommitted) {
        self.has_read = false;
        self.captured.clear();
        self.pre.clear();
        uncommitted.by_session.remove(&self.id);
    }

    /// Before a statement inside a transaction (`missed-own-write`): captures
    /// the rows an UPDATE/DELETE may overwrite.
    pub(super) fn before_write(
        &mut self,
        session: &mut dyn Session,
        schema: &Schema,
        d: Dialect,
        p: &Prepared,
    ) {
        self.captured.clear();
        if d != Dialect::Sqlite
            || !self.has_read
            || !matches!(p.kind, StmtKind::Update | StmtKind::Delete)
        {
            return;
        }
        if let Shape::Write { table, .. } = &p.shape {
            self.captured = select_rows(session, schema, table, None);
        }
    }

    /// After a statement inside a transaction: records pre-images of the rows
    /// it wrote (`missed-own-write`) and their after-images (`dirty-read`).
    pub(super) fn after(
        &mut self,
        session: &mut dyn Session,
        schema: &Schema,
        d: Dialect,
        out: &Outcome,
        uncommitted: Option<&mut Uncommitted>,
    ) {
        if !out.ok() || d != Dialect::Sqlite {
            return;
        }
        if out.writes.is_empty() {
            self.has_read = true;
            return;
        }
        self.has_read = true;
        for w in &out.writes {
            if self
                .pre
                .iter()
                .any(|i| i.table == w.table && i.rid == w.rid)
            {
                continue;
            }
            let pre = match &w.before {
                None => Some(Image {
                    table: w.table.clone(),
                    rid: w.rid,
                    row: None,
                }),
                Some(_) => self
                    .captured
                    .iter()
                    .find(|i| i.table == w.table && i.rid == w.rid)
                    .cloned(),
            };
            self.pre.extend(pre);
        }
        if let Some(unc) = uncommitted {
            let mut images = Vec::new();
            let mut tables: Vec<&str> = out.writes.iter().map(|w| w.table.as_str()).collect();
            tables.dedup();
            for t in tables {
                let rids: Vec<i64> = out
                    .writes
                    .iter()
                    .filter(|w| w.table == t)
                    .map(|w| w.rid)
                    .collect();
                let read = select_rows(session, schema, t, Some(&rids));
                for rid in rids {
                    let row = read
                        .iter()
                        .find(|i| i.rid == rid)
                        .and_then(|i| i.row.clone());
                    images.push(Image {
                        table: t.to_string(),
                        rid,
                        row,
                    });
                }
            }
            let mine = unc.by_session.entry(self.id).or_default();
            for img in images {
                mine.retain(|i| !(i.table == img.table && i.rid == img.rid));
                mine.push(img);
            }
        }
    }

    /// The rows a faulty SELECT would swap in (empty: the fault cannot fire).
    pub(super) fn faulty_images(&self, dirty: bool, uncommitted: &Uncommitted) -> Vec<Image> {
        if dirty {
            uncommitted.others(self.id)
        } else {
            self.pre.clone()
        }
    }
}

/// Runs the SELECT `p` on TEMP copies of the tables in `images`, with those rows swapped in.
pub(super) fn run_shadowed(
    session: &mut dyn Session,
    d: Dialect,
    p: &Prepared,
    images: &[Image],
) -> Outcome {
    let mut tables: Vec<&str> = images.iter().map(|i| i.table.as_str()).collect();
    tables.sort();
    tables.dedup();
    for t in &tables {
        let _ = session.query(&format!("DROP TABLE IF EXISTS temp.{t}"));
        let _ = session.query(&format!("CREATE TEMP TABLE {t} AS SELECT * FROM main.{t}"));
    }
    for img in images {
        let _ = session.query(&format!(
            "DELETE FROM temp.{} WHERE {RID} = {}",
            img.table, img.rid
        ));
        if let Some(row) = &img.row {
            let vals: Vec<String> = row.iter().map(|v| sql::render_value(d, v)).collect();
            let _ = session.query(&format!(
                "INSERT INTO temp.{} VALUES ({})",
                img.table,
                vals.join(", ")
            ));
        }
    }
    let out = run_prepared(session, p);
    for t in &tables {
        let _ = session.query(&format!("DROP TABLE IF EXISTS temp.{t}"));
    }
    out
}
