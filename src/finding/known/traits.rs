//! The case traits of known issues (`when`): properties of a case, its
//! history and the finding that pin a known bug down more precisely than a
//! signature can.

use super::involved;
use crate::model::{
    setting_is_on, Deferral, EventKind, ForeignKey, History, OnConflict, Settings, Stmt, StmtRef,
    TestCase,
};
use crate::oracle::Finding;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A property of the case (and of the statements the finding involves) that
/// pins a known bug down more precisely than a signature can.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trait {
    /// A transaction took a savepoint before its first data statement and
    /// later rolled back to it successfully: before the finding's judged
    /// statement, if it has one (any transaction), else one the finding names
    /// (or any, when it names none).
    SavepointBeforeFirstStatementRolledBack,
    /// Every statement the finding involves is a locking read with a subquery
    /// that waited for a lock.
    BlockedLockingReadWithSubquery,
    /// The finding's statement is a plain SELECT of a table in which an
    /// earlier UPDATE (or upsert's update arm) of its transaction matched a
    /// row without changing it, at a version another transaction wrote.
    ReadAfterUnchangedUpdate,
    /// The finding's transaction, at REPEATABLE READ, wrote a row whose
    /// version another, committed transaction produced by changing the row's
    /// primary key (InnoDB: a delete of the old record and an insert of a
    /// new one).
    WriteAfterConcurrentKeyChange,
    /// A transaction the finding names (else any) took a savepoint before its
    /// first data statement, and another transaction committed between the
    /// two (turso: the SAVEPOINT took the read snapshot).
    CommitBetweenSavepointAndFirstStatement,
    /// Two transactions open at the same time wrote the two sides of one
    /// foreign key ([`crate::model::fk_conflict`]).
    ConcurrentParentChildWrites,
    /// A foreign key checked at COMMIT (`DEFERRABLE INITIALLY DEFERRED`)
    /// with an `ON UPDATE` action, and a successful statement that changed
    /// the key it references (an UPDATE of it, or a REPLACE into its table).
    DeferredKeyActionOnUpdate,
    /// A transaction deleted rows of a deferred foreign key's parent table
    /// and later inserted into that table, both successfully, or ran a
    /// successful REPLACE into it (which deletes the rows its new row
    /// conflicts with and inserts).
    DeferredKeyParentDeletedAndReinserted,
    /// A transaction deleted rows of a deferred foreign key's parent table
    /// (a DELETE of it, or a REPLACE into it), the key's child column leading
    /// an index (the primary key, a UNIQUE key) of the child table, and later wrote the
    /// child table (an UPDATE of the key's column, or a DELETE), both
    /// successfully (turso: the indexed parent-side check counts one
    /// violation per deleted parent, the child write repays one per child).
    DeferredKeyParentDeletedThenChildWritten,
    /// A foreign key checked at COMMIT (`DEFERRABLE INITIALLY DEFERRED`)
    /// with an `ON DELETE` action that writes children (CASCADE, SET NULL),
    /// and a successful statement that deleted rows of the key's parent
    /// table (a DELETE of it, or a REPLACE into it).
    DeferredKeyActionOnDelete,
    /// A transaction that committed switched its foreign keys back to
    /// immediate (`SET CONSTRAINTS ALL IMMEDIATE`, SQLite `PRAGMA
    /// defer_foreign_keys = OFF`) after a successful write.
    ConstraintsSetImmediateAfterWrite,
    /// The row the finding names (`details.table`, `details.rid`) was
    /// inserted by another transaction's statement that completed after the
    /// finding's statement was submitted (and was waiting): MDEV-34106's
    /// shape, a row inserted behind the scan position during the wait.
    RowInsertedWhileWaiting,
    /// A statement the finding involves is a SELECT with a LEFT JOIN that
    /// failed with an engine panic "index cursor should have a record"
    /// (turso#9243: the null-extended row of the joined table read through
    /// an index).
    LeftJoinIndexCursorPanic,
    /// The finding's statement is an UPDATE in a session at READ
    /// UNCOMMITTED that runs with `innodb_snapshot_isolation=ON`, set by
    /// itself or the server's default where it sets nothing (its
    /// semi-consistent read judges a held row on the uncommitted version).
    ReadUncommittedSnapshotIsolationUpdate,
    /// The finding's statement is a locking read, in a session that runs
    /// with `innodb_snapshot_isolation=ON` (set by itself, or the server's
    /// default where it sets nothing), of a table with a secondary index or
    /// unique key (InnoDB may lock through it). Whether it waited does not
    /// matter: through a covering index a record committed since the read
    /// view is returned without 1020 too
    /// (`tests/mariadb_bugs.rs::a_snapshot_isolation_locking_read_through_a_covering_index_fails_on_a_committed_change`).
    SnapshotIsolationLockingReadAfterWaitOnSecondaryIndex,
    /// A successful REPLACE into the parent table of a foreign key whose
    /// child column has an index of its own (turso: the REPLACE's parent
    /// deletes then miss the children found through that index).
    ReplaceIntoParentOfIndexedChildKey,
    /// A write of a cursor's transaction failed while the cursor was open,
    /// before one of its steps (turso: the failed statement's rollback ends
    /// the connection's other open statements).
    CursorStepAfterFailedWrite,
    /// The case checkpointed after its set-up ([`TestCase::checkpoint`]) and
    /// the finding's statement is an upsert (`ON CONFLICT DO UPDATE`), or
    /// another transaction ran one successfully (turso MVCC: after a
    /// checkpoint an upsert's update arm neither takes nor leaves a
    /// write-write conflict).
    UpsertAfterCheckpoint,
}

