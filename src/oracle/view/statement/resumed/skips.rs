//! Why a write or locking read that waited may have skipped a row the last
//! committed state of its run has it act on: the [`ScanRule`] that explains
//! it, from the row's versions in the states of the run (present, deleted,
//! not yet committed, held by another transaction, moved in its indexes).

use super::*;

/// What a row was in one committed state of a statement's run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Presence {
    Present,
    /// Deleted by a committed transaction.
    Deleted,
    /// No committed version yet.
    Absent,
}

fn presence(ck: &Checker, own: Writer, table: &str, rid: i64, before: Pos) -> Presence {
    match ck
        .store
        .visible(table, rid, own, Sight::CommittedBefore(before))
    {
        Some(v) if v.deleted => Presence::Deleted,
        Some(_) => Presence::Present,
        None => Presence::Absent,
    }
}

/// Another transaction holds an uncommitted version of the row at `at`
/// (an uncommitted INSERT, for a row with no committed version).
fn held_by_other(ck: &Checker, own: Writer, table: &str, rid: i64, at: Pos) -> bool {
    ck.store
        .chain(table, rid)
        .iter()
        .any(|v| v.writer != own && v.written_at < at && !v.is_committed_before(at))
}

/// Why a resumed statement may have skipped row `rid`, which the last
/// committed state of its run has it act on (`acts(i)`: it acts on the row
/// in state `i`, which begins at `points[i]`); `None`: no rule explains it.
///
/// - [`ScanRule::SkippedOnCommittedVersion`]: in some state the row's
///   committed version did not match, or was a deletion; or (an UPDATE's
///   semi-consistent read) the row had no committed version while another
///   transaction's uncommitted INSERT of it existed.
/// - [`ScanRule::MissedInsertedRow`]: the row had no committed version when
///   the statement started, and matched in every state that holds it.
/// - [`ScanRule::MissedMovedRow`]: its indexed columns changed during the run
///   (also those of a row another transaction had inserted and held).
#[allow(clippy::too_many_arguments)]
pub(super) fn explain_skip(
    ck: &Checker,
    r: StmtRef,
    table: &str,
    rid: i64,
    points: &[Pos],
    acts: impl Fn(usize) -> bool,
    semi_consistent: bool,
    moved: &BTreeSet<i64>,
) -> Option<ScanRule> {
    let own = Writer::Txn(r.txn);
    for (i, at) in points.iter().enumerate() {
        let skipped_there = match presence(ck, own, table, rid, *at) {
            Presence::Present => !acts(i),
            Presence::Deleted => true,
            Presence::Absent => semi_consistent && held_by_other(ck, own, table, rid, *at),
        };
        if skipped_there {
            return Some(ScanRule::SkippedOnCommittedVersion);
        }
    }
    let last = points[points.len() - 1];
    if presence(ck, own, table, rid, points[0]) == Presence::Absent {
        if moved_while_held(ck, r, table, rid, points[0], last) {
            Some(ScanRule::MissedMovedRow)
        } else {
            Some(ScanRule::MissedInsertedRow)
        }
    } else if moved.contains(&rid) {
        Some(ScanRule::MissedMovedRow)
    } else {
        None
    }
}

/// The positions (in a stored row: after `rid`, `wl`) of `table`'s indexed
/// columns: any key or index, the scan may use any of them.
fn indexed_positions(ck: &Checker, table: &str) -> Vec<usize> {
    let Some(t) = ck.case.schema.table(table) else {
        return Vec::new();
    };
    let mut indexed: BTreeSet<&str> = BTreeSet::new();
    for key in t.unique_keys() {
        indexed.extend(key.iter().map(String::as_str));
    }
    for i in &t.indexes {
        indexed.extend(i.columns.iter().map(String::as_str));
    }
    for fk in &t.foreign_keys {
        indexed.extend(fk.columns.iter().map(String::as_str));
    }
    t.columns
        .iter()
        .enumerate()
        .filter(|(_, c)| indexed.contains(c.name.as_str()))
        .map(|(i, _)| i + 2)
        .collect()
}

fn index_key(positions: &[usize], row: &[Value]) -> Vec<Value> {
    positions
        .iter()
        .map(|i| row.get(*i).cloned().unwrap_or(Value::Null))
        .collect()
}

/// Rows of `table` whose indexed columns differ between the states, or that
/// exist in some only: such a row may have moved behind the scan's cursor.
pub(super) fn moved_rows(ck: &Checker, r: StmtRef, table: &str, states: &[Pos]) -> BTreeSet<i64> {
    let positions = indexed_positions(ck, table);
    let own = Writer::Txn(r.txn);
    let mut out = BTreeSet::new();
    for rid in ck.store.row_ids(table) {
        let keys: BTreeSet<Option<Vec<Value>>> = states
            .iter()
            .map(|s| {
                ck.store
                    .visible(table, rid, own, Sight::CommittedBefore(*s))
                    .filter(|v| !v.deleted)
                    .map(|v| index_key(&positions, &v.row))
            })
            .collect();
        if keys.len() > 1 {
            out.insert(rid);
        }
    }
    out
}

/// A row with no committed version at `at` that another transaction had
/// inserted (uncommitted) by then, and whose indexed columns differ in the
/// committed state beginning at `last`: it moved while that transaction
/// held it.
fn moved_while_held(ck: &Checker, r: StmtRef, table: &str, rid: i64, at: Pos, last: Pos) -> bool {
    let own = Writer::Txn(r.txn);
    let positions = indexed_positions(ck, table);
    let held = ck
        .store
        .chain(table, rid)
        .iter()
        .rev()
        .find(|v| v.writer != own && v.written_at < at && !v.is_committed_before(at))
        .filter(|v| !v.deleted)
        .map(|v| index_key(&positions, &v.row));
    let committed = ck
        .store
        .visible(table, rid, own, Sight::CommittedBefore(last))
        .filter(|v| !v.deleted)
        .map(|v| index_key(&positions, &v.row));
    held.is_some() && committed.is_some() && held != committed
}
