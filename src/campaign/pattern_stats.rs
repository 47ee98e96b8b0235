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

    /// Adds the counts of `dir/patterns.json`, if there is one; returns its
    /// generator (`merge`).
    pub fn add_file(&mut self, dir: &std::path::Path) -> Result<Option<String>, String> {
        let path = dir.join("patterns.json");
        if !path.exists() {
            return Ok(None);
        }
        let text = crate::input::read_text(&path, crate::input::SMALL_FILE_LIMIT)?;
        let bad = |what: &str| format!("{}: {what}", path.display());
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
        let rows = json["patterns"]
            .as_array()
            .ok_or_else(|| bad("no patterns"))?;
        for row in rows {
            let (Some(p), Some(l), Some(n), Some(h)) = (
                row["pattern"].as_str(),
                row["isolation"].as_str(),
                row["cases"].as_u64(),
                row["path_hits"].as_u64(),
            ) else {
                return Err(bad(
                    "a pattern row without pattern, isolation, cases, path_hits",
                ));
            };
            let e = self
                .counts
                .entry((p.to_string(), l.to_string()))
                .or_default();
            e.0 += n;
            e.1 += h;
        }
        Ok(json["generator"].as_str().map(str::to_string))
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
