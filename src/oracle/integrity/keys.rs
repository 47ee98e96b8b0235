//! NOT NULL, primary and unique keys, and foreign keys, on rows txfuzz read.

use super::provenance::{Provenance, Writer};
use super::state::{Rows, StateRow};
use super::{Broken, Evidence, KeyRules, RowEvidence, StateRef};
use crate::model::{Stmt, Table, TestCase, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// A row's evidence: its `columns` (indexes into the table's columns).
pub(super) fn row_evidence(
    table: &Table,
    row: &StateRow,
    columns: &[usize],
    prov: &Provenance,
) -> RowEvidence {
    RowEvidence {
        rid: row.rid,
        wl: row.wl.as_ref().map(|w| w.to_string()),
        values: columns
            .iter()
            .filter_map(|&k| {
                Some((
                    table.columns.get(k)?.name.clone(),
                    row.values.get(k)?.clone(),
                ))
            })
            .collect(),
        writers: prov.writers(row.wl.as_ref()),
    }
}

/// Column indexes of `names` in `table` (`None`: a name the table lacks).
pub(super) fn positions(table: &Table, names: &[String]) -> Option<Vec<usize>> {
    names
        .iter()
        .map(|n| table.columns.iter().position(|c| &c.name == n))
        .collect()
}

/// A row's key: its values at `cols`, `None` when one is missing.
fn key(row: &StateRow, cols: &[usize]) -> Option<Vec<Value>> {
    cols.iter().map(|&k| row.values.get(k).cloned()).collect()
}

pub(super) fn show_key(names: &[String], key: &[Value]) -> String {
    names
        .iter()
        .zip(key)
        .map(|(n, v)| format!("{n} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn committed_text(rows: &[RowEvidence]) -> String {
    let mut writers: Vec<String> = rows
        .iter()
        .flat_map(|r| r.writers.iter())
        .filter_map(|w| {
            w.stmt.map(|s| {
                let c = if w.committed {
                    "committed"
                } else {
                    "not committed"
                };
                format!("T{}#{} ({c})", s.txn, s.index)
            })
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if writers.is_empty() {
        writers.push("the initial data".into());
    }
    writers.join(", ")
}

/// `not-null`: NULLs in columns declared NOT NULL.
pub(super) fn not_null(
    case: &TestCase,
    rows: &Rows,
    prov: &Provenance,
    state: &StateRef,
) -> Vec<Broken> {
    let mut out = Vec::new();
    for table in &case.schema.tables {
        let Some(trows) = rows.get(&table.name) else {
            continue;
        };
        for (k, col) in table.columns.iter().enumerate() {
            if !col.not_null {
                continue;
            }
            let bad: Vec<RowEvidence> = trows
                .iter()
                .filter(|r| r.values.get(k).is_some_and(Value::is_null))
                .map(|r| row_evidence(table, r, &[k], prov))
                .collect();
            if bad.is_empty() {
                continue;
            }
            out.push(Broken {
                kind: "not-null",
                summary: format!(
                    "{}: {} row(s) of {} hold NULL in NOT NULL column {}; written by {}",
                    state_text(state),
                    bad.len(),
                    table.name,
                    col.name,
                    committed_text(&bad)
                ),
                claim: None,
                evidence: Evidence::of(state, &table.name, format!("{} NOT NULL", col.name), bad),
            });
        }
    }
    out
}

/// The declared unique keys of `table` with their text: PRIMARY KEY, UNIQUE
/// constraints, UNIQUE indexes.
pub(super) fn unique_keys(table: &Table) -> Vec<(String, &[String])> {
    let mut out: Vec<(String, &[String])> = Vec::new();
    if !table.primary_key.is_empty() {
        out.push((
            format!("PRIMARY KEY ({})", table.primary_key.join(", ")),
            &table.primary_key,
        ));
    }
    for u in table.uniques.iter().filter(|u| !u.is_empty()) {
        out.push((format!("UNIQUE ({})", u.join(", ")), u));
    }
    for i in table.indexes.iter().filter(|i| i.unique) {
        out.push((
            format!("UNIQUE INDEX {} ({})", i.name, i.columns.join(", ")),
            &i.columns,
        ));
    }
    out
}

/// Groups of rows sharing a key at `cols` (keys with a NULL are distinct
/// when `rules` say so).
pub(super) fn duplicate_groups<'r>(
    rows: impl Iterator<Item = (Vec<Value>, &'r StateRow)>,
    rules: KeyRules,
) -> Vec<(Vec<Value>, Vec<&'r StateRow>)> {
    let mut groups: BTreeMap<Vec<Value>, Vec<&StateRow>> = BTreeMap::new();
    for (k, r) in rows {
        if rules.nulls_distinct && k.iter().any(Value::is_null) {
            continue;
        }
        groups.entry(k).or_default().push(r);
    }
    groups.into_iter().filter(|(_, g)| g.len() > 1).collect()
}

/// `unique`: rows sharing a primary or unique key.
pub(super) fn unique(
    case: &TestCase,
    rules: KeyRules,
    rows: &Rows,
    prov: &Provenance,
    state: &StateRef,
) -> Vec<Broken> {
    let mut out = Vec::new();
    for table in &case.schema.tables {
        let Some(trows) = rows.get(&table.name) else {
            continue;
        };
        for (text, names) in unique_keys(table) {
            let Some(cols) = positions(table, names) else {
                continue;
            };
            let keyed = trows.iter().filter_map(|r| Some((key(r, &cols)?, r)));
            let groups = duplicate_groups(keyed, rules);
            if groups.is_empty() {
                continue;
            }
            let keys: Vec<String> = groups.iter().map(|(k, _)| show_key(names, k)).collect();
            let bad: Vec<RowEvidence> = groups
                .iter()
                .flat_map(|(_, g)| g.iter().map(|r| row_evidence(table, r, &cols, prov)))
                .collect();
            out.push(Broken {
                kind: "unique",
                summary: format!(
                    "{}: {} rows of {} share a key of {text} ({}); written by {}",
                    state_text(state),
                    bad.len(),
                    table.name,
                    keys.join("; "),
                    committed_text(&bad)
                ),
                claim: None,
                evidence: Evidence::of(state, &table.name, text, bad),
            });
        }
    }
    out
}

/// `foreign-key`: child rows of the final state whose non-NULL key no parent
/// row has (MATCH SIMPLE, the default of every engine txfuzz targets).
pub(super) fn foreign_keys(case: &TestCase, rows: &Rows, prov: &Provenance) -> Vec<Broken> {
    let mut out = Vec::new();
    for table in &case.schema.tables {
        let Some(trows) = rows.get(&table.name) else {
            continue;
        };
        for fk in &table.foreign_keys {
            let Some(parent) = case.schema.table(&fk.ref_table) else {
                continue;
            };
            let (Some(cols), Some(pcols)) = (
                positions(table, &fk.columns),
                positions(parent, &fk.ref_columns),
            ) else {
                continue;
            };
            let parents: HashSet<Vec<Value>> = rows
                .get(&parent.name)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .filter_map(|r| key(r, &pcols))
                .collect();
            let orphans: Vec<(&StateRow, Vec<Value>)> = trows
                .iter()
                .filter_map(|r| Some((r, key(r, &cols)?)))
                .filter(|(_, k)| !k.iter().any(Value::is_null) && !parents.contains(k))
                .collect();
            if orphans.is_empty() {
                continue;
            }
            let missing: Vec<Vec<Value>> = orphans
                .iter()
                .map(|(_, k)| k.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let removed = parent_removers(case, parent, &pcols, &missing, prov);
            let bad: Vec<RowEvidence> = orphans
                .iter()
                .map(|(r, _)| row_evidence(table, r, &cols, prov))
                .collect();
            let constraint = fk_text(fk);
            let keys: Vec<String> = missing.iter().map(|k| show_key(&fk.columns, k)).collect();
            let removers = if removed.is_empty() {
                "no statement of the case removed the parent key".to_string()
            } else {
                let r: Vec<String> = removed
                    .iter()
                    .filter_map(|w| w.stmt)
                    .map(|s| format!("T{}#{}", s.txn, s.index))
                    .collect();
                format!(
                    "parent key removed (or possibly removed) by {}",
                    r.join(", ")
                )
            };
            out.push(Broken {
                kind: "foreign-key",
                summary: format!(
                    "final state: {} row(s) of {} reference {} values no row of {} has ({}); written by {}; {removers}",
                    bad.len(),
                    table.name,
                    fk.ref_table,
                    fk.ref_table,
                    keys.join("; "),
                    committed_text(&bad)
                ),
                claim: None,
                evidence: Evidence {
                    state: StateRef::Final,
                    table: table.name.clone(),
                    constraint,
                    rows: bad,
                    missing_parent_keys: missing,
                    parent_removed_by: removed,
                },
            });
        }
    }
    out
}

/// A foreign key as declared (without its actions).
pub(super) fn fk_text(fk: &crate::model::ForeignKey) -> String {
    format!(
        "FOREIGN KEY ({}) REFERENCES {} ({})",
        fk.columns.join(", "),
        fk.ref_table,
        fk.ref_columns.join(", ")
    )
}

/// The committed statements that removed (or may have removed) one of the
/// `missing` keys: they deleted or rewrote a parent row that held it
/// (initially or as inserted), changed parent keys, wrote parent rows
/// unobserved, or deleted parent rows through a foreign-key action.
fn parent_removers(
    case: &TestCase,
    parent: &Table,
    pcols: &[usize],
    missing: &[Vec<Value>],
    prov: &Provenance,
) -> Vec<Writer> {
    let missing: HashSet<&Vec<Value>> = missing.iter().collect();
    // Row ids that held a missing key: initial rows and inserted literals.
    let mut rids: HashSet<i64> = HashSet::new();
    for d in case.data.iter().filter(|d| d.table == parent.name) {
        for r in &d.rows {
            let k: Option<Vec<Value>> = pcols.iter().map(|&c| r.values.get(c).cloned()).collect();
            if k.is_some_and(|k| missing.contains(&k)) {
                rids.insert(r.rid);
            }
        }
    }
    let key_names: Vec<&String> = pcols.iter().map(|&c| &parent.columns[c].name).collect();
    let mut key_updates: HashMap<u32, bool> = HashMap::new();
    for t in &case.txns {
        for s in &t.stmts {
            match &s.stmt {
                Stmt::Insert(i) if i.table == parent.name => {
                    // A row from a query may have held any key.
                    if i.select.is_some() {
                        rids.extend(&i.rids);
                    }
                    for (row, rid) in i.rows.iter().zip(&i.rids) {
                        let k: Option<Vec<Value>> = key_names
                            .iter()
                            .map(|n| {
                                let at = i.columns.iter().position(|c| c == *n)?;
                                match row.get(at)? {
                                    crate::model::Expr::Lit(v) => Some(v.clone()),
                                    _ => None,
                                }
                            })
                            .collect();
                        if k.is_some_and(|k| missing.contains(&k)) {
                            rids.insert(*rid);
                        }
                    }
                }
                Stmt::Update(u) if u.table == parent.name => {
                    let rekeys = u.assignments.iter().any(|a| key_names.contains(&&a.column));
                    key_updates.insert(s.op, rekeys);
                }
                _ => {}
            }
        }
    }
    let mut out: BTreeSet<Writer> = BTreeSet::new();
    for t in &case.txns {
        for s in &t.stmts {
            let w = prov.writer(s.op);
            let Some(r) = w.stmt.filter(|_| w.committed) else {
                continue;
            };
            let touches_parent = match &s.stmt {
                Stmt::Delete(d) => d.table == parent.name,
                Stmt::Update(u) => u.table == parent.name && key_updates[&s.op],
                Stmt::Insert(i) => {
                    i.table == parent.name
                        && !matches!(i.on_conflict, crate::model::OnConflict::Error)
                }
                _ => false,
            };
            if !touches_parent {
                continue;
            }
            let Some(outcome) = prov.outcome(r) else {
                continue;
            };
            // A row that held a missing key lost it (deleted or rewritten);
            // writes the engine did not let txfuzz observe count as possible.
            // A key UPDATE that wrote rows may have moved a key the rows got
            // from another UPDATE (their keys are not tracked).
            let removed = outcome
                .writes
                .iter()
                .any(|rw| rw.table == parent.name && rw.before.is_some() && rids.contains(&rw.rid));
            let rekeyed = matches!(&s.stmt, Stmt::Update(_)) && !outcome.writes.is_empty();
            if removed || rekeyed || !outcome.writes_complete {
                out.insert(w);
            }
        }
    }
    // Foreign-key actions of other keys that delete or re-key parent rows:
    // their writes are not observed.
    for t in &case.txns {
        for s in &t.stmts {
            let w = prov.writer(s.op);
            let Some(r) = w.stmt.filter(|_| w.committed) else {
                continue;
            };
            let acted = prov.outcome(r).is_some_and(|o| {
                crate::oracle::cascade::written_by_action(&s.stmt, o, &case.schema)
                    .contains(&parent.name)
            });
            if acted {
                out.insert(w);
            }
        }
    }
    out.into_iter().collect()
}

pub(super) fn state_text(state: &StateRef) -> String {
    match state {
        StateRef::Final => "final state".into(),
        StateRef::Read { stmt } => format!("rows read by T{}#{}", stmt.txn, stmt.index),
        StateRef::Snapshot { txn, .. } => format!("T{txn}'s snapshot"),
    }
}
