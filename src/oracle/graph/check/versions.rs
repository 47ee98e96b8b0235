//! Version chains: placing each observed write list on its row's chain,
//! reads of aborted, intermediate or never-existing versions, diverging
//! orders, own writes and deletes.

use super::super::history::CheckTxn;
use super::chain_entries::Seen;
use super::*;

/// `wl`'s entries into `buf`, oldest first, reading only the versions past
/// the longest prefix it shares, node for node, with the row's chain (whose
/// versions are `chain`): a new version of a shared
/// history costs one entry, not its whole list. False if there are none.
fn entries(chain: &[Version], wl: &WriteList, buf: &mut Vec<u32>) -> bool {
    buf.clear();
    let mut shared = 0;
    for v in wl.versions() {
        if chain
            .get(v.len() - 1)
            .is_some_and(|c| c.node == v.node_id())
        {
            shared = v.len();
            break;
        }
        buf.push(v.last());
    }
    buf.reverse();
    buf.splice(0..0, chain[..shared].iter().map(|v| v.op));
    !buf.is_empty()
}

impl<'a> Checker<'a> {
    /// Places `wl` of `row` on the row's chain: Some(version length), or None
    /// (anomaly recorded) when it names an unknown/aborted write or diverges.
    /// `wl` is the history's (`'a`), which keeps its nodes alive: the chain
    /// remembers versions by their nodes' addresses.
    pub(super) fn observe(
        &mut self,
        txn: u32,
        row: u32,
        wl: &'a WriteList,
        src: Src,
    ) -> Option<u32> {
        // Where the history shares its versions, most observations are of
        // the chain's last version (reads, every `before`) or of one written
        // over it (every `after`); an older version on the chain is the node
        // at its position. None of these reads more than one entry. Equal
        // lists in separate nodes take the long way.
        let id = wl.node_id();
        let rs = &self.rows[row as usize];
        if rs.tip == id {
            return Some(rs.chain.len() as u32);
        }
        if rs.deleted == 0 && wl.previous_node_id() == rs.tip {
            let pos = rs.chain.len();
            let seen = Seen { txn, row, wl, src };
            if !self.entry_valid(&seen, pos, wl.last()) {
                return None;
            }
            let writer = self.writer_node(wl.last());
            self.rows[row as usize].push(Version {
                op: wl.last(),
                writer,
                node: id,
            });
            return Some(pos as u32 + 1);
        }
        if rs.chain.get(wl.len() - 1).is_some_and(|v| v.node == id) {
            return Some(wl.len() as u32);
        }
        let mut buf = std::mem::take(&mut self.scratch);
        let r = self.observe_parsed(txn, row, wl, src, &mut buf);
        self.scratch = buf;
        r
    }

    fn observe_parsed(
        &mut self,
        txn: u32,
        row: u32,
        wl: &'a WriteList,
        src: Src,
        buf: &mut Vec<u32>,
    ) -> Option<u32> {
        let seen = Seen { txn, row, wl, src };
        let rs = &self.rows[row as usize];
        if !entries(&rs.chain, wl, buf) {
            let (who, how) = self.observer(txn, src);
            let s = format!(
                "{who} {how} {} with write list '{wl}', which is not a list of operation ids",
                self.row_name(row)
            );
            self.simple(Anomaly::NeverExisted, vec![who], s);
            return None;
        }
        let chain = &self.rows[row as usize].chain;
        let common = chain
            .iter()
            .zip(buf.iter())
            .take_while(|(a, b)| a.op == **b)
            .count();
        if common == buf.len() {
            return Some(buf.len() as u32);
        }
        // Validate the entries not yet on the chain.
        for (pos, &op) in buf.iter().enumerate().skip(common) {
            if !self.entry_valid(&seen, pos, op) {
                return None;
            }
        }
        let rs = &self.rows[row as usize];
        if common < rs.chain.len() || rs.deleted != 0 {
            self.diverging(&seen, buf, common);
            return None;
        }
        // The chain becomes exactly `wl`'s entries: its versions past the
        // chain, newest first, are `wl`'s first ones.
        let mut new: Vec<&WriteList> = wl.versions().take(buf.len() - common).collect();
        new.reverse();
        for v in new {
            let writer = self.writer_node(v.last());
            self.rows[row as usize].push(Version {
                op: v.last(),
                writer,
                node: v.node_id(),
            });
        }
        Some(buf.len() as u32)
    }

