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

/// How a resumed locking read's rows are explained.
pub(super) enum ReadJudgement {
    /// A row no rule explains, and the violation's summary.
    Unexplained(i64, String),
    /// The rows it skipped though the last committed state of its run has
    /// them match, with the rule that explains each.
    Skipped(BTreeMap<i64, ScanRule>),
}

/// Judges the rows a resumed locking read `r` returned and
/// skipped. A returned row is locked from the moment it is read, so no later
/// commit changes it: it must be the row's version in the last committed
/// state, matching there. Without LIMIT, a row that matches in the last state
/// and was not returned needs a rule that explains the skip ([`explain_skip`];
/// a locking read has no semi-consistent read: it waits for a row another
/// transaction inserted).
pub(super) fn judge_reads(
    ck: &Checker,
    r: StmtRef,
    table: &str,
    reads_per_state: &StateReads,
    moved: &BTreeSet<i64>,
    read: &BTreeMap<i64, WriteList>,
    limited: bool,
) -> ReadJudgement {
    let Some((_, last)) = reads_per_state.last() else {
        return ReadJudgement::Skipped(BTreeMap::new());
    };
    let who = label(ck, r);
    for (rid, wl) in read {
        if last.get(rid) == Some(wl) {
            continue;
        }
        let earlier = reads_per_state
            .iter()
            .any(|(_, reads)| reads.get(rid) == Some(wl));
        let summary = if earlier {
            format!(
                "{who} (after a lock wait) returned row {rid} of {table} at version {wl}, older than the version committed when it got the row's lock (no later commit can change a row it holds)"
            )
        } else {
            format!(
                "{who} (after a lock wait) returned row {rid} of {table} at version {wl}, which matched in no committed state it could have read"
            )
        };
        return ReadJudgement::Unexplained(*rid, summary);
    }
    let mut by_rule = BTreeMap::new();
    if limited {
        return ReadJudgement::Skipped(by_rule);
    }
    let points: Vec<Pos> = reads_per_state.iter().map(|s| s.0).collect();
    for rid in last.keys().filter(|rid| !read.contains_key(rid)) {
        let matched = |i: usize| reads_per_state[i].1.contains_key(rid);
        match explain_skip(ck, r, table, *rid, &points, matched, false, moved) {
            Some(rule) => {
                by_rule.insert(*rid, rule);
            }
            None => {
                let summary = format!(
                    "{who} (after a lock wait) skipped row {rid} of {table}, which matched in every committed state it could have read"
                );
                return ReadJudgement::Unexplained(*rid, summary);
            }
        }
    }
    ReadJudgement::Skipped(by_rule)
}
