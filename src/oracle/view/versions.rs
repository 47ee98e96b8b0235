//! The version history (Troc's "database change history"): every version of
//! every row, who wrote it, and when it committed. Built from the actual
//! schedule, one event at a time; ROLLBACK and ROLLBACK TO SAVEPOINT remove
//! versions.

use crate::model::{TestCase, Value, WriteList};
use std::collections::{BTreeMap, BTreeSet};

/// A position in the actual schedule: 1 + the index of an event in
/// `History::events`; 0 is the initial data.
pub type Pos = usize;

/// Who wrote a version: an explicit transaction, or one autocommit statement of
/// a session (its own transaction), or the initial data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Writer {
    Initial,
    Txn(u32),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    /// `[rid, wl, user columns...]`, exactly as the engine stores the row.
    pub row: Vec<Value>,
    pub wl: WriteList,
    pub writer: Writer,
    pub deleted: bool,
    /// Where the version was written (for ROLLBACK TO SAVEPOINT).
    pub written_at: Pos,
    /// Where its writer committed; `None` while uncommitted.
    pub committed_at: Option<Pos>,
}

impl Version {
    pub fn is_committed_before(&self, pos: Pos) -> bool {
        self.committed_at.is_some_and(|c| c < pos)
    }
}

/// Which versions a statement sees (besides its own transaction's, always visible).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sight {
    /// Every version, committed or not (read uncommitted).
    Uncommitted,
    /// Versions committed before this position.
    CommittedBefore(Pos),
}

/// All versions of all rows, per table and row id, oldest first.
#[derive(Clone, Debug, Default)]
pub struct VersionStore {
    rows: BTreeMap<String, BTreeMap<i64, Vec<Version>>>,
}

impl VersionStore {
    /// The initial rows of a case, committed before the schedule starts.
    pub fn initial(case: &TestCase) -> VersionStore {
        let mut store = VersionStore::default();
        for t in &case.schema.tables {
            store.rows.entry(t.name.clone()).or_default();
        }
        for d in &case.data {
            let table = store.rows.entry(d.table.clone()).or_default();
            for r in &d.rows {
                let mut row = vec![
                    Value::Int(r.rid),
                    Value::Text(WriteList::initial().to_string()),
                ];
                row.extend(r.values.iter().cloned());
                table.insert(
                    r.rid,
                    vec![Version {
                        row,
                        wl: WriteList::initial(),
                        writer: Writer::Initial,
                        deleted: false,
                        written_at: 0,
                        committed_at: Some(0),
                    }],
                );
            }
        }
        store
    }

    /// Replaces the rows of the initial versions by `rows` (per table, rows
    /// `[rid, wl, columns...]` as the engine returns them), matched by row id.
    pub fn replace_initial(&mut self, rows: &BTreeMap<String, Vec<Vec<Value>>>) {
        for (table, list) in rows {
            let Some(chains) = self.rows.get_mut(table) else {
                continue;
            };
            for row in list {
                let Some(Value::Int(rid)) = row.first() else {
                    continue;
                };
                if let Some(v) = chains
                    .get_mut(rid)
                    .and_then(|c| c.iter_mut().find(|v| v.writer == Writer::Initial))
                {
                    v.row = row.clone();
                }
            }
        }
    }

    /// The newest version of `(table, rid)` that `reader` sees: its own latest
    /// version if it wrote the row, else the newest version `sight` admits.
    pub fn visible(&self, table: &str, rid: i64, reader: Writer, sight: Sight) -> Option<&Version> {
        let chain = self.rows.get(table)?.get(&rid)?;
        chain.iter().rev().find(|v| {
            (v.writer == reader && v.committed_at.is_none())
                || match sight {
                    Sight::Uncommitted => true,
                    Sight::CommittedBefore(p) => v.is_committed_before(p),
                }
        })
    }

