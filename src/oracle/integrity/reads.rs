//! Reads that break a key: one SELECT of one table that returned two rows
//! with the same primary or unique key, or one row (one `rid`) twice or in
//! two versions. A statement reads one state (its snapshot, or the rows it
//! locked), in which every key is unique. Two documented exceptions are
//! claimed (the verdict policy decides): a read that included another
//! transaction's uncommitted rows (READ UNCOMMITTED), and a read of a
//! transaction that wrote the table, which shows its snapshot next to its
//! own writes (`own_writes_over_snapshot`).

use super::keys::{duplicate_groups, positions, row_evidence, state_text, unique_keys};
use super::provenance::Provenance;
use super::state::StateRow;
use super::{Broken, Evidence, KeyRules, RowEvidence, StateRef};
use crate::model::{
    walk, EventKind, Expr, History, Outcome, Select, Stmt, StmtKind, StmtRef, Table, TestCase,
    Value,
};
use crate::oracle::verdict::Claim;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Every read of `history` that returned a key twice.
pub(super) fn duplicates(
    case: &TestCase,
    rules: KeyRules,
    history: &History,
    prov: &Provenance,
) -> Vec<Broken> {
    let mut out = Vec::new();
    let commits = Commits::new(case, history);
    // Tables each explicit transaction wrote so far (completion order).
    let mut written: BTreeSet<(u32, String)> = BTreeSet::new();
    for o in &history.outcomes {
        let Some(stmt) = prov.stmt(o.stmt) else {
            continue;
        };
        let explicit = case.txn(o.stmt.txn).is_some_and(|t| !t.autocommit);
        if explicit && o.outcome.ok() && stmt.kind().is_write() {
            // Its target, and the tables its foreign-key actions write.
            let tables = walk::outer_tables(stmt)
                .into_iter()
                .chain(walk::cascade_targets(stmt, &case.schema));
            written.extend(tables.map(|t| (o.stmt.txn, t)));
        }
        let Stmt::Select(q) = stmt else { continue };
        let Some(table) = single_table(case, q) else {
            continue;
        };
        if !o.outcome.ok() {
            continue;
        }
        let state = StateRef::Read { stmt: o.stmt };
        // Only READ UNCOMMITTED reads rows other transactions have not
        // committed (the unobserved-read fallback of `read_uncommitted`
        // would otherwise claim it at any level).
        let dirty = case.level_of(o.stmt.txn) == crate::model::Isolation::ReadUncommitted
            && commits.read_uncommitted(o.stmt, &table.name, &o.outcome, prov);
        if let Some(mut b) = same_row_twice(table, &o.outcome, prov, &state) {
            if dirty {
                b.claim = Some(Claim::UncommittedRead);
            }
            out.push(b);
        }
        let own_writes = written.contains(&(o.stmt.txn, table.name.clone()));
        for mut b in same_key_twice(table, q, rules, &o.outcome, prov, &state) {
            // Another transaction's uncommitted rows; or its snapshot next
            // to its own writes, checked against later rows.
            if dirty {
                b.claim = Some(Claim::UncommittedRead);
            } else if own_writes {
                let committed =
                    history.txn_end(o.stmt.txn) == Some(crate::model::TxnEnd::Committed);
                let beside_weaker_writer =
                    commits.weaker_writer_during(case, prov, o.stmt, &table.name);
                b.claim = Some(Claim::OwnWritesOverSnapshot {
                    committed,
                    beside_weaker_writer,
                });
            }
            out.push(b);
        }
    }
    out
}

/// Where each transaction committed in the history's events.
struct Commits {
    /// Event index at which each statement completed successfully.
    completed: HashMap<StmtRef, usize>,
    /// Event index at which each statement was submitted.
    submitted: HashMap<StmtRef, usize>,
    /// Event index of each explicit transaction's successful COMMIT.
    committed: HashMap<u32, usize>,
}

