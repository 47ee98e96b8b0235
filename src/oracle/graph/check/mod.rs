//! The checker: version chains from write lists, non-cycle anomalies, the
//! dependency graph (ww, wr, rw, so), Tarjan SCCs and a shortest cycle per SCC
//! and anomaly spec (BFS restricted to the spec's edge kinds).
//!
//! Scale: tables and rows are interned to integers, each write list is parsed
//! once into a reused buffer and compared against the row's known chain as
//! integers; only entries beyond the known chain are validated. Edges live in a
//! CSR adjacency; explanations are derived lazily for the few edges of a cycle.

mod chain_entries;
mod cycles;
mod explain;
mod versions;

use super::anomaly::*;
use super::history::{CheckHistory, Op, TxnStatus};
use crate::model::{Anomaly, WriteList};
use serde_json::json;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Findings of one kind beyond this many are counted, not described.
const MAX_PER_KIND: usize = 20;
/// Seed edges tried per SCC and spec.
const MAX_SEEDS: usize = 256;
/// Largest cycle drawn in DOT.
const MAX_DOT_EDGES: usize = 24;

#[derive(Default, Clone, Copy)]
pub struct Fx(u64);
impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(b as u64);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i)
    }
    fn write_i64(&mut self, i: i64) {
        self.add(i as u64)
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64)
    }
}
impl Fx {
    #[inline]
    fn add(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}
type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

const NONE: u32 = u32::MAX;
const K_INSERT: u8 = 1;
const K_UPDATE: u8 = 2;
const K_DELETE: u8 = 4;
/// Set while every write of (op, row) was undone or aborted.
const K_ABORTED: u8 = 0x80;

/// One anomaly found, with its explanation.
#[derive(Clone, Debug)]
pub struct FoundAnomaly {
    /// Specific name (`lost-update`); [`Anomaly::class`] is its class.
    pub name: Anomaly,
    /// Transactions involved (labels).
    pub txns: Vec<String>,
    /// One sentence per fact (per cycle edge for cycles).
    pub explanation: Vec<String>,
    pub dot: Option<String>,
    pub edges: serde_json::Value,
    /// For a cycle: the reading transaction of each of its read-dependency
    /// edges (wr: the reader; rw: the one that read the overwritten
    /// version), whose level decides whether the edge counts in a history
    /// of mixed levels (Adya's mixed serialization graph). Empty for a
    /// cycle of write dependencies only and for non-cycle anomalies.
    pub readers: Vec<String>,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Stats {
    pub txns: usize,
    pub committed: usize,
    pub rows: usize,
    pub reads: usize,
    pub writes: usize,
    pub edges: usize,
    pub cyclic_sccs: usize,
    /// Statements that read rows the history does not show.
    pub unobserved_reads: usize,
    /// Anomalies found beyond the per-kind cap.
    pub suppressed: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub anomalies: Vec<FoundAnomaly>,
    pub stats: Stats,
}

#[derive(Clone, Copy)]
struct OpInfo {
    txn: u32,
    aborted: bool,
}

/// op id -> info; dense when ids are dense.
struct OpMap {
    dense: Vec<OpInfo>,
    sparse: FxMap<u32, OpInfo>,
}

impl OpMap {
    fn get(&self, op: u32) -> Option<OpInfo> {
        if !self.dense.is_empty() {
            self.dense
                .get(op as usize)
                .copied()
                .filter(|o| o.txn != NONE)
        } else {
            self.sparse.get(&op).copied()
        }
    }
}

#[derive(Clone, Copy)]
struct ReadRec {
    row: u32,
    /// Version = chain prefix of this length.
    len: u32,
}

struct Checker<'a> {
    h: &'a CheckHistory,
    /// txn index -> node (NONE when not committed).
    node_of: Vec<u32>,
    /// node -> txn index.
    txn_of_node: Vec<u32>,
    tables: Vec<&'a str>,
    table_ix: FxMap<&'a str, u32>,
    row_ix: FxMap<(u32, i64), u32>,
    row_key: Vec<(u32, i64)>,
    ops: OpMap,
    /// (op << 32 | row) -> write kind.
    wrote: FxMap<u64, u8>,
    /// (op << 32 | table) -> write kind, for ops whose writes were not all
    /// observed (`Op::UnobservedWrite`).
    partial: FxMap<u64, u8>,
    chains: Vec<Vec<u32>>,
    /// Each row's chain as the write-list version of each position (beside
    /// `chains`): `observe`'s fast path for a version already on the chain is
    /// the same shared node at its position.
    chain_nodes: Vec<Vec<WriteList>>,
    /// Deleting op per row (0: not deleted).
    deleted: Vec<u32>,
    reads: Vec<ReadRec>,
    read_off: Vec<u32>,
    /// (row, op) of each node's committed writes.
    writes: Vec<(u32, u32)>,
    write_off: Vec<u32>,
    scratch: Vec<u32>,
    out: Vec<FoundAnomaly>,
    counts: FxMap<Anomaly, usize>,
    suppressed: usize,
    incompatible_rows: Vec<bool>,
    /// (row, version length, op) of committed DELETEs.
    pending_deletes: Vec<(u32, u32, u32)>,
}

/// Where an observed version came from, for explanations.
#[derive(Clone, Copy)]
enum Src {
    Read(u32),
    Before(u32),
    After(u32),
    Final,
}

pub fn analyse(h: &CheckHistory) -> Analysis {
    let mut c = Checker::new(h);
    c.register_ops();
    c.observe_all();
    c.check_deletes();
    let (off, adj) = c.build_graph();
    let mut stats = Stats {
        txns: h.txns.len(),
        committed: c.txn_of_node.len(),
        rows: c.row_key.len(),
        reads: c.reads.len(),
        writes: c.writes.len(),
        edges: adj.len(),
        unobserved_reads: h
            .txns
            .iter()
            .flat_map(|t| &t.ops)
            .filter(|o| matches!(o, Op::UnobservedRead { .. }))
            .count(),
        ..Stats::default()
    };
    stats.cyclic_sccs = c.cycles(&off, &adj);
    stats.suppressed = c.suppressed;
    Analysis {
        anomalies: c.out,
        stats,
    }
}

impl<'a> Checker<'a> {
    fn new(h: &'a CheckHistory) -> Self {
        let mut node_of = Vec::with_capacity(h.txns.len());
        let mut txn_of_node = Vec::new();
        for (i, t) in h.txns.iter().enumerate() {
            if t.status == TxnStatus::Committed {
                node_of.push(txn_of_node.len() as u32);
                txn_of_node.push(i as u32);
            } else {
                node_of.push(NONE);
            }
        }
        Checker {
            h,
            node_of,
            txn_of_node,
            tables: Vec::new(),
            table_ix: FxMap::default(),
            row_ix: FxMap::default(),
            row_key: Vec::new(),
            ops: OpMap {
                dense: Vec::new(),
                sparse: FxMap::default(),
            },
            wrote: FxMap::default(),
            partial: FxMap::default(),
            chains: Vec::new(),
            chain_nodes: Vec::new(),
            deleted: Vec::new(),
            reads: Vec::new(),
            read_off: vec![0],
            writes: Vec::new(),
            write_off: vec![0],
            scratch: Vec::new(),
            out: Vec::new(),
            counts: FxMap::default(),
            suppressed: 0,
            incompatible_rows: Vec::new(),
            pending_deletes: Vec::new(),
        }
    }

