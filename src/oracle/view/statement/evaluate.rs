//! Evaluating a statement on its predicted view: the view materialised in the
//! scratch tables, the statement run there, and what it read and wrote.

use super::*;

/// A statement evaluated on its predicted view.
pub(super) struct Evaluation {
    pub(super) outcome: Outcome,
    /// Rows it locks or writes, with the lock mode (for blocking and conflicts).
    pub(super) targets: Vec<(String, i64, LockMode)>,
    /// The rows it wrote: the difference of its scratch table before and after
    /// (so rows an upsert or REPLACE deleted or inserted are seen too).
    pub(super) writes: Vec<RowWrite>,
    /// Written rows as read back from the scratch table, by row id.
    pub(super) written_rows: Vec<(i64, Vec<Value>)>,
    /// The view it ran on, per table (evidence).
    pub(super) view: serde_json::Value,
}

pub(super) fn rows_of(versions: Vec<&Version>) -> Vec<Vec<Value>> {
    versions.into_iter().map(|v| v.row.clone()).collect()
}

/// Fills every scratch table with the view `sight` gives `reader` (the
/// tables only a current read's plain subqueries read: their own view,
/// `Checker::subquery_sight`).
pub(super) fn materialise(
    ck: &mut Checker,
    reader: Writer,
    sight: Sight,
) -> Result<serde_json::Value, Stop> {
    // Schema order: parents before the tables referencing them.
    let tables: Vec<String> = ck
        .case
        .schema
        .tables
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let mut view = serde_json::Map::new();
    // Filling a parent table may empty the tables referencing it (PostgreSQL):
    // a second pass refills those.
    for _pass in 0..2 {
        for t in &tables {
            let sight = match &ck.subquery_sight {
                Some((only_subqueries, earlier)) if only_subqueries.contains(t) => *earlier,
                _ => sight,
            };
            let rows = rows_of(ck.view_of(t, reader, sight));
            ck.scratch
                .fill(t, &rows)
                .map_err(|_| undecided(Undecided::ViewNotMaterialisable))?;
            view.insert(t.clone(), json!(rows));
        }
    }
    if !tables.iter().all(|t| ck.scratch.is_filled(t)) {
        return Err(undecided(Undecided::ViewNotMaterialisable));
    }
    Ok(serde_json::Value::Object(view))
}

pub(super) fn evaluate(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    snap: &SnapshotInfo,
    pos: Pos,
) -> Result<Evaluation, Stop> {
    let Some(stmt) = ck.case.stmt(r).map(|c| c.stmt.clone()) else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    let Some(p) = ck.prepared.get(&r).cloned() else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    let reader = Writer::Txn(r.txn);
    let (rule, sight) = statement_sight(ck, r, access, &stmt, snap, pos);
    let mut view = materialise(ck, reader, sight)?;
    let lock = ck
        .rule_of(r.txn)
        .lock_of(access, in_txn(ck, r))
        .unwrap_or(LockMode::ForShare);
    let mut recheck_targets = None;
    if rule == ViewRule::SnapshotThenLatest {
        let Some(scope) = recheck_scope(&stmt, lock) else {
            return locking_read_on_snapshot(ck, r, reader, sight, pos, lock, view);
        };
        recheck_targets = Some(recheck_on_latest(
            ck, &stmt, scope, reader, sight, pos, &mut view,
        )?);
    }
    // Rows an UPDATE/DELETE matches on its view: it writes (and locks) each of
    // them when it succeeds, also when the scratch run fails on a constraint.
    if recheck_targets.is_none() {
        recheck_targets = matched_targets(ck, &stmt)?;
    }
    let (outcome, (writes, written_rows)) = run_on_scratch(ck, &stmt, &p)?;
    let targets = match recheck_targets {
        Some(t) => t,
        None if access == Access::Write => writes
            .iter()
            .filter(|w| w.before.is_some())
            .map(|w| (w.table.clone(), w.rid, LockMode::ForUpdate))
            .collect(),
        None if outcome.reads_complete => outcome
            .reads
            .iter()
            .map(|v| (v.table.clone(), v.rid, lock))
            .collect(),
        None => Vec::new(),
    };
    Ok(Evaluation {
        outcome,
        writes,
        targets,
        written_rows,
        view,
    })
}

