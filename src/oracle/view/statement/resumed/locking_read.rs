//! What a resumed locking read may have read: the rows matching its WHERE
//! in each committed state it may have scanned, and a row it returned or
//! skipped against all of them.

use super::*;

/// Per committed state a locking read may have scanned (by where it begins),
/// the versions of the rows matching its WHERE.
pub(super) type StateReads = Vec<(Pos, BTreeMap<i64, WriteList>)>;

/// The rows single-table SELECT `sel` of `r` matches in each committed state
/// between `start` and `pos`, with their versions.
pub(super) fn reads_per_state(
    ck: &mut Checker,
    r: StmtRef,
    sel: &Select,
    start: Pos,
    pos: Pos,
) -> Result<StateReads, Stop> {
    let (table, alias) = (&sel.from[0].table, &sel.from[0].alias);
    let own = Writer::Txn(r.txn);
    let mut reads_per_state: StateReads = Vec::new();
    for before in state_points(ck, r, start, pos) {
        let sight = Sight::CommittedBefore(before);
        materialise(ck, own, sight)?;
        let rids = ck
            .scratch
            .matching_as(table, alias, sel.where_.as_ref())
            .map_err(|_| undecided(Undecided::ResumedScanStateError))?;
        let reads = rids
            .into_iter()
            .filter_map(|rid| {
                let v = ck.store.visible(table, rid, own, sight)?;
                Some((rid, v.wl.clone()))
            })
            .collect();
        reads_per_state.push((before, reads));
    }
    Ok(reads_per_state)
}

/// A row the locking read `who` returned at a version that matched in no
/// state, or (without LIMIT) skipped though it matched, unmoved, in every
/// state: the row and the violation's summary.
pub(super) fn misread_row(
    who: &str,
    table: &str,
    reads_per_state: &StateReads,
    moved: &BTreeSet<i64>,
    read: &BTreeMap<i64, WriteList>,
    limited: bool,
) -> Option<(i64, String)> {
    for (rid, wl) in read {
        if !reads_per_state
            .iter()
            .any(|(_, reads)| reads.get(rid) == Some(wl))
        {
            let summary = format!(
                "{who} (after a lock wait) returned row {rid} of {table} at version {wl}, which matched in no committed state it could have read"
            );
            return Some((*rid, summary));
        }
    }
    if limited {
        return None;
    }
    for rid in reads_per_state[0].1.keys() {
        let everywhere = reads_per_state
            .iter()
            .all(|(_, reads)| reads.contains_key(rid));
        if everywhere && !moved.contains(rid) && !read.contains_key(rid) {
            let summary = format!(
                "{who} (after a lock wait) skipped row {rid} of {table}, which matched in every committed state it could have read"
            );
            return Some((*rid, summary));
        }
    }
    None
}