    fn label(&self, txn: u32) -> String {
        self.h.txns[txn as usize].label()
    }
    fn node_label(&self, node: u32) -> String {
        self.label(self.txn_of_node[node as usize])
    }

    fn table_id(&mut self, table: &'a str) -> u32 {
        match self.table_ix.get(table) {
            Some(&t) => t,
            None => {
                let t = self.tables.len() as u32;
                self.tables.push(table);
                self.table_ix.insert(table, t);
                t
            }
        }
    }

    fn row(&mut self, table: &'a str, rid: i64) -> u32 {
        let t = self.table_id(table);
        let next = self.row_key.len() as u32;
        let r = *self.row_ix.entry((t, rid)).or_insert(next);
        if r == next {
            self.row_key.push((t, rid));
            self.chains.push(Vec::new());
            self.chain_nodes.push(Vec::new());
            self.deleted.push(0);
            self.incompatible_rows.push(false);
        }
        r
    }

    fn row_name(&self, row: u32) -> String {
        let (t, rid) = self.row_key[row as usize];
        format!("{} row {rid}", self.tables[t as usize])
    }

    fn version(&self, row: u32, len: u32) -> String {
        let c = &self.chains[row as usize][..len as usize];
        let parts: Vec<String> = if c.len() > 10 {
            let mut v = vec!["0".to_string(), "…".to_string()];
            v.extend(c[c.len() - 6..].iter().map(|x| x.to_string()));
            v
        } else {
            c.iter().map(|x| x.to_string()).collect()
        };
        parts.join(",")
    }

