//! What other statements make uncertain about one statement's view: the
//! read view of its subqueries, a deadlock victim's unobserved rollback, and
//! the partial rows of a write still waiting. Each either stops the walk
//! (undecided) or marks the statement so that a difference is undecided.

use super::*;
use crate::engine::profile::SubqueryRead;

/// InnoDB: "a locking read clause in an outer statement does not lock the
/// rows of a table in a nested subquery" (MySQL 8.0 Reference Manual 17.7.2.4
/// "Locking Reads"), and the subqueries of writes are consistent reads at READ
/// COMMITTED / READ UNCOMMITTED (17.7.2.3; profile `Rule::subqueries`): the
/// outer rows of such a statement are read
/// current, its subqueries are consistent reads in the transaction's read view
/// (READ COMMITTED: the statement's, from its start; REPEATABLE READ: the
/// transaction's, which such a subquery opens when none exists). The scratch
/// evaluation has one view per table, so the statement is decided only when
/// no other transaction committed between that read view and the statement's
/// end (both views are then the same); else the case is undecided. At
/// SERIALIZABLE inside a transaction every read locks, subqueries included.
///
/// READ UNCOMMITTED: the subqueries read the newest versions, committed or
/// not: decided only when those agree with the newest committed ones on every
/// table the statement reads and no write of another transaction is waiting
/// halfway there, and the statement did not wait (its subquery read before
/// the wait, when other versions may have been the newest).
pub(super) fn subquery_read_view(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
) -> Result<(), Stop> {
    ck.subquery_sight = None;
    let plain_subqueries = ck.rule_of(r.txn).subqueries(access) == SubqueryRead::Plain
        && view_rule(ck, r, access) == ViewRule::LatestCommitted
        && !(ck.rule_of(r.txn).plain_read_is_locking && in_txn(ck, r))
        && ck.case.stmt(r).is_some_and(|c| has_subquery(&c.stmt));
    if !plain_subqueries {
        return Ok(());
    }
    if ck.rule_of(r.txn).plain_read == ViewRule::Uncommitted {
        return read_uncommitted_subqueries(ck, r, pos);
    }
    let start = ck.submitted_at.get(&r).copied().unwrap_or(pos);
    let per_txn = in_txn(ck, r) && ck.rule_of(r.txn).snapshot != SnapshotPoint::EachStatement;
    let txn = ck.txns.get(&r.txn);
    let read_view = match txn.and_then(|t| t.snapshot.or(t.tentative_snapshot)) {
        Some(at) if per_txn => at,
        _ => start,
    };
    // A tentative read view (the first consistent read may not have reached
    // InnoDB) is no point to materialise a view at.
    let definite = !per_txn || txn.is_some_and(|t| t.snapshot.is_some());
    if ck
        .store
        .commits_between(Writer::Txn(r.txn), read_view.saturating_sub(1), pos)
    {
        // Tables only the subqueries read get their own (earlier) view; a
        // table read both ways, or a statement that waited, stays undecided.
        let only_subqueries = ck
            .case
            .stmt(r)
            .and_then(|c| tables_only_in_subqueries(&c.stmt, &ck.case.schema));
        match only_subqueries {
            Some(tables) if !ck.blocked.contains(&r) && definite => {
                ck.subquery_sight = Some((tables, Sight::CommittedBefore(read_view)));
            }
            Some(_) if !definite => return Err(undecided(Undecided::ReadViewPointUncertain)),
            _ => return Err(undecided(Undecided::SubqueryReadView)),
        }
    }
    // Its subquery may have opened the transaction's read view (whether it
    // ran at all depends on the outer rows): a tentative point.
    if per_txn && ck.rule_of(r.txn).snapshot == SnapshotPoint::FirstConsistentRead {
        if let Some(t) = ck.txns.get_mut(&r.txn) {
            if t.snapshot.is_none() {
                t.tentative_snapshot.get_or_insert(start);
            }
        }
    }
    Ok(())
}

