//! Explanations of a found cycle: one sentence per edge, DOT, edges as JSON.

use super::cycles::CycleEdge;
use super::*;

/// An edge's explanation: sentence, row and version.
type Explained = (String, Option<u32>, Option<String>);

impl Checker<'_> {
    /// Sentence, row and version for one cycle edge.
    pub(super) fn explain(&self, e: &CycleEdge) -> Explained {
        let (a, b) = (e.from, e.to);
        let (la, lb) = (self.node_label(a), self.node_label(b));
        let found = match e.kind {
            WW => self.explain_ww(a, b, &la, &lb),
            WR => self.explain_wr(a, b, &la, &lb),
            RW => self.explain_rw(a, b, &la, &lb),
            _ => {
                let s = self.h.txns[self.txn_of_node[a as usize] as usize].session;
                return (
                    format!("{la} ran before {lb} in session {s} (so)"),
                    None,
                    None,
                );
            }
        };
        found.unwrap_or_else(|| (format!("{la} -> {lb} ({})", kind_name(e.kind)), None, None))
    }

    /// A ww edge `a` -> `b` (labels `la`, `lb`): a write of `b` that overwrote
    /// a version `a` wrote.
    fn explain_ww(&self, a: u32, b: u32, la: &str, lb: &str) -> Option<Explained> {
        let (lo, hi) = (self.write_off[b as usize], self.write_off[b as usize + 1]);
        for &(row, op) in &self.writes[lo as usize..hi as usize] {
            let c = &self.rows[row as usize].chain;
            let Some(j) = c
                .iter()
                .position(|x| x.op == op)
                .or_else(|| (self.rows[row as usize].deleted == op).then_some(c.len()))
            else {
                continue;
            };
            let mut k = j as u32;
            while k > 0 && self.writer_node(self.entry(row, k - 1).unwrap_or(0)) == b {
                k -= 1;
            }
            if k == 0 {
                continue;
            }
            let prev = self.entry(row, k - 1).unwrap_or(0);
            if self.writer_node(prev) != a {
                continue;
            }
            let mine = self.entry(row, k).unwrap_or(op);
            let v = self.version(row, k);
            return Some((
                format!(
                    "{lb}'s {} (op {mine}) overwrote {} version {v} written by {la}'s {} (op {prev}) (ww)",
                    self.op_kind(mine, row),
                    self.row_name(row),
                    self.op_kind(prev, row)
                ),
                Some(row),
                Some(v),
            ));
        }
        None
    }

    /// A wr edge `a` -> `b`: a read of `b` of a version `a` wrote.
    fn explain_wr(&self, a: u32, b: u32, la: &str, lb: &str) -> Option<Explained> {
        let (lo, hi) = (self.read_off[b as usize], self.read_off[b as usize + 1]);
        for r in &self.reads[lo as usize..hi as usize] {
            let vop = self.rows[r.row as usize].chain[r.len as usize - 1].op;
            if self.writer_node(vop) == a {
                let v = self.version(r.row, r.len);
                return Some((
                    format!(
                        "{lb} read {} version {v} written by {la}'s {} (op {vop}) (wr)",
                        self.row_name(r.row),
                        self.op_kind(vop, r.row)
                    ),
                    Some(r.row),
                    Some(v),
                ));
            }
        }
        None
    }

    /// An rw edge `a` -> `b`: a write of `b` that overwrote a version `a` read.
    fn explain_rw(&self, a: u32, b: u32, la: &str, lb: &str) -> Option<Explained> {
        let (lo, hi) = (self.read_off[a as usize], self.read_off[a as usize + 1]);
        for r in &self.reads[lo as usize..hi as usize] {
            let vop = self.rows[r.row as usize].chain[r.len as usize - 1].op;
            let w = self.writer_node(vop);
            if let Some((x, op)) = self.next_writer(r.row, r.len, w) {
                if x == b {
                    let v = self.version(r.row, r.len);
                    return Some((
                        format!(
                            "{lb}'s {} (op {op}) overwrote {} version {v} that {la} read (rw)",
                            self.op_kind(op, r.row),
                            self.row_name(r.row)
                        ),
                        Some(r.row),
                        Some(v),
                    ));
                }
            }
        }
        None
    }

    pub(super) fn report_cycle(&mut self, spec: &CycleSpec, cyc: &[CycleEdge]) {
        let mut sentences = Vec::new();
        let mut edges = Vec::new();
        let mut rows = Vec::new();
        let mut dot = String::from("digraph cycle {\n  rankdir=LR;\n");
        for (i, e) in cyc.iter().enumerate() {
            let (s, row, v) = self.explain(e);
            if let Some(r) = row {
                if !rows.contains(&r) {
                    rows.push(r);
                }
            }
            let (la, lb) = (self.node_label(e.from), self.node_label(e.to));
            let (table, rid) = match row {
                Some(r) => {
                    let (t, rid) = self.row_key[r as usize];
                    (Some(self.tables[t as usize]), Some(rid))
                }
                None => (None, None),
            };
            edges.push(json!({
                "from": la, "to": lb, "kind": kind_name(e.kind),
                "table": table, "rid": rid, "version": v,
            }));
            if i < MAX_DOT_EDGES {
                let what = match row {
                    Some(r) => format!("{} {}", kind_name(e.kind), self.row_name(r)),
                    None => kind_name(e.kind).to_string(),
                };
                dot.push_str(&format!("  \"{la}\" -> \"{lb}\" [label=\"{what}\"];\n"));
            }
            sentences.push(s);
        }
        if cyc.len() > MAX_DOT_EDGES {
            dot.push_str(&format!("  // {} more edges\n", cyc.len() - MAX_DOT_EDGES));
        }
        dot.push_str("}\n");
        let kinds: Vec<u8> = cyc.iter().map(|e| e.kind).collect();
        let name = match spec.name {
            Anomaly::GSingle if cyc.len() == 2 && kinds.contains(&WW) && rows.len() == 1 => {
                Anomaly::LostUpdate
            }
            Anomaly::GSingle if cyc.len() == 2 && rows.len() == 2 => Anomaly::ReadSkew,
            Anomaly::G2Item if cyc.len() == 2 && rows.len() == 2 => Anomaly::WriteSkew,
            n => n,
        };
        let txns = cyc.iter().map(|e| self.node_label(e.from)).collect();
        let readers = cyc
            .iter()
            .filter_map(|e| match e.kind {
                WR => Some(self.node_label(e.to)),
                RW => Some(self.node_label(e.from)),
                _ => None,
            })
            .collect();
        self.push(FoundAnomaly {
            name,
            txns,
            explanation: sentences,
            dot: Some(dot),
            edges: serde_json::Value::Array(edges),
            readers,
        });
    }
}