    fn push(&mut self, a: FoundAnomaly) {
        let n = self.counts.entry(a.name).or_insert(0);
        *n += 1;
        if *n > MAX_PER_KIND {
            self.suppressed += 1;
        } else {
            self.out.push(a);
        }
    }

    fn simple(&mut self, name: Anomaly, txns: Vec<String>, sentence: String) {
        // A dirty read (G1a, G1b) is the reader's: it comes first.
        let readers = match name {
            Anomaly::G1a | Anomaly::G1b => txns.first().cloned().into_iter().collect(),
            _ => Vec::new(),
        };
        self.push(FoundAnomaly {
            name,
            txns,
            explanation: vec![sentence],
            dot: None,
            edges: json!([]),
            readers,
        });
    }

    /// Pass 1: every write op (committed or not) with its transaction.
    fn register_ops(&mut self) {
        let h = self.h;
        let mut max_op = 0u32;
        let mut n = 0usize;
        for t in &h.txns {
            for op in &t.ops {
                if let Op::Write { op, .. } | Op::UnobservedWrite { op, .. } = op {
                    max_op = max_op.max(*op);
                    n += 1;
                }
            }
        }
        let dense = (max_op as usize) <= 4 * n + 1024;
        if dense {
            self.ops.dense = vec![
                OpInfo {
                    txn: NONE,
                    aborted: false
                };
                max_op as usize + 1
            ];
        }
        self.wrote.reserve(n);
        for (ti, t) in h.txns.iter().enumerate() {
            for op in &t.ops {
                if let Op::UnobservedWrite { op, table, undone } = op {
                    let aborted = *undone || t.status == TxnStatus::Aborted;
                    self.register_op(*op, ti as u32, aborted, dense);
                    let key = ((*op as u64) << 32) | self.table_id(table) as u64;
                    let kind = K_INSERT | K_UPDATE | if aborted { K_ABORTED } else { 0 };
                    self.partial.insert(key, kind);
                    continue;
                }
                let Op::Write {
                    op,
                    table,
                    rid,
                    before,
                    after,
                    undone,
                } = op
                else {
                    continue;
                };
                let aborted = *undone || t.status == TxnStatus::Aborted;
                self.register_op(*op, ti as u32, aborted, dense);
                let row = self.row(table, *rid);
                let kind = match (before, after) {
                    (None, _) => K_INSERT,
                    (_, None) => K_DELETE,
                    _ => K_UPDATE,
                };
                // One statement may write a row several times (a multi-row
                // upsert updating a row it inserted): kinds accumulate, and a
                // live write of the row wins over an undone one.
                let key = ((*op as u64) << 32) | row as u64;
                let e = self
                    .wrote
                    .entry(key)
                    .or_insert(if aborted { K_ABORTED } else { 0 });
                *e |= kind;
                if !aborted {
                    *e &= !K_ABORTED;
                }
            }
        }
    }

    fn register_op(&mut self, op: u32, txn: u32, aborted: bool, dense: bool) {
        let info = OpInfo { txn, aborted };
        if dense {
            let slot = &mut self.ops.dense[op as usize];
            // An op with some undone rows stays aborted only if all are.
            if slot.txn == NONE || slot.aborted {
                *slot = info;
            }
        } else {
            self.ops
                .sparse
                .entry(op)
                .and_modify(|s| s.aborted &= aborted)
                .or_insert(info);
        }
    }

    /// The write kind of `op` on `row` when `op` wrote rows of the row's table
    /// that were not observed; the write is then recorded as observed.
    fn unobserved_write(&mut self, op: u32, row: u32) -> Option<u8> {
        let (table, _) = self.row_key[row as usize];
        let kind = *self.partial.get(&(((op as u64) << 32) | table as u64))?;
        let e = self
            .wrote
            .entry(((op as u64) << 32) | row as u64)
            .or_insert(kind);
        *e |= kind & !K_ABORTED;
        Some(kind)
    }

    fn writer_node(&self, op: u32) -> u32 {
        if op == 0 {
            return NONE;
        }
        match self.ops.get(op) {
            Some(i) => self.node_of[i.txn as usize],
            None => NONE,
        }
    }

    fn op_kind(&self, op: u32, row: u32) -> &'static str {
        match self
            .wrote
            .get(&(((op as u64) << 32) | row as u64))
            .map(|k| k & !K_ABORTED)
        {
            Some(K_INSERT) => "INSERT",
            Some(K_DELETE) => "DELETE",
            Some(K_UPDATE) => "UPDATE",
            Some(k) if k & K_INSERT != 0 => "upsert",
            _ => "write",
        }
    }
}