/// An INSERT whose values come from a query (`INSERT ... SELECT`, or a
/// subquery) on an engine with row locks: its key checks read the newest
/// committed rows (they wait for uncommitted ones), its query reads as a
/// subquery of a write does. Where that is a snapshot (PostgreSQL: the
/// statement's or the transaction's, manual 13.2.1 / 13.2.2), the scratch
/// evaluation's one view per table holds both only when no other
/// transaction committed between the snapshot and the statement's end;
/// else the case is undecided (`insert-subquery`). InnoDB's plain
/// subqueries (READ COMMITTED / UNCOMMITTED) are `subquery_read_view`'s;
/// its locking ones read the newest committed rows, as the key checks do.
/// Where keys are checked on the statement's own view (SQLite, turso), one
/// view holds both.
pub(in crate::oracle::view) fn insert_query_view(
    ck: &Checker,
    r: StmtRef,
    access: Access,
    pos: Pos,
) -> Result<(), Stop> {
    let with_query = ck
        .case
        .stmt(r)
        .is_some_and(|c| matches!(c.stmt, Stmt::Insert(_)) && has_subquery(&c.stmt));
    if !with_query || !ck.rule_of(r.txn).row_locks || ck.rule_of(r.txn).keys_checked_at_commit {
        return Ok(());
    }
    let outer = view_rule(ck, r, access);
    let subqueries = ck.rule_of(r.txn).subqueries(access);
    let reads_latest = outer == ViewRule::LatestCommitted
        && (subqueries == SubqueryRead::AsOuter
            || (ck.rule_of(r.txn).plain_read_is_locking && in_txn(ck, r)));
    let innodb_plain = subqueries == SubqueryRead::Plain && outer == ViewRule::LatestCommitted;
    if reads_latest || innodb_plain {
        return Ok(());
    }
    let start = ck.submitted_at.get(&r).copied().unwrap_or(pos);
    let snapshot = peek_snapshot(ck, r, access, pos).at.unwrap_or(start);
    if ck
        .store
        .commits_between(Writer::Txn(r.txn), snapshot.saturating_sub(1), pos)
    {
        return Err(undecided(Undecided::InsertSubquery));
    }
    Ok(())
}

/// The tables `stmt` reads only in subqueries, if no table is read both in
/// a subquery and outside (including the foreign-key checks of a write).
fn tables_only_in_subqueries(
    stmt: &Stmt,
    schema: &crate::model::Schema,
) -> Option<std::collections::BTreeSet<String>> {
    use crate::model::walk;
    let inner = walk::subquery_tables(stmt);
    let mut outer = walk::outer_tables(stmt);
    if stmt.kind().is_write() {
        outer = walk::fk_reach(stmt, &outer, schema);
    }
    inner.is_disjoint(&outer).then_some(inner)
}

/// Whether a deadlock victim's rollback (which the engine performs before
/// the victim's error is reported) may already have resumed a statement of
/// another transaction that still counts as waiting: that statement may have
/// run, and an autocommit one committed, before `r` completed, ahead of its
/// own completion event.
pub(super) fn release_unobserved(ck: &Checker, r: StmtRef) -> bool {
    let doomed_live = ck.doomed_txns.iter().any(|t| *t != r.txn);
    doomed_live
        && ck
            .waiting
            .iter()
            .any(|w| w.txn != r.txn && !ck.doomed_txns.contains(&w.txn))
}

/// READ UNCOMMITTED: the subqueries read the newest versions, committed or
/// not, the outer rows of a write or locking read the newest committed ones.
/// Where the two differ on a table only the subqueries read, that table gets
/// the uncommitted view (`Checker::subquery_sight`); a table read both ways
/// with uncommitted versions, a write of another transaction waiting halfway
/// on a table the statement reads, or a statement that waited (its
/// subqueries read before the wait) is undecided.
fn read_uncommitted_subqueries(ck: &mut Checker, r: StmtRef, pos: Pos) -> Result<(), Stop> {
    let own = Writer::Txn(r.txn);
    let Some(stmt) = ck.case.stmt(r).map(|c| c.stmt.clone()) else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    if partial_write_visible(ck, r) || ck.blocked.contains(&r) {
        return Err(undecided(Undecided::ReadUncommittedSubquery));
    }
    let dirty: std::collections::BTreeSet<String> = crate::model::walk::tables(&stmt)
        .into_iter()
        .filter(|t| {
            ck.view_of(t, own, Sight::Uncommitted)
                != ck.view_of(t, own, Sight::CommittedBefore(pos))
        })
        .collect();
    if dirty.is_empty() {
        return Ok(());
    }
    match tables_only_in_subqueries(&stmt, &ck.case.schema) {
        Some(only) if dirty.is_subset(&only) => {
            ck.subquery_sight = Some((only, Sight::Uncommitted));
            Ok(())
        }
        _ => Err(undecided(Undecided::ReadUncommittedSubquery)),
    }
}

/// Whether a write of another transaction waits now (it may have written
/// part of its rows, its foreign-key actions' rows included) on a table
/// statement `r` reads.
pub(super) fn partial_write_visible(ck: &Checker, r: StmtRef) -> bool {
    let Some(tables) = ck.case.stmt(r).map(|c| crate::model::walk::tables(&c.stmt)) else {
        return true;
    };
    ck.waiting.iter().any(|w| {
        w.txn != r.txn
            && ck.case.stmt(*w).is_some_and(|c| {
                let target = match &c.stmt {
                    Stmt::Insert(i) => &i.table,
                    Stmt::Update(u) => &u.table,
                    Stmt::Delete(d) => &d.table,
                    _ => return false,
                };
                tables.contains(target)
                    || crate::model::walk::cascade_targets(&c.stmt, &ck.case.schema)
                        .iter()
                        .any(|t| tables.contains(t))
            })
    })
}
