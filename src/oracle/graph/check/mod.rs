//! The checker: version chains from write lists, non-cycle anomalies, the
//! dependency graph (ww, wr, rw, so), Tarjan SCCs and a shortest cycle per SCC
//! and anomaly spec (BFS restricted to the spec's edge kinds).
//!
//! Scale: tables and rows are interned to integers (row ids through an array
//! while they are small), and each row's chain keeps, per version, its op, its
//! writer's node and its write list's node: a version already on the chain,
//! or one written over its last, is placed by comparing node addresses and
//! validating at most one entry; other lists are read only past the prefix
//! they share with the chain. An op keeps the first row it wrote beside it.
//! The large arrays ask for huge pages. Edges live in a CSR adjacency;
//! explanations and anomaly sentences are written only for what is reported.

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

/// An empty vector of `cap` elements whose memory the kernel may back with
/// huge pages (2 MiB) as it is first written: the checker's large arrays are
/// read at random, and with 4 KiB pages most reads of a big history would
/// also miss the TLB. A hint only; without it the vector is the same.
pub(super) fn huge_vec<T>(cap: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(cap);
    let bytes = cap * std::mem::size_of::<T>();
    const HUGE: usize = 2 << 20;
    if bytes >= 4 * HUGE {
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + bytes) & !(HUGE - 1);
        if end > start {
            // SAFETY: the range lies within the vector's allocation, and
            // MADV_HUGEPAGE changes how pages are backed, not their content.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    v
}
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
    /// The transaction's node (NONE when it did not commit).
    node: u32,
    /// The first row the op wrote (NONE: none yet) and its write kinds
    /// (`K_*`), beside the op so that most ops need no `wrote` entry; the
    /// op's other rows are in `Checker::wrote`. Dense ops only.
    row: u32,
    kind: u8,
    aborted: bool,
}

const NO_OP: OpInfo = OpInfo {
    txn: NONE,
    node: NONE,
    row: NONE,
    kind: 0,
    aborted: false,
};

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

/// One version of a row's chain: the entry its write list ends with.
#[derive(Clone, Copy)]
struct Version {
    /// The op that wrote it.
    op: u32,
    /// The op's transaction's node (NONE: it did not commit), so that the
    /// graph's edges read no op.
    writer: u32,
    /// Its list's [`WriteList::node_id`]: a version already on the chain is
    /// one comparison of addresses (the history keeps every node alive while
    /// the checker runs).
    node: usize,
}

impl RowState {
    /// Appends `v` as the chain's last version (the first reserving the
    /// row's write count).
    fn push(&mut self, v: Version) {
        if self.chain.capacity() == 0 {
            self.chain.reserve_exact(self.writes as usize + 1);
        }
        self.chain.push(v);
        self.tip = v.node;
    }
}

