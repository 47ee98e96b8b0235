//! Lock conflict analysis: the row locks (and unique-key locks) each open
//! transaction holds, from what its statements actually read and wrote, and
//! whether a statement's predicted rows conflict with another's locks. Only
//! conflicts that must block are predicted (Troc's conservative row-based
//! analysis); gap, next-key, predicate and table-scan locks are not modelled,
//! so an engine blocking where this predicts nothing is undecided, never a bug.

use super::versions::Pos;
use crate::model::{LockMode, Table, Value};
use std::collections::BTreeMap;

/// One lock held by a transaction.
#[derive(Clone, Debug, PartialEq)]
struct Held {
    txn: u32,
    mode: LockMode,
    /// Where it was taken (locks taken after a savepoint may be released).
    at: Pos,
    /// The lock of an index entry the transaction inserted (a new row, a new
    /// unique-key value): InnoDB keeps it implicitly in the entry, so the undo
    /// of ROLLBACK TO SAVEPOINT releases it with the entry.
    inserted: bool,
}

/// Row locks by `(table, rid)`, unique-key locks by `(table, key columns, values)`,
/// and SQLite's single database write lock.
#[derive(Clone, Debug, Default)]
pub struct LockTable {
    rows: BTreeMap<(String, i64), Vec<Held>>,
    keys: BTreeMap<(String, Vec<String>, Vec<Value>), Vec<Held>>,
    db_writer: Option<(u32, Pos)>,
}

fn conflicts(held: LockMode, wanted: LockMode) -> bool {
    !(held == LockMode::ForShare && wanted == LockMode::ForShare)
}

/// The values of each unique key of `table` in `row` (`[rid, wl, columns...]`);
/// keys with a NULL part are left out (they never conflict).
pub fn key_values(table: &Table, row: &[Value]) -> Vec<(Vec<String>, Vec<Value>)> {
    let mut out = Vec::new();
    for key in table.unique_keys() {
        let vals: Option<Vec<Value>> = key
            .iter()
            .map(|c| {
                let i = table.columns.iter().position(|col| &col.name == c)?;
                row.get(i + 2).filter(|v| !v.is_null()).cloned()
            })
            .collect();
        if let Some(vals) = vals {
            out.push((key.to_vec(), vals));
        }
    }
    out
}

impl LockTable {
    pub fn lock_row(&mut self, table: &str, rid: i64, txn: u32, mode: LockMode, at: Pos) {
        self.lock_row_as(table, rid, txn, mode, at, false);
    }

    /// The lock of a row the transaction inserted.
    pub fn lock_inserted_row(&mut self, table: &str, rid: i64, txn: u32, at: Pos) {
        self.lock_row_as(table, rid, txn, LockMode::ForUpdate, at, true);
    }

    fn lock_row_as(
        &mut self,
        table: &str,
        rid: i64,
        txn: u32,
        mode: LockMode,
        at: Pos,
        inserted: bool,
    ) {
        let list = self.rows.entry((table.to_string(), rid)).or_default();
        if !list
            .iter()
            .any(|h| h.txn == txn && h.mode == LockMode::ForUpdate)
        {
            list.push(Held {
                txn,
                mode,
                at,
                inserted,
            });
        }
    }

    /// Locks the unique-key values of `row` (index entries the write inserted
    /// or changed; counted as inserted entries, so a ROLLBACK TO that undoes
    /// them releases them: the model then predicts fewer waits, never more).
    pub fn lock_keys(&mut self, table: &Table, row: &[Value], txn: u32, at: Pos) {
        for (cols, vals) in key_values(table, row) {
            self.keys
                .entry((table.name.clone(), cols, vals))
                .or_default()
                .push(Held {
                    txn,
                    mode: LockMode::ForUpdate,
                    at,
                    inserted: true,
                });
        }
    }

    pub fn lock_database(&mut self, txn: u32, at: Pos) {
        if self.db_writer.is_none() {
            self.db_writer = Some((txn, at));
        }
    }

    /// Another transaction holding a lock on the row that conflicts with `mode`.
    pub fn row_holder(&self, table: &str, rid: i64, txn: u32, mode: LockMode) -> Option<u32> {
        self.rows
            .get(&(table.to_string(), rid))?
            .iter()
            .find(|h| h.txn != txn && conflicts(h.mode, mode))
            .map(|h| h.txn)
    }