    /// The view of `table` for `reader`: the visible, not deleted versions.
    /// With `records` (the positions of the clustered key's columns in a
    /// row, `model::Table::clustered_key`), a row is one record per key value for a reader that wrote it
    /// (profile `own_writes_hide_same_key`): the reader's own versions hide
    /// every other row's version with a key the reader wrote, deleted or
    /// moved away from.
    pub fn view(
        &self,
        table: &str,
        reader: Writer,
        sight: Sight,
        records: Option<&[usize]>,
    ) -> Vec<&Version> {
        let Some(rows) = self.rows.get(table) else {
            return Vec::new();
        };
        let own = |v: &Version| v.writer == reader && v.committed_at.is_none();
        let own_keys: BTreeSet<Vec<&Value>> = match records {
            Some(cols) if !cols.is_empty() => rows
                .values()
                .flat_map(|chain| own_record_keys(chain, own, cols))
                .collect(),
            _ => BTreeSet::new(),
        };
        rows.keys()
            .filter_map(|rid| self.visible(table, *rid, reader, sight))
            .filter(|v| !v.deleted)
            .filter(|v| own(v) || own_keys.is_empty() || !own_keys.contains(&key_of(v, records)))
            .collect()
    }

    /// The newest committed version of a row (including a committed deletion).
    pub fn latest_committed(&self, table: &str, rid: i64) -> Option<&Version> {
        self.rows
            .get(table)?
            .get(&rid)?
            .iter()
            .rev()
            .find(|v| v.committed_at.is_some())
    }

    /// The latest committed version that changed the row (not one a
    /// matched but unchanged row got in its updater's name: the engine
    /// wrote nothing, so the row's latest version is the one before).
    pub fn latest_committed_change(&self, table: &str, rid: i64) -> Option<&Version> {
        let chain = self.chain(table, rid);
        (0..chain.len())
            .rev()
            .find(|&i| chain[i].committed_at.is_some() && changes_row(chain, i))
            .map(|i| &chain[i])
    }

    /// Every version of a row, oldest first.
    pub fn chain(&self, table: &str, rid: i64) -> &[Version] {
        self.rows
            .get(table)
            .and_then(|t| t.get(&rid))
            .map_or(&[], Vec::as_slice)
    }

    /// The newest version of a row, committed or not.
    pub fn newest(&self, table: &str, rid: i64) -> Option<&Version> {
        self.rows.get(table)?.get(&rid)?.last()
    }

    pub fn push(&mut self, table: &str, rid: i64, v: Version) {
        self.rows
            .entry(table.to_string())
            .or_default()
            .entry(rid)
            .or_default()
            .push(v);
    }

    /// Marks every uncommitted version of `writer` committed at `at`.
    pub fn commit(&mut self, writer: Writer, at: Pos) {
        for v in self.all_mut() {
            if v.writer == writer && v.committed_at.is_none() {
                v.committed_at = Some(at);
            }
        }
    }

    /// Removes the uncommitted versions `writer` wrote at or after `from`
    /// (ROLLBACK: `from = 0`; ROLLBACK TO SAVEPOINT: the savepoint's position).
    pub fn rollback(&mut self, writer: Writer, from: Pos) {
        for table in self.rows.values_mut() {
            for chain in table.values_mut() {
                chain.retain(|v| {
                    !(v.writer == writer && v.committed_at.is_none() && v.written_at >= from)
                });
            }
            table.retain(|_, chain| !chain.is_empty());
        }
    }

    /// Every version that changed its row (not the version a matched but
    /// unchanged row gets in its updater's name: the engine wrote nothing).
    fn changes(&self) -> impl Iterator<Item = &Version> {
        self.rows
            .values()
            .flat_map(|t| t.values())
            .flat_map(|chain| {
                chain
                    .iter()
                    .enumerate()
                    .filter_map(move |(i, v)| changes_row(chain, i).then_some(v))
            })
    }

    /// Whether a transaction other than `reader` committed a change of a row
    /// of `table` at or after `since`.
    pub fn table_changed_since(&self, table: &str, reader: Writer, since: Pos) -> bool {
        self.rows.get(table).is_some_and(|rows| {
            rows.values().any(|chain| {
                chain.iter().enumerate().any(|(i, v)| {
                    changes_row(chain, i)
                        && v.writer != reader
                        && v.committed_at.is_some_and(|c| c >= since)
                })
            })
        })
    }