impl Commits {
    fn new(case: &TestCase, history: &History) -> Commits {
        let mut completed = HashMap::new();
        let mut committed = HashMap::new();
        let mut submitted = HashMap::new();
        for (i, e) in history.events.iter().enumerate() {
            if e.kind == EventKind::Submitted {
                submitted.entry(e.stmt).or_insert(i);
            }
            if !matches!(e.kind, EventKind::Completed { ok: true, .. }) {
                continue;
            }
            completed.insert(e.stmt, i);
            let commit = case
                .stmt(e.stmt)
                .is_some_and(|s| s.stmt.kind() == StmtKind::Commit);
            if commit {
                committed.insert(e.stmt.txn, i);
            }
        }
        Commits {
            completed,
            submitted,
            committed,
        }
    }

    /// Where statement `by`'s write committed: its own completion in
    /// autocommit, else its transaction's COMMIT.
    fn commit_of(&self, by: StmtRef, prov: &Provenance) -> Option<usize> {
        if prov.autocommit(by.txn) {
            self.completed.get(&by).copied()
        } else {
            self.committed.get(&by.txn).copied()
        }
    }

    /// Whether a transaction at a weaker level than read `r`'s committed a
    /// successful write of `table` after `r`'s transaction started and
    /// before `r` completed.
    fn weaker_writer_during(
        &self,
        case: &TestCase,
        prov: &Provenance,
        r: StmtRef,
        table: &str,
    ) -> bool {
        let start = self.submitted.get(&StmtRef {
            txn: r.txn,
            index: 0,
        });
        let (Some(&start), Some(&at)) = (start, self.completed.get(&r)) else {
            return false;
        };
        let level = case.level_of(r.txn);
        self.completed.keys().any(|&by| {
            by.txn != r.txn
                && case.level_of(by.txn) < level
                && self
                    .commit_of(by, prov)
                    .is_some_and(|c| c > start && c < at)
                && prov.stmt(by).is_some_and(|s| {
                    s.kind().is_write()
                        && walk::outer_tables(s)
                            .into_iter()
                            .chain(walk::cascade_targets(s, &case.schema))
                            .any(|t| t == table)
                })
        })
    }

    /// Whether read `r` of `table` returned a row version whose writer,
    /// another transaction, had not committed when the read completed; when
    /// its reads were not observed, whether another transaction had a write
    /// of `table` submitted and not committed then (a row it may have read).
    fn read_uncommitted(
        &self,
        r: StmtRef,
        table: &str,
        outcome: &Outcome,
        prov: &Provenance,
    ) -> bool {
        let Some(&at) = self.completed.get(&r) else {
            return false;
        };
        let uncommitted_at_read = |by: StmtRef| self.commit_of(by, prov).is_none_or(|c| c > at);
        if !outcome.reads_complete && outcome.reads.is_empty() {
            return self.submitted.iter().any(|(&by, &sub)| {
                by.txn != r.txn
                    && sub < at
                    && prov.stmt(by).is_some_and(|s| {
                        s.kind().is_write() && walk::outer_tables(s).contains(table)
                    })
                    && uncommitted_at_read(by)
            });
        }
        outcome.reads.iter().any(|v| {
            let w = prov.writer(v.wl.last());
            w.stmt
                .filter(|s| s.txn != r.txn)
                .is_some_and(uncommitted_at_read)
        })
    }
}

/// The table of a SELECT over one table without a join that returns its
/// rows one by one (no aggregate, no grouping).
fn single_table<'c>(case: &'c TestCase, q: &Select) -> Option<&'c Table> {
    let [from] = q.from.as_slice() else {
        return None;
    };
    if from.join.is_some() || q.is_aggregate() {
        return None;
    }
    case.schema.table(&from.table)
}