    /// Another transaction holding a unique key that `row` would take.
    pub fn key_holder(&self, table: &Table, row: &[Value], txn: u32) -> Option<u32> {
        key_values(table, row).into_iter().find_map(|(cols, vals)| {
            self.keys
                .get(&(table.name.clone(), cols, vals))?
                .iter()
                .find(|h| h.txn != txn)
                .map(|h| h.txn)
        })
    }

    /// The holder of SQLite's write lock, if another transaction.
    pub fn database_holder(&self, txn: u32) -> Option<u32> {
        self.db_writer.map(|(t, _)| t).filter(|t| *t != txn)
    }

    /// Whether `txn` itself holds the database write lock.
    pub fn holds_database(&self, txn: u32) -> bool {
        self.db_writer.is_some_and(|(t, _)| t == txn)
    }

    /// Releases every lock of `txn` (COMMIT, ROLLBACK, abort).
    pub fn release(&mut self, txn: u32) {
        self.release_from(txn, 0, true);
    }

    /// Releases the locks of index entries `txn` inserted at or after `from`
    /// (ROLLBACK TO SAVEPOINT on engines that keep the other locks).
    pub fn release_inserted_from(&mut self, txn: u32, from: Pos) {
        self.release_where(|h| h.txn == txn && h.at >= from && h.inserted, false, txn);
    }

    /// Releases the locks `txn` took at or after `from` (ROLLBACK TO SAVEPOINT
    /// on engines that do so); the database write lock stays unless `all`.
    pub fn release_from(&mut self, txn: u32, from: Pos, all: bool) {
        self.release_where(|h| h.txn == txn && h.at >= from, all, txn);
    }

    fn release_where(&mut self, release: impl Fn(&Held) -> bool, all: bool, txn: u32) {
        let keep = |h: &Held| !release(h);
        for list in self.rows.values_mut() {
            list.retain(keep);
        }
        for list in self.keys.values_mut() {
            list.retain(keep);
        }
        self.rows.retain(|_, l| !l.is_empty());
        self.keys.retain(|_, l| !l.is_empty());
        if all && self.db_writer.is_some_and(|(t, _)| t == txn) {
            self.db_writer = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::kv_table;

    /// A kv row `[rid 9, wl "1", k, NULL]`.
    fn row(k: i64) -> Vec<Value> {
        vec![
            Value::Int(9),
            Value::Text("1".into()),
            Value::Int(k),
            Value::Null,
        ]
    }

    #[test]
    fn shared_locks_are_compatible_exclusive_are_not() {
        let mut l = LockTable::default();
        l.lock_row("t", 1, 1, LockMode::ForShare, 1);
        assert_eq!(l.row_holder("t", 1, 2, LockMode::ForShare), None);
        assert_eq!(l.row_holder("t", 1, 2, LockMode::ForUpdate), Some(1));
        l.release(1);
        assert_eq!(l.row_holder("t", 1, 2, LockMode::ForUpdate), None);
    }

    #[test]
    fn unique_keys_conflict_and_savepoints_release() {
        let t = kv_table("t");
        let mut l = LockTable::default();
        l.lock_keys(&t, &row(5), 1, 4);
        assert_eq!(l.key_holder(&t, &row(5), 2), Some(1));
        assert_eq!(l.key_holder(&t, &row(6), 2), None);
        l.release_from(1, 3, false);
        assert_eq!(l.key_holder(&t, &row(5), 2), None);
    }

    /// InnoDB's ROLLBACK TO: locks of inserted rows and key entries taken
    /// after the savepoint go with the undo; locks of existing rows stay.
    #[test]
    fn rollback_to_releases_only_inserted_entries_after_the_savepoint() {
        let t = kv_table("t");
        let mut l = LockTable::default();
        l.lock_row("t", 1, 1, LockMode::ForUpdate, 2); // before the savepoint
        l.lock_row("t", 2, 1, LockMode::ForUpdate, 5); // existing row, after
        l.lock_inserted_row("t", 9, 1, 6); // inserted, after
        l.lock_keys(&t, &row(7), 1, 6);
        l.release_inserted_from(1, 4);
        assert_eq!(l.row_holder("t", 1, 2, LockMode::ForUpdate), Some(1));
        assert_eq!(l.row_holder("t", 2, 2, LockMode::ForUpdate), Some(1));
        assert_eq!(l.row_holder("t", 9, 2, LockMode::ForUpdate), None);
        assert_eq!(l.key_holder(&t, &row(7), 2), None);
    }
}