    /// Pass 2: observe every version seen by committed transactions and the
    /// final state; record reads and writes per node; own-write checks.
    pub(super) fn observe_all(&mut self) {
        let h = self.h;
        let mut own: Vec<(u32, u32)> = Vec::new(); // (row, op; 0 = deleted marker via op|DEL)
        let mut deletes: Vec<(u32, u32, u32)> = Vec::new();
        for (ti, t) in h.txns.iter().enumerate() {
            if t.status != TxnStatus::Committed {
                continue;
            }
            own.clear();
            self.observe_txn(ti as u32, t, &mut own, &mut deletes);
            self.read_off.push(self.reads.len() as u32);
            self.write_off.push(self.writes.len() as u32);
        }
        let mut final_versions = Vec::new();
        if let Some(fs) = &h.final_state {
            for r in fs {
                let row = self.row(&r.table, r.rid);
                if let Some(len) = self.observe(0, row, &r.wl, Src::Final) {
                    final_versions.push((row, len));
                }
            }
        }
        // The final state must hold the last committed version of each row.
        for (row, len) in final_versions {
            self.final_lost_writes(row, len);
        }
        self.pending_deletes = deletes;
    }

    /// Observes the reads and writes of committed transaction `ti` (own-write
    /// checks against `own`, its latest write per row) and collects its
    /// DELETEs in `deletes`.
    fn observe_txn(
        &mut self,
        ti: u32,
        t: &'a CheckTxn,
        own: &mut Vec<(u32, u32)>,
        deletes: &mut Vec<(u32, u32, u32)>,
    ) {
        let check_own = !t.savepoint_rollback;
        for op in &t.ops {
            match op {
                Op::Read { table, rid, wl, op } => {
                    let row = self.row(table, *rid);
                    let len = self.observe(ti, row, wl, Src::Read(op.unwrap_or(0)));
                    if check_own {
                        self.own_check(ti, own, row, wl, *op);
                    }
                    if let Some(len) = len {
                        self.reads.push(ReadRec { row, len });
                    }
                }
                Op::Write {
                    op,
                    table,
                    rid,
                    before,
                    after,
                    undone,
                } => {
                    if *undone {
                        continue;
                    }
                    let row = self.row(table, *rid);
                    if let Some(b) = before {
                        if check_own {
                            self.own_check(ti, own, row, b, Some(*op));
                        }
                        let len = self.observe(ti, row, b, Src::Before(*op));
                        if after.is_none() {
                            if let Some(len) = len {
                                deletes.push((row, len, *op));
                            }
                        }
                    }
                    if let Some(a) = after {
                        self.observe(ti, row, a, Src::After(*op));
                    }
                    self.writes.push((row, *op));
                    match own.iter_mut().find(|(r, _)| *r == row) {
                        Some(e) => e.1 = *op | if after.is_none() { 1 << 31 } else { 0 },
                        None => own.push((row, *op | if after.is_none() { 1 << 31 } else { 0 })),
                    }
                }
                Op::UnobservedRead { .. } | Op::UnobservedWrite { .. } => {}
            }
        }
    }

    /// Records a final state that holds `row` at version `len`, older than
    /// its last committed version: the later writes were lost.
    fn final_lost_writes(&mut self, row: u32, len: u32) {
        let clen = self.rows[row as usize].chain.len() as u32;
        if len < clen && !self.rows[row as usize].incompatible {
            self.rows[row as usize].incompatible = true;
            let lost: Vec<String> = self.rows[row as usize].chain[len as usize..]
                .iter()
                .map(|&Version { op, .. }| {
                    let t = self
                        .ops
                        .get(op)
                        .map(|i| self.label(i.txn))
                        .unwrap_or_default();
                    format!("op {op} of {t}")
                })
                .collect();
            let s = format!(
                "the final state holds {} version {}, older than committed version {}: {} lost",
                self.row_name(row),
                self.version(row, len),
                self.version(row, clen),
                lost.join(", ")
            );
            let txns = self.rows[row as usize].chain[len as usize..]
                .iter()
                .filter_map(|v| self.ops.get(v.op).map(|i| self.label(i.txn)))
                .collect();
            self.simple(Anomaly::IncompatibleOrder, txns, s);
        }
    }