/// The view rule statement `r` reads by, and the sight it gives.
fn statement_sight(
    ck: &Checker,
    r: StmtRef,
    access: Access,
    stmt: &Stmt,
    snap: &SnapshotInfo,
    pos: Pos,
) -> (ViewRule, Sight) {
    let rule = view_rule(ck, r, access);
    let start = ck.submitted_at.get(&r).copied().unwrap_or(pos);
    // Inserts read nothing: on the servers their unique checks see the newest
    // committed rows (they wait for uncommitted ones); where keys are checked
    // at COMMIT (turso MVCC), the snapshot's.
    let rule = match stmt {
        Stmt::Insert(_)
            if ck.rule_of(r.txn).row_locks && !ck.rule_of(r.txn).keys_checked_at_commit =>
        {
            ViewRule::LatestCommitted
        }
        _ => rule,
    };
    let sight = match rule {
        ViewRule::Uncommitted => Sight::Uncommitted,
        ViewRule::LatestCommitted => Sight::CommittedBefore(pos),
        ViewRule::Snapshot => Sight::CommittedBefore(snap.at.unwrap_or(pos)),
        ViewRule::SnapshotThenLatest => Sight::CommittedBefore(start),
    };
    (rule, sight)
}

/// Rows a statement locks or writes, with the lock mode.
type Targets = Vec<(String, i64, LockMode)>;

/// The rows a statement re-checks on the newest versions: table, alias,
/// condition and lock mode.
type RecheckScope = (String, String, Option<Expr>, LockMode);

/// What a statement re-checks after reading its snapshot (an UPDATE, a
/// DELETE, a single-table locking read); `None` for other locking reads.
fn recheck_scope(stmt: &Stmt, lock: LockMode) -> Option<RecheckScope> {
    match stmt {
        Stmt::Update(u) => Some((
            u.table.clone(),
            u.table.clone(),
            u.where_.clone(),
            LockMode::ForUpdate,
        )),
        Stmt::Delete(d) => Some((
            d.table.clone(),
            d.table.clone(),
            d.where_.clone(),
            LockMode::ForUpdate,
        )),
        // A single-table locking read re-checks its rows like a write
        // (13.2.1: "the same as UPDATE ... in terms of searching for
        // target rows"); LIMIT counts rows after the re-check.
        Stmt::Select(sel) if single_table_rows(sel) => Some((
            sel.from[0].table.clone(),
            sel.from[0].alias.clone(),
            sel.where_.clone(),
            lock,
        )),
        _ => None,
    }
}

/// The rows a statement matched on its snapshot, as targets; where any of
/// them changed since, its table refilled with their newest versions (and
/// `view` says so).
fn recheck_on_latest(
    ck: &mut Checker,
    stmt: &Stmt,
    (table, alias, where_, mode): RecheckScope,
    reader: Writer,
    sight: Sight,
    pos: Pos,
    view: &mut serde_json::Value,
) -> Result<Targets, Stop> {
    let candidates = ck
        .scratch
        .matching_as(&table, &alias, where_.as_ref())
        .map_err(|_| undecided(Undecided::ScratchFailed))?;
    let latest = Sight::CommittedBefore(pos);
    let changed = candidates.iter().any(|rid| {
        let then = ck.store.visible(&table, *rid, reader, sight).map(|v| &v.wl);
        let now = ck.store.visible(&table, *rid, reader, latest);
        then != now.map(|v| &v.wl) || now.is_none_or(|v| v.deleted)
    });
    if changed {
        if has_subquery(stmt) {
            return Err(undecided(Undecided::RecheckWithSubquery));
        }
        let rows: Vec<Vec<Value>> = candidates
            .iter()
            .filter_map(|rid| ck.store.visible(&table, *rid, reader, latest))
            .filter(|v| !v.deleted)
            .map(|v| v.row.clone())
            .collect();
        ck.scratch
            .fill(&table, &rows)
            .map_err(|_| undecided(Undecided::ViewNotMaterialisable))?;
        *view = json!({ table.clone(): rows, "rechecked_from_snapshot": true });
    }
    Ok(candidates
        .into_iter()
        .map(|rid| (table.clone(), rid, mode))
        .collect())
}

