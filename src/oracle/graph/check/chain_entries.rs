//! The entries an observed write list adds to its row's chain: versions
//! that never existed, contain aborted or undone writes, or diverge from the
//! chain seen elsewhere.

use super::*;

/// An observed write list, and who saw it and how (for the anomaly
/// sentences, written only when there is one: [`Checker::observer`]).
#[derive(Clone, Copy)]
pub(super) struct Seen<'w> {
    pub(super) txn: u32,
    pub(super) row: u32,
    pub(super) wl: &'w WriteList,
    pub(super) src: Src,
}

impl Checker<'_> {
    /// Who saw a version from `src` and how, as the anomaly sentences say it.
    pub(super) fn observer(&self, txn: u32, src: Src) -> (String, String) {
        let who = match src {
            Src::Final => "the final state".to_string(),
            Src::Read(_) | Src::Before(_) | Src::After(_) => self.label(txn),
        };
        let how = match src {
            Src::Read(0) => "read".to_string(),
            Src::Read(op) => format!("read (op {op})"),
            Src::Before(op) => format!("overwrote (op {op})"),
            Src::After(op) => format!("wrote (op {op})"),
            Src::Final => "holds".to_string(),
        };
        (who, how)
    }

    /// The write kinds (`K_*` bits) op `op` may have done on `row`: observed
    /// or unobserved; `None` if it wrote no such row.
    fn write_kind(&mut self, row: u32, op: u32) -> Option<u8> {
        // Observed writes of `op` on this row, plus what it may have
        // written unobserved (a MariaDB upsert that inserts a row and
        // updates it again in the same statement shows only the update).
        let seen = self.written(op, row);
        match (seen, self.unobserved_write(op, row)) {
            (Some(a), Some(b)) => Some((a | b) & !(K_ABORTED & !(a & b))),
            (a, b) => a.or(b),
        }
    }

    /// Whether entry `op` at `pos` of an observed write list can be on the
    /// row's chain; if not, the anomaly is recorded (except for a read of the
    /// transaction's own undone write).
    pub(super) fn entry_valid(&mut self, seen: &Seen, pos: usize, op: u32) -> bool {
        let (row, wl) = (seen.row, seen.wl);
        let valid_kind = if op == 0 {
            if pos == 0 {
                return true;
            }
            None
        } else {
            self.write_kind(row, op)
        };
        let Some(k) = valid_kind else {
            let (who, how) = self.observer(seen.txn, seen.src);
            let why = if op == 0 {
                "the initial version 0 in the middle".to_string()
            } else {
                match self.ops.get(op) {
                    None => format!("op {op}, which is not a write of this history"),
                    Some(i) => format!(
                        "op {op} of {}, which did not write this row",
                        self.label(i.txn)
                    ),
                }
            };
            let s = format!(
                "{who} {how} {} version {wl}, which never existed: it names {why}",
                self.row_name(row)
            );
            self.simple(Anomaly::NeverExisted, vec![who], s);
            return false;
        };
        if k & K_ABORTED != 0 {
            self.aborted_entry(seen, op);
            return false;
        }
        if pos == 0 && k & K_INSERT == 0 {
            let (who, how) = self.observer(seen.txn, seen.src);
            let s = format!(
                "{who} {how} {} version {wl}, which never existed: op {op} did not insert the row",
                self.row_name(row)
            );
            self.simple(Anomaly::NeverExisted, vec![who], s);
            return false;
        }
        true
    }

    /// Records a version containing aborted or undone write `op` (G1a, or an
    /// aborted write in the final state); nothing for a transaction's read of
    /// its own write undone by ROLLBACK TO SAVEPOINT.
    fn aborted_entry(&mut self, seen: &Seen, op: u32) {
        let (row, wl) = (seen.row, seen.wl);
        let w = self.ops.get(op).map(|i| i.txn).unwrap_or(0);
        if w == seen.txn && !matches!(seen.src, Src::Final) {
            // Its own write, later undone by ROLLBACK TO SAVEPOINT: a
            // legitimate read, but not a version of the chain.
            return;
        }
        let wlabel = self.label(w);
        let aborted_why = if self.h.txns[w as usize].status == TxnStatus::Aborted {
            format!("aborted transaction {wlabel}")
        } else {
            format!("{wlabel}, whose write was undone")
        };
        if let Src::Final = seen.src {
            let s = format!(
                "the final state holds {} version {wl}, which contains op {op} of {aborted_why}",
                self.row_name(row)
            );
            self.simple(Anomaly::AbortedWriteSurvives, vec![wlabel], s);
        } else {
            let (who, how) = self.observer(seen.txn, seen.src);
            let s = format!(
                "{who} {how} {} version {wl}, which contains op {op} of {aborted_why}",
                self.row_name(row)
            );
            self.simple(Anomaly::G1a, vec![who, wlabel], s);
        }
    }

    /// Records (once per row) an observed version `buf` that diverges from
    /// the row's chain after `common` entries: a lost or overwritten write.
    pub(super) fn diverging(&mut self, seen: &Seen, buf: &[u32], common: usize) {
        let row = seen.row;
        if self.rows[row as usize].incompatible {
            return;
        }
        self.rows[row as usize].incompatible = true;
        let (who, how) = self.observer(seen.txn, seen.src);
        let chain = &self.rows[row as usize].chain;
        let known = chain
            .iter()
            .map(|x| x.op.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let s = format!(
            "{who} {how} {} version {}, incompatible with version {known} seen elsewhere: neither extends the other, so a write was lost or overwritten",
            self.row_name(row),
            seen.wl
        );
        let mut txns = vec![who];
        for op in buf[common..]
            .iter()
            .copied()
            .chain(chain[common..].iter().map(|v| v.op))
        {
            if let Some(i) = self.ops.get(op) {
                txns.push(self.label(i.txn));
            }
        }
        txns.dedup();
        self.simple(Anomaly::IncompatibleOrder, txns, s);
    }
}