/// One `rid` read in two versions, or more rows returned than row versions
/// read.
fn same_row_twice(
    table: &Table,
    outcome: &crate::model::Outcome,
    prov: &Provenance,
    state: &StateRef,
) -> Option<Broken> {
    let mut by_rid: BTreeMap<i64, Vec<&crate::model::RowVersion>> = BTreeMap::new();
    for r in outcome.reads.iter().filter(|r| r.table == table.name) {
        by_rid.entry(r.rid).or_default().push(r);
    }
    let mut rows: Vec<RowEvidence> = by_rid
        .values()
        .filter(|v| v.len() > 1)
        .flatten()
        .map(|r| RowEvidence::version(r, prov))
        .collect();
    let repeated = outcome.reads_complete && outcome.rows.len() > outcome.reads.len();
    if rows.is_empty() && !repeated {
        return None;
    }
    let what = if rows.is_empty() {
        format!(
            "returned {} rows of {} but only {} row versions: a row twice",
            outcome.rows.len(),
            table.name,
            outcome.reads.len()
        )
    } else {
        let rids: BTreeSet<i64> = rows.iter().filter_map(|r| r.rid).collect();
        let rids: Vec<String> = rids.iter().map(|r| r.to_string()).collect();
        format!(
            "returned two versions of one row of {} (rid {})",
            table.name,
            rids.join(", ")
        )
    };
    if rows.is_empty() {
        rows = outcome
            .reads
            .iter()
            .map(|r| RowEvidence::version(r, prov))
            .collect();
    }
    Some(Broken {
        kind: "unique",
        summary: format!("{}: {what}", state_text(state)),
        claim: None,
        evidence: Evidence::of(state, &table.name, "row identity (rid)".into(), rows),
    })
}

/// Two returned rows with the same value of a unique key the SELECT
/// projects as plain columns.
fn same_key_twice(
    table: &Table,
    q: &Select,
    rules: KeyRules,
    outcome: &crate::model::Outcome,
    prov: &Provenance,
    state: &StateRef,
) -> Vec<Broken> {
    let mut out = Vec::new();
    // Which result column shows each of the table's columns.
    let shown: BTreeMap<&str, usize> = q
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match &item.expr {
            Expr::Col { name, .. } => Some((name.as_str(), i)),
            _ => None,
        })
        .collect();
    for (text, names) in unique_keys(table) {
        let Some(at) = names
            .iter()
            .map(|n| shown.get(n.as_str()).copied())
            .collect::<Option<Vec<usize>>>()
        else {
            continue;
        };
        let Some(cols) = positions(table, names) else {
            continue;
        };
        let rows: Vec<StateRow> = outcome
            .rows
            .iter()
            .map(|r| {
                // The key's values at the table's column positions.
                let mut values = vec![Value::Null; table.columns.len()];
                for (&c, &a) in cols.iter().zip(&at) {
                    values[c] = r.get(a).cloned().unwrap_or(Value::Null);
                }
                // Result rows do not say which version they show.
                StateRow {
                    rid: None,
                    wl: None,
                    values,
                }
            })
            .collect();
        let keyed = rows.iter().map(|r| {
            let k: Vec<Value> = cols.iter().map(|&c| r.values[c].clone()).collect();
            (k, r)
        });
        let groups = duplicate_groups(keyed, rules);
        if groups.is_empty() {
            continue;
        }
        let bad: Vec<RowEvidence> = groups
            .iter()
            .flat_map(|(_, g)| g.iter().map(|r| row_evidence(table, r, &cols, prov)))
            .collect();
        out.push(Broken {
            kind: "unique",
            summary: format!(
                "{}: {} returned rows of {} share a key of {text}",
                state_text(state),
                bad.len(),
                table.name
            ),
            claim: None,
            evidence: Evidence::of(state, &table.name, text, bad),
        });
    }
    out
}