    /// Whether `writer` has changed a row it has not committed.
    pub fn has_uncommitted_changes(&self, writer: Writer) -> bool {
        self.changes()
            .any(|v| v.writer == writer && v.committed_at.is_none())
    }

    /// Whether a commit by someone other than `reader` that changed a row
    /// happened in `(after, before)`.
    pub fn commits_between(&self, reader: Writer, after: Pos, before: Pos) -> bool {
        self.changes()
            .any(|v| v.writer != reader && v.committed_at.is_some_and(|c| c > after && c < before))
    }

    /// Positions in `[from, before)` where a writer other than `reader`
    /// committed a change, ascending.
    pub fn commit_points(&self, reader: Writer, from: Pos, before: Pos) -> Vec<Pos> {
        let mut out: Vec<Pos> = self
            .changes()
            .filter(|v| v.writer != reader)
            .filter_map(|v| v.committed_at)
            .filter(|c| *c >= from && *c < before)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The row ids `table` has versions of.
    pub fn row_ids(&self, table: &str) -> Vec<i64> {
        self.rows
            .get(table)
            .map(|t| t.keys().copied().collect())
            .unwrap_or_default()
    }

    /// The committed state: every table's newest committed, not deleted rows,
    /// as `[rid, wl, columns...]` sorted (the format of `History::final_state`).
    pub fn committed_state(&self) -> crate::model::DbState {
        let mut out = crate::model::DbState::new();
        for (name, rows) in &self.rows {
            let mut list: Vec<Vec<Value>> = rows
                .values()
                .filter_map(|chain| chain.iter().rev().find(|v| v.committed_at.is_some()))
                .filter(|v| !v.deleted)
                .map(|v| v.row.clone())
                .collect();
            list.sort();
            out.insert(name.clone(), list);
        }
        out
    }

    fn all_mut(&mut self) -> impl Iterator<Item = &mut Version> {
        self.rows
            .values_mut()
            .flat_map(|t| t.values_mut())
            .flatten()
    }
}

/// The primary-key values of `v`'s row at the positions `cols`.
fn key_of<'a>(v: &'a Version, cols: Option<&[usize]>) -> Vec<&'a Value> {
    cols.unwrap_or_default()
        .iter()
        .filter_map(|&i| v.row.get(i))
        .collect()
}

/// The keys of the records the reader's own versions of one row occupy:
/// each own version's key and the key of the version its first own write
/// replaced (a deletion or a key change leaves that record marked by the
/// reader).
fn own_record_keys<'a>(
    chain: &'a [Version],
    own: impl Fn(&Version) -> bool,
    cols: &[usize],
) -> Vec<Vec<&'a Value>> {
    let Some(first) = chain.iter().position(&own) else {
        return Vec::new();
    };
    chain[first.saturating_sub(1)..]
        .iter()
        .enumerate()
        .filter(|(i, v)| own(v) || (*i == 0 && first > 0))
        .map(|(_, v)| key_of(v, Some(cols)))
        .collect()
}