/// The rows an UPDATE or DELETE matches on the materialised view, as
/// targets locked for update; `None` for other statements.
fn matched_targets(ck: &mut Checker, stmt: &Stmt) -> Result<Option<Targets>, Stop> {
    let matched = match stmt {
        Stmt::Update(u) => Some((u.table.clone(), u.where_.clone())),
        Stmt::Delete(d) => Some((d.table.clone(), d.where_.clone())),
        _ => None,
    };
    let Some((table, where_)) = matched else {
        return Ok(None);
    };
    let rids = ck
        .scratch
        .matching(&table, where_.as_ref())
        .map_err(|_| undecided(Undecided::ScratchFailed))?;
    Ok(Some(
        rids.into_iter()
            .map(|rid| (table.clone(), rid, LockMode::ForUpdate))
            .collect(),
    ))
}

/// Runs the prepared statement on the materialised view: its outcome, and
/// for a write the rows it changed and the written rows as read back.
fn run_on_scratch(
    ck: &mut Checker,
    stmt: &Stmt,
    p: &crate::instrument::Prepared,
) -> Result<(Outcome, WriteEffects), Stop> {
    let before = match &p.shape {
        Shape::Write { table, .. } => Some((
            table.clone(),
            ck.scratch
                .read(table)
                .map_err(|_| undecided(Undecided::ScratchFailed))?,
        )),
        _ => None,
    };
    let mut outcome = ck.scratch.run(p);
    if outcome
        .error
        .as_ref()
        .is_some_and(|e| e.class == ErrorClass::ConnectionLost)
    {
        // The scratch session missed its deadline or lost the server: no
        // answer to compare.
        return Err(undecided(Undecided::ScratchFailed));
    }
    let skipped_row = match stmt {
        Stmt::Insert(i) => {
            !ck.scratch_foreign_keys
                && insert_ignore_emulated(ck, i)
                && outcome
                    .error
                    .as_ref()
                    .is_some_and(|e| e.class == ErrorClass::ForeignKeyViolation)
        }
        _ => false,
    };
    if skipped_row {
        // INSERT IGNORE skipped the row: no write, no error.
        outcome = Outcome {
            reads_complete: true,
            writes_complete: true,
            ..Outcome::default()
        };
    }
    let (writes, written_rows) = match before {
        Some((table, before)) if outcome.ok() && !skipped_row => {
            write_effects(ck, &table, &before)?
        }
        _ => (Vec::new(), Vec::new()),
    };
    Ok((outcome, (writes, written_rows)))
}

/// What a write did to scratch table `table` (`before`: its rows before the
/// write): the rows that changed, and the written rows as read back.
pub(super) type WriteEffects = (Vec<RowWrite>, Vec<(i64, Vec<Value>)>);

pub(super) fn write_effects(
    ck: &mut Checker,
    table: &str,
    before: &[Vec<Value>],
) -> Result<WriteEffects, Stop> {
    let after = ck
        .scratch
        .read(table)
        .map_err(|_| undecided(Undecided::ScratchFailed))?;
    let writes = row_diff(table, before, &after).map_err(|e| {
        tracing::warn!("scratch table {table}: {e}");
        undecided(Undecided::ScratchRowUnreadable)
    })?;
    let written_rows = writes
        .iter()
        .filter(|w| w.after.is_some())
        .filter_map(|w| {
            after
                .iter()
                .find(|row| row.first() == Some(&Value::Int(w.rid)))
                .map(|row| (w.rid, row.clone()))
        })
        .collect();
    Ok((writes, written_rows))
}

