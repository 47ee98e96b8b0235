//! `DIR/patterns.json`: per pattern and isolation level, how many cases ran and
//! how many produced the pattern's dependency path.

use crate::model::Isolation;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct Hits {
    /// (pattern, level) -> (cases, hits)
    counts: BTreeMap<(String, String), (u64, u64)>,
}

impl Hits {
    /// A case of pattern `name` at `isolation`, and whether its path was hit.
    pub fn note(&mut self, name: &str, isolation: Isolation, hit: bool) {
        let e = self
            .counts
            .entry((name.to_string(), isolation.name().to_string()))
            .or_default();
        e.0 += 1;
        e.1 += hit as u64;
    }

    pub fn write(&self, out: &std::path::Path, generator: &str) -> std::io::Result<()> {
        if self.counts.is_empty() {
            return Ok(());
        }
        let rows: Vec<serde_json::Value> = self
            .counts
            .iter()
            .map(|((p, l), (n, h))| {
                serde_json::json!({"pattern": p, "isolation": l, "cases": n, "path_hits": h})
            })
            .collect();
        let json = serde_json::json!({"generator": generator, "patterns": rows});
        let bytes = serde_json::to_vec_pretty(&json).map_err(std::io::Error::other)?;
        crate::finding::write_atomic(&out.join("patterns.json"), &bytes)
    }
}