/// Whether version `i` of `chain` changed its row: not the version a
/// matched but unchanged row gets in its updater's name (same write list,
/// same deletion), where the engine wrote nothing.
fn changes_row(chain: &[Version], i: usize) -> bool {
    i == 0 || {
        let (prev, v) = (&chain[i - 1], &chain[i]);
        prev.wl != v.wl || prev.deleted != v.deleted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(wl: &str, writer: Writer, at: Pos, committed: Option<Pos>) -> Version {
        Version {
            row: vec![Value::Int(1), Value::Text(wl.into()), Value::Int(at as i64)],
            wl: wl.parse().unwrap(),
            writer,
            deleted: false,
            written_at: at,
            committed_at: committed,
        }
    }

    #[test]
    fn own_versions_win_and_snapshots_hide_later_commits() {
        let mut s = VersionStore::default();
        s.push("t", 1, version("0", Writer::Initial, 0, Some(0)));
        s.push("t", 1, version("0,2", Writer::Txn(2), 3, None));
        let t1 = Writer::Txn(1);
        assert_eq!(
            s.visible("t", 1, t1, Sight::CommittedBefore(9)).unwrap().wl,
            "0"
        );
        assert_eq!(s.visible("t", 1, t1, Sight::Uncommitted).unwrap().wl, "0,2");
        s.commit(Writer::Txn(2), 5);
        assert_eq!(
            s.visible("t", 1, t1, Sight::CommittedBefore(5)).unwrap().wl,
            "0"
        );
        assert_eq!(
            s.visible("t", 1, t1, Sight::CommittedBefore(6)).unwrap().wl,
            "0,2"
        );
        s.push("t", 1, version("0,2,7", t1, 7, None));
        assert_eq!(
            s.visible("t", 1, t1, Sight::CommittedBefore(1)).unwrap().wl,
            "0,2,7"
        );
        assert!(s.commits_between(t1, 1, 6));
        assert!(!s.commits_between(t1, 5, 9));
    }

    fn keyed(rid: i64, key: i64, writer: Writer, at: Pos, committed: Option<Pos>) -> Version {
        Version {
            row: vec![Value::Int(rid), Value::Text("0".into()), Value::Int(key)],
            wl: "0".parse().unwrap(),
            writer,
            deleted: false,
            written_at: at,
            committed_at: committed,
        }
    }

    fn rids(view: Vec<&Version>) -> Vec<&Value> {
        view.into_iter().map(|v| &v.row[0]).collect()
    }

    /// Row 1 (key 1) is deleted and row 2 inserted with key 1 after T1's
    /// snapshot; T1 then writes row 2. Keyed by record, T1 sees its own row
    /// only; row by row, the snapshot's row 1 as well. T1 moving row 2 to
    /// key 7 leaves key 1's record marked by T1: row 1 stays hidden.
    #[test]
    fn an_own_version_hides_other_rows_with_its_key() {
        let (t1, t2) = (Writer::Txn(1), Writer::Txn(2));
        let mut s = VersionStore::default();
        s.push("t", 1, keyed(1, 1, Writer::Initial, 0, Some(0)));
        let mut gone = keyed(1, 1, t2, 2, Some(4));
        gone.deleted = true;
        s.push("t", 1, gone);
        s.push("t", 2, keyed(2, 1, t2, 3, Some(4)));
        s.push("t", 2, keyed(2, 1, t1, 5, None));
        let at_snapshot = Sight::CommittedBefore(1);
        assert_eq!(
            rids(s.view("t", t1, at_snapshot, None)),
            [&Value::Int(1), &Value::Int(2)]
        );
        assert_eq!(
            rids(s.view("t", t1, at_snapshot, Some(&[2]))),
            [&Value::Int(2)]
        );
        // Others' reads are not affected.
        assert_eq!(
            rids(s.view("t", Writer::Txn(3), at_snapshot, Some(&[2]))),
            [&Value::Int(1)]
        );
        s.push("t", 2, keyed(2, 7, t1, 6, None));
        assert_eq!(
            rids(s.view("t", t1, at_snapshot, Some(&[2]))),
            [&Value::Int(2)]
        );
        assert_eq!(
            s.view("t", t1, at_snapshot, Some(&[2]))[0].row[2],
            Value::Int(7)
        );
    }

    #[test]
    fn rollback_to_savepoint_removes_later_versions_only() {
        let mut s = VersionStore::default();
        let t1 = Writer::Txn(1);
        s.push("t", 1, version("1", t1, 2, None));
        s.push("t", 1, version("1,3", t1, 4, None));
        s.rollback(t1, 3);
        assert_eq!(s.newest("t", 1).unwrap().wl, "1");
        s.rollback(t1, 0);
        assert!(s.newest("t", 1).is_none());
    }
}