/// One row's version chain and what is known of its end.
#[derive(Default)]
struct RowState {
    /// Oldest first; one vector, so that a new version costs one cache miss.
    chain: Vec<Version>,
    /// The last version's `node` (0 while the chain is empty), kept here so
    /// that the commonest observation, of the chain's last version or of one
    /// written over it, reads only this struct.
    tip: usize,
    /// Deleting op (0: not deleted).
    deleted: u32,
    /// Writes of the row in the history: its chain's length, give or take
    /// the initial version, reserved at once.
    writes: u32,
    /// An incompatible order was reported for the row (once per row).
    incompatible: bool,
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
    /// The last table looked up (its name's address and length, and id):
    /// histories name one table over and over, from one shared allocation.
    last_table: (usize, usize, u32),
    /// Per table, row ids from 0 up to a bound -> row (NONE: none yet);
    /// other ids in `row_ix`.
    dense_rows: Vec<Vec<u32>>,
    row_ix: FxMap<(u32, i64), u32>,
    row_key: Vec<(u32, i64)>,
    ops: OpMap,
    /// (op << 32 | row) -> write kind, for the writes not kept in the op's
    /// `OpInfo` (an op's rows after its first, or every row of sparse ops).
    wrote: FxMap<u64, u8>,
    /// (op << 32 | table) -> write kind, for ops whose writes were not all
    /// observed (`Op::UnobservedWrite`).
    partial: FxMap<u64, u8>,
    rows: Vec<RowState>,
    reads: Vec<ReadRec>,
    read_off: Vec<u32>,
    /// (row, op) of each node's committed writes.
    writes: Vec<(u32, u32)>,
    write_off: Vec<u32>,
    scratch: Vec<u32>,
    out: Vec<FoundAnomaly>,
    counts: FxMap<Anomaly, usize>,
    suppressed: usize,
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
            last_table: (0, 0, 0),
            dense_rows: Vec::new(),
            row_ix: FxMap::default(),
            row_key: Vec::new(),
            ops: OpMap {
                dense: Vec::new(),
                sparse: FxMap::default(),
            },
            wrote: FxMap::default(),
            partial: FxMap::default(),
            rows: Vec::new(),
            reads: Vec::new(),
            read_off: vec![0],
            writes: Vec::new(),
            write_off: vec![0],
            scratch: Vec::new(),
            out: Vec::new(),
            counts: FxMap::default(),
            suppressed: 0,
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
        let name = (table.as_ptr() as usize, table.len());
        if (self.last_table.0, self.last_table.1) == name {
            return self.last_table.2;
        }
        let t = match self.table_ix.get(table) {
            Some(&t) => t,
            None => {
                let t = self.tables.len() as u32;
                self.tables.push(table);
                self.table_ix.insert(table, t);
                self.dense_rows.push(Vec::new());
                t
            }
        };
        self.last_table = (name.0, name.1, t);
        t
    }

    fn row(&mut self, table: &'a str, rid: i64) -> u32 {
        let t = self.table_id(table);
        let next = self.row_key.len() as u32;
        let dense = &mut self.dense_rows[t as usize];
        // Row ids are mostly small and dense (generated keys): an array
        // indexed by id, grown while ids stay within a few times the rows.
        let slot = match usize::try_from(rid) {
            Ok(i) if i < dense.len() => Some(i),
            Ok(i) if i < (1 << 26) && i <= 2 * dense.len() + 4096 => {
                dense.resize((i + 1).max(2 * dense.len()), NONE);
                Some(i)
            }
            _ => None,
        };
        let r = match slot {
            Some(i) => {
                if dense[i] == NONE {
                    // A row met while the array was shorter is in `row_ix`.
                    dense[i] = self.row_ix.get(&(t, rid)).copied().unwrap_or(next);
                }
                dense[i]
            }
            None => *self.row_ix.entry((t, rid)).or_insert(next),
        };
        if r == next {
            self.row_key.push((t, rid));
            self.rows.push(RowState::default());
        }
        r
    }

    /// The row of `rid` in table `t`, if the history has it.
    fn find_row(&self, t: u32, rid: i64) -> Option<u32> {
        let dense = &self.dense_rows[t as usize];
        match usize::try_from(rid) {
            Ok(i) if i < dense.len() && dense[i] != NONE => Some(dense[i]),
            _ => self.row_ix.get(&(t, rid)).copied(),
        }
    }

    fn row_name(&self, row: u32) -> String {
        let (t, rid) = self.row_key[row as usize];
        format!("{} row {rid}", self.tables[t as usize])
    }

    fn version(&self, row: u32, len: u32) -> String {
        let c = &self.rows[row as usize].chain[..len as usize];
        let parts: Vec<String> = if c.len() > 10 {
            let mut v = vec!["0".to_string(), "…".to_string()];
            v.extend(c[c.len() - 6..].iter().map(|x| x.op.to_string()));
            v
        } else {
            c.iter().map(|x| x.op.to_string()).collect()
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
        let mut reads = 0usize;
        for t in &h.txns {
            for op in &t.ops {
                match op {
                    Op::Write { op, .. } | Op::UnobservedWrite { op, .. } => {
                        max_op = max_op.max(*op);
                        n += 1;
                    }
                    Op::Read { .. } => reads += 1,
                    Op::UnobservedRead { .. } => {}
                }
            }
        }
        // Each is at most one per operation (rows: per row observed).
        self.reads = huge_vec(reads);
        self.writes = huge_vec(n);
        let rows = reads + n + h.final_state.as_ref().map_or(0, Vec::len);
        self.rows = huge_vec(rows);
        let dense = (max_op as usize) <= 4 * n + 1024;
        if dense {
            self.ops.dense = huge_vec(max_op as usize + 1);
            self.ops.dense.resize(max_op as usize + 1, NO_OP);
        } else {
            self.wrote.reserve(n);
        }
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
                self.rows[row as usize].writes += 1;
                let kind = match (before, after) {
                    (None, _) => K_INSERT,
                    (_, None) => K_DELETE,
                    _ => K_UPDATE,
                };
                // One statement may write a row several times (a multi-row
                // upsert updating a row it inserted): kinds accumulate, and a
                // live write of the row wins over an undone one.
                let e = self.kind_slot(*op, row, if aborted { K_ABORTED } else { 0 });
                *e |= kind;
                if !aborted {
                    *e &= !K_ABORTED;
                }
            }
        }
    }

    fn register_op(&mut self, op: u32, txn: u32, aborted: bool, dense: bool) {
        let node = self.node_of[txn as usize];
        let info = OpInfo {
            txn,
            node,
            aborted,
            ..NO_OP
        };
        if dense {
            let slot = &mut self.ops.dense[op as usize];
            // An op with some undone rows stays aborted only if all are.
            if slot.txn == NONE || slot.aborted {
                (slot.txn, slot.node, slot.aborted) = (txn, node, aborted);
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
        if self.partial.is_empty() {
            return None;
        }
        let kind = *self.partial.get(&(((op as u64) << 32) | table as u64))?;
        let e = self.kind_slot(op, row, kind);
        *e |= kind & !K_ABORTED;
        Some(kind)
    }

    /// The write kinds recorded for `op` on `row`, inserted as `init` if
    /// none are yet.
    fn kind_slot(&mut self, op: u32, row: u32, init: u8) -> &mut u8 {
        if let Some(info) = self.ops.dense.get_mut(op as usize) {
            if info.row == NONE {
                (info.row, info.kind) = (row, init);
            }
            if info.row == row {
                return &mut info.kind;
            }
        }
        self.wrote
            .entry(((op as u64) << 32) | row as u64)
            .or_insert(init)
    }

    /// The write kinds recorded for `op` on `row`.
    fn written(&self, op: u32, row: u32) -> Option<u8> {
        match self.ops.dense.get(op as usize) {
            Some(info) if info.row == row => Some(info.kind),
            _ => self.wrote.get(&(((op as u64) << 32) | row as u64)).copied(),
        }
    }

    fn writer_node(&self, op: u32) -> u32 {
        if op == 0 {
            return NONE;
        }
        match self.ops.get(op) {
            Some(i) => i.node,
            None => NONE,
        }
    }

    fn op_kind(&self, op: u32, row: u32) -> &'static str {
        match self.written(op, row).map(|k| k & !K_ABORTED) {
            Some(K_INSERT) => "INSERT",
            Some(K_DELETE) => "DELETE",
            Some(K_UPDATE) => "UPDATE",
            Some(k) if k & K_INSERT != 0 => "upsert",
            _ => "write",
        }
    }
}