/// The transactions a finding's evidence names: graph `transactions`
/// (`T1`, `T1#2`), a statement label or reference (`stmt`), a lock holder
/// (`details.holder`), and the statements of `writes`, `reads` and
/// `statements`. `None` when it names none (final-state differences).
pub(super) fn named_txns(finding: &Finding) -> Option<BTreeSet<u32>> {
    fn txn_of(v: &serde_json::Value) -> Option<u32> {
        match v {
            serde_json::Value::String(label) => label
                .trim_start_matches('T')
                .split('#')
                .next()
                .and_then(|id| id.parse().ok()),
            serde_json::Value::Object(_) => StmtRef::deserialize(v).ok().map(|r| r.txn),
            serde_json::Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            _ => None,
        }
    }
    let ev = &finding.evidence;
    let mut out = BTreeSet::new();
    let list = |key: &str| ev.get(key).and_then(|v| v.as_array()).into_iter().flatten();
    out.extend(list("transactions").filter_map(txn_of));
    out.extend(ev.get("stmt").and_then(txn_of));
    out.extend(ev.pointer("/details/holder").and_then(txn_of));
    for key in ["writes", "reads", "statements"] {
        for item in list(key) {
            out.extend(txn_of(item).or_else(|| item.get("stmt").and_then(txn_of)));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The one statement a finding is about (`view`'s `stmt` label `T4#5`:
/// statement index 5 of T4, 0-based as in `StmtRef`), if any.
fn finding_stmt(finding: &Finding) -> Option<StmtRef> {
    let label = finding.evidence.get("stmt")?.as_str()?;
    let (txn, index) = label.trim_start_matches('T').split_once('#')?;
    Some(StmtRef {
        txn: txn.parse().ok()?,
        index: index.parse().ok()?,
    })
}

/// Whether a committed transaction ran `SET CONSTRAINTS ... IMMEDIATE`
/// successfully after one of its writes succeeded.
fn constraints_set_immediate_after_write(case: &TestCase, history: &History) -> bool {
    use crate::model::{ConstraintTiming, TxnEnd};
    case.txns.iter().any(|t| {
        let ok = |index: usize| {
            history
                .outcome(StmtRef {
                    txn: t.id,
                    index: index as u32,
                })
                .is_some_and(crate::model::Outcome::ok)
        };
        let first_write = t
            .stmts
            .iter()
            .enumerate()
            .position(|(i, s)| s.stmt.kind().is_write() && ok(i));
        history.txn_end(t.id) == Some(TxnEnd::Committed)
            && first_write.is_some_and(|w| {
                t.stmts.iter().enumerate().skip(w + 1).any(|(i, s)| {
                    s.stmt == Stmt::SetConstraints(ConstraintTiming::Immediate) && ok(i)
                })
            })
    })
}

/// The foreign keys checked at COMMIT by default (`DEFERRABLE INITIALLY
/// DEFERRED`) for which `also` holds.
fn deferred_keys<'c>(
    case: &'c TestCase,
    also: impl Fn(&ForeignKey) -> bool + 'c,
) -> impl Iterator<Item = &'c ForeignKey> + 'c {
    case.schema
        .tables
        .iter()
        .flat_map(|t| &t.foreign_keys)
        .filter(move |fk| fk.deferrable == Some(Deferral::InitiallyDeferred) && also(fk))
}

/// The statements of `case` that ran successfully, in completion order.
fn succeeded<'c>(
    case: &'c TestCase,
    history: &'c History,
) -> impl Iterator<Item = (StmtRef, &'c Stmt)> + 'c {
    history
        .outcomes
        .iter()
        .filter(|o| o.outcome.ok())
        .filter_map(|o| Some((o.stmt, &case.stmt(o.stmt)?.stmt)))
}

/// Whether a deferred foreign key with an ON DELETE action that writes
/// children saw rows of its parent table deleted by a statement that
/// succeeded.
fn deferred_key_action_on_delete(case: &TestCase, history: &History) -> bool {
    let parents: BTreeSet<&str> = deferred_keys(case, |fk| fk.on_delete.writes_children())
        .map(|fk| fk.ref_table.as_str())
        .collect();
    succeeded(case, history).any(|(_, stmt)| match stmt {
        Stmt::Delete(d) => parents.contains(d.table.as_str()),
        Stmt::Insert(i) => {
            i.on_conflict == OnConflict::Replace && parents.contains(i.table.as_str())
        }
        _ => false,
    })
}

/// Whether a deferred foreign key with an ON UPDATE action saw its
/// referenced key changed by a statement that succeeded.
fn deferred_key_action_on_update(case: &TestCase, history: &History) -> bool {
    let keys: Vec<&ForeignKey> = deferred_keys(case, |fk| fk.on_update.writes_children()).collect();
    succeeded(case, history).any(|(_, stmt)| {
        keys.iter().any(|fk| match stmt {
            Stmt::Update(u) => {
                fk.ref_table == u.table
                    && u.assignments
                        .iter()
                        .any(|a| fk.ref_columns.contains(&a.column))
            }
            Stmt::Insert(i) => fk.ref_table == i.table && i.on_conflict == OnConflict::Replace,
            _ => false,
        })
    })
}

/// Whether a transaction deleted rows of a deferred key's parent table and
/// later (completion order) inserted into it, both successfully, or did
/// both in one successful REPLACE into it.
fn deferred_key_parent_deleted_and_reinserted(case: &TestCase, history: &History) -> bool {
    let parents: BTreeSet<&str> = deferred_keys(case, |_| true)
        .map(|fk| fk.ref_table.as_str())
        .collect();
    let mut deleted: BTreeSet<(u32, &str)> = BTreeSet::new();
    for (r, stmt) in succeeded(case, history) {
        match stmt {
            Stmt::Delete(d) if parents.contains(d.table.as_str()) => {
                deleted.insert((r.txn, d.table.as_str()));
            }
            Stmt::Insert(i)
                if i.on_conflict == OnConflict::Replace && parents.contains(i.table.as_str()) =>
            {
                return true;
            }
            Stmt::Insert(i) if deleted.contains(&(r.txn, i.table.as_str())) => {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// Whether a transaction deleted rows of the parent table of a deferred key
/// whose child column leads an index (the primary key, a UNIQUE key) of the
/// child table, and later (completion order) updated that column of the child
/// table or deleted from it, both successfully.
fn deferred_key_parent_deleted_then_child_written(case: &TestCase, history: &History) -> bool {
    let indexed: Vec<(&str, &ForeignKey)> = case
        .schema
        .tables
        .iter()
        .flat_map(|t| t.foreign_keys.iter().map(move |fk| (t, fk)))
        .filter(|(t, fk)| {
            let lead = fk.columns.first();
            fk.deferrable == Some(Deferral::InitiallyDeferred)
                && (t.primary_key.first() == lead
                    || t.uniques.iter().any(|u| u.first() == lead)
                    || t.indexes.iter().any(|i| i.columns.first() == lead))
        })
        .map(|(t, fk)| (t.name.as_str(), fk))
        .collect();
    let mut deleted: BTreeSet<(u32, &str)> = BTreeSet::new();
    for (r, stmt) in succeeded(case, history) {
        for (child, fk) in &indexed {
            let parent = fk.ref_table.as_str();
            match stmt {
                Stmt::Delete(d) if d.table == parent => {
                    deleted.insert((r.txn, parent));
                }
                Stmt::Insert(i) if i.table == parent && i.on_conflict == OnConflict::Replace => {
                    deleted.insert((r.txn, parent));
                }
                Stmt::Delete(d) if d.table == *child && deleted.contains(&(r.txn, parent)) => {
                    return true;
                }
                Stmt::Update(u)
                    if u.table == *child
                        && deleted.contains(&(r.txn, parent))
                        && u.assignments.iter().any(|a| fk.columns.contains(&a.column)) =>
                {
                    return true;
                }
                _ => {}
            }
        }
    }
    false
}

/// Whether transaction `txn`'s session runs with
/// `innodb_snapshot_isolation=ON`: set by itself, or the server's default
/// where it sets nothing (`server`: the recorded `EngineInfo::settings`;
/// MariaDB 11.8 has it ON by default).
fn snapshot_isolation_on(case: &TestCase, txn: u32, server: &Settings) -> bool {
    case.setting_of(txn, "innodb_snapshot_isolation", server)
        .is_some_and(|v| setting_is_on(&v))
}

/// Whether the finding's statement is an UPDATE in a session at READ
/// UNCOMMITTED that runs with `innodb_snapshot_isolation=ON`.
fn read_uncommitted_snapshot_isolation_update(
    finding: &Finding,
    case: &TestCase,
    server: &Settings,
) -> bool {
    finding_stmt(finding).is_some_and(|r| {
        matches!(case.stmt(r).map(|c| &c.stmt), Some(Stmt::Update(_)))
            && case.level_of(r.txn) == crate::model::Isolation::ReadUncommitted
            && snapshot_isolation_on(case, r.txn, server)
    })
}

/// Whether the finding's statement is a locking read, in a session that
/// runs with `innodb_snapshot_isolation=ON`, of a table with a secondary
/// index or unique key.
fn snapshot_isolation_locking_read_on_secondary_index(
    finding: &Finding,
    case: &TestCase,
    server: &Settings,
) -> bool {
    finding_stmt(finding).is_some_and(|r| {
        let Some(Stmt::Select(q)) = case.stmt(r).map(|c| &c.stmt) else {
            return false;
        };
        let indexed = q
            .from
            .iter()
            .filter_map(|f| case.schema.table(&f.table))
            .any(|t| !t.indexes.is_empty() || !t.uniques.is_empty());
        q.lock.is_some() && indexed && snapshot_isolation_on(case, r.txn, server)
    })
}

/// Whether the case checkpointed and the finding's statement is an upsert
/// or another transaction ran one successfully.
fn upsert_after_checkpoint(finding: &Finding, case: &TestCase, history: &History) -> bool {
    let upsert = |r: StmtRef| {
        matches!(case.stmt(r).map(|c| &c.stmt),
            Some(Stmt::Insert(i)) if matches!(i.on_conflict, OnConflict::Update { .. }))
    };
    let judged = finding_stmt(finding);
    let other_upsert = history
        .outcomes
        .iter()
        .any(|o| judged.is_some_and(|j| j.txn != o.stmt.txn) && o.outcome.ok() && upsert(o.stmt));
    case.checkpoint && (judged.is_some_and(upsert) || other_upsert)
}

/// Whether a statement the finding involves is a SELECT with a LEFT JOIN
/// that failed with turso's "index cursor should have a record" panic.
fn left_join_index_cursor_panic(finding: &Finding, case: &TestCase, history: &History) -> bool {
    involved(finding, case).iter().any(|r| {
        let left_join = matches!(
            case.stmt(*r).map(|c| &c.stmt),
            Some(Stmt::Select(q)) if q.from.iter().filter_map(|f| f.join.as_ref())
                .any(|j| j.kind == crate::model::JoinKind::Left)
        );
        let panicked = history
            .outcome(*r)
            .and_then(|o| o.error.as_ref())
            .is_some_and(|e| {
                e.code == "panic" && e.message.contains("index cursor should have a record")
            });
        left_join && panicked
    })
}

/// Whether a successful REPLACE went into the parent table of a foreign key
/// whose (single) child column leads an index of the child table.
fn replace_into_parent_of_indexed_child_key(case: &TestCase, history: &History) -> bool {
    let indexed_parents: BTreeSet<&str> = case
        .schema
        .tables
        .iter()
        .flat_map(|t| {
            t.foreign_keys.iter().filter(move |fk| {
                t.indexes
                    .iter()
                    .any(|i| i.columns.first() == fk.columns.first())
            })
        })
        .map(|fk| fk.ref_table.as_str())
        .collect();
    succeeded(case, history).any(|(_, stmt)| {
        matches!(stmt, Stmt::Insert(i)
            if i.on_conflict == OnConflict::Replace && indexed_parents.contains(i.table.as_str()))
    })
}

/// Whether a write of a cursor's transaction failed between the cursor's
/// open and one of its later steps.
fn cursor_step_after_failed_write(case: &TestCase, history: &History) -> bool {
    crate::model::cursor::cursors(case).iter().any(|c| {
        let last = c.judged.iter().chain(&c.unjudged).map(|r| r.index).max();
        (c.open.index + 1..last.unwrap_or(0)).any(|index| {
            let r = StmtRef {
                txn: c.open.txn,
                index,
            };
            case.stmt(r).is_some_and(|s| s.stmt.kind().is_write())
                && history.outcome(r).is_some_and(|o| o.error.is_some())
        })
    })
}

/// Whether `finding` of `case` (with `history`) has trait `t`; `server`:
/// the engine's settings (`EngineInfo::settings`), which a session that
/// sets none of its own runs with.
pub(super) fn has_trait(
    t: Trait,
    finding: &Finding,
    case: &TestCase,
    history: &History,
    server: &Settings,
) -> bool {
    match t {
        Trait::SavepointBeforeFirstStatementRolledBack => {
            // The rollback releases its transaction's locks, which changes
            // what any other statement judged after it may do: with a judged
            // statement, every transaction whose rollback completed before
            // it counts; else those the finding names.
            let by = finding_stmt(finding);
            let named = by.is_none().then(|| named_txns(finding)).flatten();
            case.txns
                .iter()
                .filter(|t| named.as_ref().is_none_or(|n| n.contains(&t.id)))
                .any(|t| savepoint_before_first_statement_rolled_back(t.id, case, history, by))
        }
        Trait::ReadAfterUnchangedUpdate => {
            finding_stmt(finding).is_some_and(|by| read_after_unchanged_update(case, history, by))
        }
        Trait::WriteAfterConcurrentKeyChange => {
            let txns = match (finding_stmt(finding), named_txns(finding)) {
                (Some(by), _) => BTreeSet::from([by.txn]),
                (None, Some(named)) => named,
                (None, None) => return false,
            };
            // The phantom of REPEATABLE READ's read view (a case of mixed
            // levels may hold the writer at another level).
            txns.iter().any(|&t| {
                case.level_of(t) == crate::model::Isolation::RepeatableRead
                    && write_after_concurrent_key_change(case, history, t)
            })
        }
        Trait::CommitBetweenSavepointAndFirstStatement => {
            let named = named_txns(finding);
            case.txns
                .iter()
                .filter(|t| named.as_ref().is_none_or(|n| n.contains(&t.id)))
                .any(|t| commit_between_savepoint_and_first_statement(t.id, case, history))
        }
        Trait::DeferredKeyActionOnUpdate => deferred_key_action_on_update(case, history),
        Trait::DeferredKeyActionOnDelete => deferred_key_action_on_delete(case, history),
        Trait::ConstraintsSetImmediateAfterWrite => {
            constraints_set_immediate_after_write(case, history)
        }
        Trait::DeferredKeyParentDeletedAndReinserted => {
            deferred_key_parent_deleted_and_reinserted(case, history)
        }
        Trait::DeferredKeyParentDeletedThenChildWritten => {
            deferred_key_parent_deleted_then_child_written(case, history)
        }
        Trait::ConcurrentParentChildWrites => {
            crate::model::fk_conflict::parent_child_conflict(case, history)
        }
        Trait::RowInsertedWhileWaiting => finding_stmt(finding)
            .is_some_and(|by| row_inserted_while_waiting(finding, case, history, by)),
        Trait::ReplaceIntoParentOfIndexedChildKey => {
            replace_into_parent_of_indexed_child_key(case, history)
        }
        Trait::CursorStepAfterFailedWrite => cursor_step_after_failed_write(case, history),
        Trait::ReadUncommittedSnapshotIsolationUpdate => {
            read_uncommitted_snapshot_isolation_update(finding, case, server)
        }
        Trait::SnapshotIsolationLockingReadAfterWaitOnSecondaryIndex => {
            snapshot_isolation_locking_read_on_secondary_index(finding, case, server)
        }
        Trait::UpsertAfterCheckpoint => upsert_after_checkpoint(finding, case, history),
        Trait::LeftJoinIndexCursorPanic => left_join_index_cursor_panic(finding, case, history),
        Trait::BlockedLockingReadWithSubquery => {
            let refs = involved(finding, case);
            !refs.is_empty()
                && refs
                    .iter()
                    .all(|r| blocked_locking_read_with_subquery(case, history, *r))
        }
    }
}

/// The row `finding` names was inserted by a statement of another
/// transaction that completed after statement `by` was submitted (found by
/// the row ids the case gives its INSERTs: an upsert's inserted rows are
/// not observed).
fn row_inserted_while_waiting(
    finding: &Finding,
    case: &TestCase,
    history: &History,
    by: StmtRef,
) -> bool {
    let details = &finding.evidence["details"];
    let (Some(table), Some(rid)) = (details["table"].as_str(), details["rid"].as_i64()) else {
        return false;
    };
    let at = |r: StmtRef, completed: bool| {
        history.events.iter().position(|e| {
            e.stmt == r
                && if completed {
                    matches!(e.kind, EventKind::Completed { ok: true, .. })
                } else {
                    matches!(e.kind, EventKind::Submitted)
                }
        })
    };
    let Some(start) = at(by, false) else {
        return false;
    };
    case.all_refs().into_iter().any(|r| {
        r.txn != by.txn
            && matches!(case.stmt(r).map(|c| &c.stmt),
                Some(Stmt::Insert(i)) if i.table == table && i.rids.contains(&rid))
            && at(r, true).is_some_and(|done| done > start)
    })
}

/// Statement `by` is a plain SELECT reading a table in which an earlier
/// UPDATE (upsert, REPLACE) of its transaction matched a row without changing it, at a
/// version another transaction wrote (the row MDEV-26642 leaves at the read
/// view's version).
fn read_after_unchanged_update(case: &TestCase, history: &History, by: StmtRef) -> bool {
    let Some(stmt) = case.stmt(by).map(|c| &c.stmt) else {
        return false;
    };
    if !matches!(stmt, Stmt::Select(sel) if sel.lock.is_none()) {
        return false;
    }
    let read = crate::model::walk::tables(stmt);
    let writer_of = |op: u32| {
        case.txns
            .iter()
            .find(|t| t.stmts.iter().any(|s| s.op == op))
            .map(|t| t.id)
    };
    (0..by.index).any(|index| {
        let r = StmtRef { txn: by.txn, index };
        let updates = match case.stmt(r).map(|c| &c.stmt) {
            Some(Stmt::Update(_)) => true,
            // The update arm of an upsert (`ON DUPLICATE KEY UPDATE`), and a
            // REPLACE, which InnoDB runs as an update in place of the row it
            // meets where the key is the table's only unique one.
            Some(Stmt::Insert(i)) => {
                matches!(
                    i.on_conflict,
                    OnConflict::Update { .. } | OnConflict::Replace
                )
            }
            _ => false,
        };
        updates
            && history.outcome(r).is_some_and(|o| {
                o.unchanged.iter().any(|u| {
                    let last = u.wl.last();
                    read.contains(&u.table) && last != 0 && writer_of(last) != Some(by.txn)
                })
            })
    })
}

/// Transaction `txn` wrote (UPDATE or DELETE) a row at a version another
/// committed transaction wrote with an UPDATE that assigned a column of the
/// table's primary key (MDEV-32898's phantom rows).
fn write_after_concurrent_key_change(case: &TestCase, history: &History, txn: u32) -> bool {
    let key_changers: BTreeSet<u32> = case
        .txns
        .iter()
        .filter(|t| t.id != txn)
        .filter(|t| t.autocommit || history.txn_end(t.id) == Some(crate::model::TxnEnd::Committed))
        .flat_map(|t| t.stmts.iter())
        .filter(|cs| match &cs.stmt {
            Stmt::Update(u) => case
                .schema
                .tables
                .iter()
                .find(|tb| tb.name == u.table)
                .is_some_and(|tb| {
                    u.assignments
                        .iter()
                        .any(|a| tb.primary_key.contains(&a.column))
                }),
            _ => false,
        })
        .map(|cs| cs.op)
        .collect();
    if key_changers.is_empty() {
        return false;
    }
    let Some(t) = case.txn(txn) else {
        return false;
    };
    (0..t.stmts.len() as u32).any(|index| {
        let r = StmtRef { txn, index };
        history.outcome(r).is_some_and(|o| {
            o.ok()
                && o.writes.iter().any(|w| {
                    w.before
                        .as_ref()
                        .is_some_and(|b| b.ops().any(|op| key_changers.contains(&op)))
                })
        })
    })
}

/// Transaction `txn` ran SAVEPOINT s before any data statement, then a data
/// statement (which took locks), then ROLLBACK TO s successfully (s being the
/// latest SAVEPOINT of that name, the one MariaDB rolls back to), and, when
/// `by` is given, that ROLLBACK TO completed before statement `by` did (the
/// bug cannot explain what happened before it acted).
/// `txn` ran a SAVEPOINT before its first data statement and another
/// transaction's COMMIT (or autocommit write) completed between the two.
fn commit_between_savepoint_and_first_statement(
    txn: u32,
    case: &TestCase,
    history: &History,
) -> bool {
    let Some(t) = case.txn(txn) else {
        return false;
    };
    let completed = |r: StmtRef| {
        history
            .events
            .iter()
            .position(|e| e.stmt == r && matches!(e.kind, EventKind::Completed { .. }))
    };
    let at = |index: usize| StmtRef {
        txn,
        index: index as u32,
    };
    let Some(first_data) = t.stmts.iter().position(|s| s.stmt.kind().is_data()) else {
        return false;
    };
    // An inner SAVEPOINT, or the SAVEPOINT that starts the transaction.
    let Some(savepoint) = t.stmts[..first_data].iter().position(|s| match &s.stmt {
        Stmt::Savepoint(_) => true,
        Stmt::Begin(b) => b.mode == crate::model::StartMode::Savepoint,
        _ => false,
    }) else {
        return false;
    };
    let (Some(from), Some(to)) = (completed(at(savepoint)), completed(at(first_data))) else {
        return false;
    };
    history.events[from..to].iter().any(|e| {
        e.stmt.txn != txn
            && matches!(e.kind, EventKind::Completed { .. })
            && case.txn(e.stmt.txn).is_some_and(|other| {
                let stmt = case.stmt(e.stmt).map(|c| &c.stmt);
                let ok = history.outcome(e.stmt).is_some_and(|o| o.ok());
                ok && match stmt {
                    Some(s) if s.kind() == crate::model::StmtKind::Commit => true,
                    Some(s) => other.autocommit && s.kind().is_write(),
                    None => false,
                }
            })
    })
}

pub(super) fn savepoint_before_first_statement_rolled_back(
    txn: u32,
    case: &TestCase,
    history: &History,
    by: Option<StmtRef>,
) -> bool {
    let Some(t) = case.txn(txn) else {
        return false;
    };
    let at = |index: usize| StmtRef {
        txn,
        index: index as u32,
    };
    let ok = |i: usize| history.outcome(at(i)).is_some_and(|o| o.ok());
    let completed = |r: StmtRef| {
        history
            .events
            .iter()
            .position(|e| e.stmt == r && matches!(e.kind, EventKind::Completed { .. }))
    };
    // A data statement refused as a write in a READ ONLY transaction fails
    // before InnoDB joins the transaction (measured: the read view of a
    // READ ONLY transaction whose first statement was a refused
    // `SELECT ... FOR UPDATE` is still discarded by the rollback), so it is
    // not the first statement; any other error (a duplicate key) ran in InnoDB.
    let refused = |i: usize| {
        history
            .outcome(at(i))
            .and_then(|o| o.error.as_ref())
            .is_some_and(|e| e.class == crate::model::ErrorClass::ReadOnlyTransaction)
    };
    let first_data = t
        .stmts
        .iter()
        .enumerate()
        .position(|(i, s)| s.stmt.kind().is_data() && !refused(i))
        .unwrap_or(t.stmts.len());
    t.stmts.iter().enumerate().any(|(j, s)| {
        let Stmt::RollbackTo(name) = &s.stmt else {
            return false;
        };
        let latest = t.stmts[..j]
            .iter()
            .enumerate()
            .rev()
            .find(|(i, s)| matches!(&s.stmt, Stmt::Savepoint(n) if n == name) && ok(*i))
            .map(|(i, _)| i);
        let in_time = match by {
            Some(b) => match (completed(at(j)), completed(b)) {
                (Some(rb), Some(done)) => rb < done,
                _ => false,
            },
            None => true,
        };
        ok(j) && latest.is_some_and(|i| i < first_data && first_data < j) && in_time
    })
}

/// A SELECT with a locking clause and a subquery that waited for a lock.
fn blocked_locking_read_with_subquery(case: &TestCase, history: &History, r: StmtRef) -> bool {
    let Some(Stmt::Select(q)) = case.stmt(r).map(|s| &s.stmt) else {
        return false;
    };
    let subquery = q.where_.as_ref().is_some_and(|w| w.has_subquery())
        || q.items.iter().any(|i| i.expr.has_subquery());
    q.lock.is_some() && subquery && history.was_blocked(r)
}