    pub(super) fn own_check(
        &mut self,
        ti: u32,
        own: &[(u32, u32)],
        row: u32,
        wl: &WriteList,
        op: Option<u32>,
    ) {
        let Some(&(_, w)) = own.iter().find(|(r, _)| *r == row) else {
            return;
        };
        let deleted = w & (1 << 31) != 0;
        let wop = w & !(1 << 31);
        let tip = Some(wl.last());
        let at = op.map(|o| format!(" (op {o})")).unwrap_or_default();
        let s = if deleted {
            format!(
                "{} deleted {} (op {wop}) but later{at} saw it again at version {wl}",
                self.label(ti),
                self.row_name(row)
            )
        } else if tip != Some(wop) && (op.is_none() || tip != op) {
            format!(
                "{} wrote {} (op {wop}) but later{at} saw version {wl}, which does not end with its own write",
                self.label(ti),
                self.row_name(row)
            )
        } else {
            return;
        };
        let l = self.label(ti);
        self.simple(Anomaly::OwnWrite, vec![l], s);
    }
}

impl Checker<'_> {
    pub(super) fn entry(&self, row: u32, j: u32) -> Option<u32> {
        let rs = &self.rows[row as usize];
        if (j as usize) < rs.chain.len() {
            Some(rs.chain[j as usize].op)
        } else if j as usize == rs.chain.len() && rs.deleted != 0 {
            Some(rs.deleted)
        } else {
            None
        }
    }

    /// The node that wrote entry `j` of the row's chain (the deleting op's
    /// one past the chain's end), as [`Checker::entry`] finds the entry.
    pub(super) fn writer_at(&self, row: u32, j: u32) -> Option<u32> {
        let rs = &self.rows[row as usize];
        if (j as usize) < rs.chain.len() {
            Some(rs.chain[j as usize].writer)
        } else if j as usize == rs.chain.len() && rs.deleted != 0 {
            Some(self.writer_node(rs.deleted))
        } else {
            None
        }
    }

    /// The position and node of the first write after version `len`
    /// (skipping further writes by the version's own writer `w`).
    fn next_write(&self, row: u32, len: u32, w: u32) -> Option<(u32, u32)> {
        let mut j = len;
        while let Some(x) = self.writer_at(row, j) {
            if x == w && w != NONE {
                j += 1;
                continue;
            }
            return Some((j, x));
        }
        None
    }

    /// The node that wrote the first version after version `len` (skipping
    /// further writes by the version's own writer `w`).
    pub(super) fn next_writer_node(&self, row: u32, len: u32, w: u32) -> Option<u32> {
        self.next_write(row, len, w).map(|(_, x)| x)
    }

    /// [`Checker::next_writer_node`] and the op of its write.
    pub(super) fn next_writer(&self, row: u32, len: u32, w: u32) -> Option<(u32, u32)> {
        let (j, x) = self.next_write(row, len, w)?;
        Some((x, self.entry(row, j)?))
    }

    pub(super) fn check_deletes(&mut self) {
        let deletes = std::mem::take(&mut self.pending_deletes);
        for (row, len, op) in deletes {
            let rs = &mut self.rows[row as usize];
            let clen = rs.chain.len() as u32;
            let prev = rs.deleted;
            if len == clen && prev == 0 {
                rs.deleted = op;
                continue;
            }
            if rs.incompatible {
                continue;
            }
            rs.incompatible = true;
            let v = self.version(row, len);
            let who = self
                .ops
                .get(op)
                .map(|i| self.label(i.txn))
                .unwrap_or_default();
            let s = if prev != 0 {
                format!(
                    "{who}'s DELETE (op {op}) removed {} version {v}, which op {prev} had already deleted",
                    self.row_name(row)
                )
            } else {
                format!(
                    "{who}'s DELETE (op {op}) removed {} version {v}, but later versions of the row exist (up to {})",
                    self.row_name(row),
                    self.version(row, clen)
                )
            };
            self.simple(Anomaly::IncompatibleOrder, vec![who], s);
        }
        // Rows deleted at the end of their chain must not be in the final state.
        if let Some(fs) = &self.h.final_state {
            for r in fs {
                let Some(&t) = self.table_ix.get(r.table.as_str()) else {
                    continue;
                };
                let Some(row) = self.find_row(t, r.rid) else {
                    continue;
                };
                let d = self.rows[row as usize].deleted;
                if d != 0 && !self.rows[row as usize].incompatible {
                    self.rows[row as usize].incompatible = true;
                    let who = self
                        .ops
                        .get(d)
                        .map(|i| self.label(i.txn))
                        .unwrap_or_default();
                    let s = format!(
                        "{who}'s DELETE (op {d}) removed {}, yet the final state holds it at version {}",
                        self.row_name(row),
                        r.wl
                    );
                    self.simple(Anomaly::IncompatibleOrder, vec![who], s);
                }
            }
        }
    }
}