/// A SELECT whose result rows are rows of its one table matching its WHERE
/// (no join, grouping, aggregate, DISTINCT or subquery); LIMIT may cut them.
pub(super) fn single_table(sel: &Select) -> bool {
    sel.from.len() == 1
        && sel.from[0].join.is_none()
        && sel.group_by.is_empty()
        && !sel.distinct
        && !sel
            .items
            .iter()
            .any(|i| i.expr.has_aggregate() || i.expr.has_subquery())
        && !sel.where_.as_ref().is_some_and(Expr::has_subquery)
}

/// A SELECT whose result rows are exactly its one table's rows matching its
/// WHERE ([`single_table`] without LIMIT).
pub(super) fn single_table_rows(sel: &Select) -> bool {
    single_table(sel) && sel.limit.is_none()
}

/// PostgreSQL READ COMMITTED locking read: evaluated on the statement's
/// snapshot; decided only when no row it returns changed since (otherwise the
/// engine re-checks the newest versions, which is not modelled for reads).
pub(super) fn locking_read_on_snapshot(
    ck: &mut Checker,
    r: StmtRef,
    reader: Writer,
    sight: Sight,
    pos: Pos,
    lock: LockMode,
    view: serde_json::Value,
) -> Result<Evaluation, Stop> {
    let Some(p) = ck.prepared.get(&r).cloned() else {
        return Err(undecided(Undecided::UnknownStatement));
    };
    let outcome = ck.scratch.run(&p);
    if !outcome.reads_complete {
        return Err(undecided(Undecided::LockingReadRecheck));
    }
    let latest = Sight::CommittedBefore(pos);
    let changed = outcome.reads.iter().any(|v| {
        let now = ck.store.visible(&v.table, v.rid, reader, latest);
        let then = ck.store.visible(&v.table, v.rid, reader, sight);
        now.map(|x| (&x.wl, x.deleted)) != then.map(|x| (&x.wl, x.deleted))
    });
    if changed {
        return Err(undecided(Undecided::LockingReadRecheck));
    }
    let targets = outcome
        .reads
        .iter()
        .map(|v| (v.table.clone(), v.rid, lock))
        .collect();
    Ok(Evaluation {
        outcome,
        writes: Vec::new(),
        targets,
        written_rows: Vec::new(),
        view,
    })
}

/// What changed between two readings of a table (`[rid, wl, ...]` rows); an
/// error for a row without its `rid, wl`.
pub(super) fn row_diff(
    table: &str,
    before: &[Vec<Value>],
    after: &[Vec<Value>],
) -> Result<Vec<RowWrite>, String> {
    fn key(row: &[Value]) -> Result<(i64, WriteList), String> {
        match (row.first(), row.get(1).map(WriteList::from_value)) {
            (Some(Value::Int(rid)), Some(Ok(Some(wl)))) => Ok((*rid, wl)),
            (_, Some(Err(e))) => Err(e),
            _ => Err(format!("a row without rid and wl: {row:?}")),
        }
    }
    let b: std::collections::BTreeMap<i64, WriteList> =
        before.iter().map(|r| key(r)).collect::<Result<_, _>>()?;
    let a: std::collections::BTreeMap<i64, WriteList> =
        after.iter().map(|r| key(r)).collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for rid in b.keys().chain(a.keys().filter(|k| !b.contains_key(k))) {
        let (old, new) = (b.get(rid), a.get(rid));
        if old != new {
            out.push(RowWrite {
                table: table.to_string(),
                rid: *rid,
                before: old.cloned(),
                after: new.cloned(),
            });
        }
    }
    Ok(out)
}

/// Writes as net changes per row, sorted: a statement that inserts a row and
/// then updates it (a multi-row upsert) reports two writes of one row.
pub(super) fn sorted_writes(w: &[RowWrite]) -> Vec<RowWrite> {
    let mut net: Vec<RowWrite> = Vec::new();
    for w in w {
        match net
            .iter_mut()
            .find(|n| n.table == w.table && n.rid == w.rid)
        {
            Some(n) => n.after = w.after.clone(),
            None => net.push(w.clone()),
        }
    }
    net.retain(|n| n.before != n.after);
    net.sort();
    net
}