/// One transaction's snapshot with a child row and no parent for it: where
/// the plain SELECTs of a transaction read one snapshot
/// ([`KeyRules::one_snapshot`]), a child row one of them returned (its key
/// columns among the items, none NULL) whose key is missing from a read of
/// the whole parent table (one table, no WHERE, no LIMIT, no aggregate, the
/// referenced columns among the items). Reads after the transaction's own
/// write of either table, and locking reads, do not count.
pub(super) fn orphans_in_snapshot(
    case: &TestCase,
    rules: KeyRules,
    history: &History,
    prov: &Provenance,
) -> Vec<Broken> {
    if !rules.one_snapshot {
        return Vec::new();
    }
    let mut out = Vec::new();
    for t in case.txns.iter().filter(|t| !t.autocommit) {
        let mut written: BTreeSet<String> = BTreeSet::new();
        // The transaction's plain single-table reads from its snapshot.
        let mut reads: Vec<(StmtRef, &Table, &Outcome, &Select)> = Vec::new();
        for o in history.outcomes.iter().filter(|o| o.stmt.txn == t.id) {
            let Some(stmt) = prov.stmt(o.stmt) else {
                continue;
            };
            if stmt.kind().is_write() {
                // Whether or not it succeeded: a failed write may have left
                // rows behind until its statement's rollback.
                written.extend(walk::outer_tables(stmt));
                written.extend(walk::cascade_targets(stmt, &case.schema));
                continue;
            }
            let Stmt::Select(q) = stmt else { continue };
            let Some(table) = single_table(case, q) else {
                continue;
            };
            if o.outcome.ok() && q.lock.is_none() && !written.contains(&table.name) {
                reads.push((o.stmt, table, &o.outcome, q));
            }
        }
        // Reads of a whole table: every parent key the snapshot holds.
        let whole = || {
            reads
                .iter()
                .filter(|(_, _, _, q)| q.where_.is_none() && q.limit.is_none())
        };
        for (child_read, child, outcome, q) in &reads {
            for fk in &child.foreign_keys {
                let Some(key_at) = item_positions(q, &fk.columns) else {
                    continue;
                };
                for (parent_read, _, parent, q_parent) in
                    whole().filter(|(_, p, _, _)| p.name == fk.ref_table)
                {
                    let Some(ref_at) = item_positions(q_parent, &fk.ref_columns) else {
                        continue;
                    };
                    let keys: BTreeSet<Vec<Value>> = parent
                        .rows
                        .iter()
                        .map(|r| ref_at.iter().map(|&i| r[i].clone()).collect())
                        .collect();
                    for (i, row) in outcome.rows.iter().enumerate() {
                        let key: Vec<Value> = key_at.iter().map(|&k| row[k].clone()).collect();
                        if key.iter().any(Value::is_null) || keys.contains(&key) {
                            continue;
                        }
                        out.push(snapshot_orphan(
                            t.id,
                            [*child_read, *parent_read],
                            child,
                            fk,
                            key,
                            outcome
                                .reads
                                .get(i)
                                .filter(|_| outcome.reads.len() == outcome.rows.len()),
                            prov,
                        ));
                    }
                }
            }
        }
    }
    out
}

/// Where each of `columns` is a plain item of `q` (`None`: one is not).
fn item_positions(q: &Select, columns: &[String]) -> Option<Vec<usize>> {
    columns
        .iter()
        .map(|c| {
            q.items
                .iter()
                .position(|i| matches!(&i.expr, Expr::Col { name, .. } if name == c))
        })
        .collect()
}

fn snapshot_orphan(
    txn: u32,
    reads: [StmtRef; 2],
    child: &Table,
    fk: &crate::model::ForeignKey,
    key: Vec<Value>,
    version: Option<&crate::model::RowVersion>,
    prov: &Provenance,
) -> Broken {
    let [child_read, parent_read] = reads;
    let constraint = super::keys::fk_text(fk);
    let row = RowEvidence {
        values: fk
            .columns
            .iter()
            .cloned()
            .zip(key.iter().cloned())
            .collect(),
        ..version.map_or(
            RowEvidence {
                rid: None,
                wl: None,
                values: BTreeMap::new(),
                writers: Vec::new(),
            },
            |v| RowEvidence::version(v, prov),
        )
    };
    Broken {
        kind: "foreign-key",
        summary: format!(
            "T{txn}'s snapshot has a row of {} with {} and no parent: T{}#{} returned it, T{}#{} read all of {} without that key",
            child.name,
            super::keys::show_key(&fk.columns, &key),
            child_read.txn,
            child_read.index,
            parent_read.txn,
            parent_read.index,
            fk.ref_table
        ),
        evidence: Evidence {
            missing_parent_keys: vec![key],
            ..Evidence::of(
                &StateRef::Snapshot {
                    txn,
                    reads: vec![child_read, parent_read],
                },
                &child.name,
                constraint,
                vec![row],
            )
        },
        claim: None,
    }
}
