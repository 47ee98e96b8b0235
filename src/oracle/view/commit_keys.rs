//! Unique keys checked at COMMIT (profile rule `keys_checked_at_commit`,
//! turso MVCC): a transaction's statements check keys on its snapshot, so a
//! key another transaction committed since is invisible to them; the COMMIT
//! must then fail with the conflict error (first committer wins), and a
//! COMMIT that succeeds would leave two live rows with one key.

use super::locks::key_values;
use super::state::Checker;
use super::versions::{Pos, Version, Writer};
use serde_json::{json, Value as Json};

/// Whether a transaction's COMMIT must, may or need not fail on a key.
#[derive(Debug, PartialEq)]
pub enum KeyConflict {
    /// No row committed since its snapshot ever held a key it wrote.
    None,
    /// A row committed since its snapshot once held a key it holds, but the
    /// engine's index history decides (the key was since deleted or changed,
    /// or the transaction did not write the key itself).
    May,
    /// A row committed since its snapshot holds a key it wrote: evidence.
    Must(Json),
}

/// The version of a row the snapshot taken at `snap` sees.
fn at_snapshot(chain: &[Version], snap: Pos) -> Option<&Version> {
    chain.iter().rev().find(|v| v.is_committed_before(snap))
}

/// Judges `txn`'s COMMIT: its live rows' keys against the versions other
/// transactions committed after its snapshot.
pub fn conflict(ck: &Checker, txn: u32) -> KeyConflict {
    let own = Writer::Txn(txn);
    let Some(snap) = ck.txns.get(&txn).and_then(|t| t.snapshot) else {
        return KeyConflict::None;
    };
    let mut may = false;
    for table in &ck.case.schema.tables {
        let rids = ck.store.row_ids(&table.name);
        for &rid in &rids {
            let chain = ck.store.chain(&table.name, rid);
            let Some(mine) = chain
                .last()
                .filter(|v| v.writer == own && v.committed_at.is_none() && !v.deleted)
            else {
                continue;
            };
            let keys = key_values(table, &mine.row);
            let before = at_snapshot(chain, snap)
                .filter(|v| !v.deleted)
                .map(|v| key_values(table, &v.row))
                .unwrap_or_default();
            for &other in rids.iter().filter(|r| **r != rid) {
                let chain = ck.store.chain(&table.name, other);
                let latest = chain.iter().rev().find(|v| v.committed_at.is_some());
                for v in chain.iter().filter(|v| {
                    v.writer != own && v.committed_at.is_some_and(|c| c > snap) && !v.deleted
                }) {
                    let theirs = key_values(table, &v.row);
                    let Some(key) = keys.iter().find(|k| theirs.contains(k)) else {
                        continue;
                    };
                    let wrote_key = !before.contains(key);
                    if wrote_key && latest == Some(v) {
                        return KeyConflict::Must(json!({
                            "table": table.name,
                            "key": { "columns": key.0, "values": key.1 },
                            "row": rid,
                            "committed_row": other,
                            "committed_at": v.committed_at,
                            "snapshot": snap,
                        }));
                    }
                    may = true;
                }
            }
        }
    }
    if may {
        KeyConflict::May
    } else {
        KeyConflict::None
    }
}
