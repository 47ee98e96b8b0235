//! The pattern language: `R1[x0] W2[x1] C2 W1[x2] C1`.
//!
//! - `R<t>[<item><version>]`: transaction `t` reads version `version` of item `item`.
//! - `W<t>[<item><version>]`: transaction `t` writes (installs) that version.
//! - `C<t>` / `A<t>`: transaction `t` commits / aborts (rolls back).
//!
//! Items are lowercase names (`x`, `y`, `acct`); versions number each item's
//! writes in pattern order (`x0` is the initial version, the first write of `x`
//! installs `x1`, the next `x2`, ...). Whitespace between operations is optional.
//! Transactions are numbered 1..n; each ends with exactly one `C` or `A`, after
//! which it has no more operations.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Read,
    Write,
    Commit,
    Abort,
}

/// One operation of a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatOp {
    pub kind: OpKind,
    pub txn: u32,
    /// Data item and version (reads and writes only).
    pub item: Option<(String, u32)>,
    /// 1-based column in the pattern text.
    pub column: usize,
}

impl fmt::Display for PatOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = match self.kind {
            OpKind::Read => 'R',
            OpKind::Write => 'W',
            OpKind::Commit => 'C',
            OpKind::Abort => 'A',
        };
        match &self.item {
            Some((i, v)) => write!(f, "{k}{}[{i}{v}]", self.txn),
            None => write!(f, "{k}{}", self.txn),
        }
    }
}

/// A parsed and validated anomaly pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub name: String,
    pub ops: Vec<PatOp>,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops: Vec<String> = self.ops.iter().map(|o| o.to_string()).collect();
        f.write_str(&ops.join(" "))
    }
}

impl Pattern {
    /// Number of transactions (ids are 1..=n).
    pub fn txn_count(&self) -> u32 {
        self.ops.iter().map(|o| o.txn).max().unwrap_or(0)
    }
    /// Data items in order of first use.
    pub fn items(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (i, _) in self.ops.iter().filter_map(|o| o.item.as_ref()) {
            if !out.contains(i) {
                out.push(i.clone());
            }
        }
        out
    }
    /// Index of the operation that ends transaction `t`.
    pub fn end_of(&self, t: u32) -> usize {
        self.ops
            .iter()
            .position(|o| o.txn == t && matches!(o.kind, OpKind::Commit | OpKind::Abort))
            .expect("validated patterns end every transaction")
    }
    pub fn aborts(&self, t: u32) -> bool {
        self.ops[self.end_of(t)].kind == OpKind::Abort
    }
}

/// A malformed pattern: what is wrong and where (1-based column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at column {}", self.message, self.column)
    }
}

impl std::error::Error for PatternError {}

fn err<T>(column: usize, message: impl Into<String>) -> Result<T, PatternError> {
    Err(PatternError {
        column,
        message: message.into(),
    })
}

/// Most transactions a pattern may use.
pub const MAX_TXNS: u32 = 5;
/// Most data items a pattern may use.
pub const MAX_ITEMS: usize = 6;

/// Parses and validates a pattern.
pub fn parse(name: &str, text: &str) -> Result<Pattern, PatternError> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut ops = Vec::new();
    let digits = |i: &mut usize| -> Option<u32> {
        let start = *i;
        while *i < chars.len() && chars[*i].is_ascii_digit() {
            *i += 1;
        }
        let s: String = chars[start..*i].iter().collect();
        s.parse().ok()
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == ',' {
            i += 1;
            continue;
        }
        let column = i + 1;
        let kind = match c {
            'R' | 'r' => OpKind::Read,
            'W' | 'w' => OpKind::Write,
            'C' | 'c' => OpKind::Commit,
            'A' | 'a' => OpKind::Abort,
            _ => {
                return err(
                    column,
                    format!("expected an operation R, W, C or A, found '{c}'"),
                )
            }
        };
        i += 1;
        let Some(txn) = digits(&mut i) else {
            return err(i + 1, format!("expected a transaction number after '{c}'"));
        };
        if txn == 0 || txn > MAX_TXNS {
            return err(
                column + 1,
                format!("transaction number {txn} out of range 1..={MAX_TXNS}"),
            );
        }
        let mut item = None;
        if matches!(kind, OpKind::Read | OpKind::Write) {
            if chars.get(i) != Some(&'[') {
                return err(i + 1, "expected '['");
            }
            i += 1;
            let start = i;
            while i < chars.len() && chars[i].is_ascii_lowercase() {
                i += 1;
            }
            if i == start {
                return err(i + 1, "expected a data item name (lowercase letters)");
            }
            let name: String = chars[start..i].iter().collect();
            let Some(version) = digits(&mut i) else {
                return err(i + 1, format!("expected a version number after '{name}'"));
            };
            if chars.get(i) != Some(&']') {
                return err(i + 1, "expected ']'");
            }
            i += 1;
            item = Some((name, version));
        } else if chars.get(i) == Some(&'[') {
            return err(i + 1, "commit and abort take no data item");
        }
        ops.push(PatOp {
            kind,
            txn,
            item,
            column,
        });
    }
    let p = Pattern {
        name: name.to_string(),
        ops,
    };
    validate(&p, chars.len() + 1)?;
    Ok(p)
}

fn validate(p: &Pattern, end_col: usize) -> Result<(), PatternError> {
    if p.ops.is_empty() {
        return err(1, "empty pattern");
    }
    let n = p.txn_count();
    let mut ended: BTreeMap<u32, usize> = BTreeMap::new();
    let mut data: BTreeMap<u32, usize> = BTreeMap::new();
    let mut versions: BTreeMap<&str, u32> = BTreeMap::new();
    for o in &p.ops {
        if ended.contains_key(&o.txn) {
            return err(
                o.column,
                format!("{o}: transaction {} already ended", o.txn),
            );
        }
        match (&o.kind, &o.item) {
            (OpKind::Commit | OpKind::Abort, _) => {
                if !data.contains_key(&o.txn) {
                    return err(
                        o.column,
                        format!("{o}: transaction {} has no read or write", o.txn),
                    );
                }
                ended.insert(o.txn, o.column);
            }
            (OpKind::Write, Some((item, v))) => {
                *data.entry(o.txn).or_default() += 1;
                let last = versions.entry(item).or_insert(0);
                if *v != *last + 1 {
                    return err(
                        o.column,
                        format!(
                            "{o}: expected version {item}{} (versions of {item} number its writes in order)",
                            *last + 1
                        ),
                    );
                }
                *last = *v;
            }
            (OpKind::Read, Some((item, v))) => {
                *data.entry(o.txn).or_default() += 1;
                let last = versions.get(item.as_str()).copied().unwrap_or(0);
                if *v > last {
                    return err(
                        o.column,
                        format!("{o}: no earlier write installs version {item}{v}"),
                    );
                }
            }
            _ => unreachable!("reads and writes carry an item"),
        }
    }
    for t in 1..=n {
        if !data.contains_key(&t) {
            return err(
                1,
                format!("transactions must be numbered 1..{n}, but T{t} has no operation"),
            );
        }
        if !ended.contains_key(&t) {
            return err(
                end_col,
                format!("transaction {t} never commits (C{t}) or aborts (A{t})"),
            );
        }
    }
    if versions.len() > MAX_ITEMS || p.items().len() > MAX_ITEMS {
        return err(1, format!("at most {MAX_ITEMS} data items"));
    }
    Ok(())
}

/// Loads patterns from a file's text: one `name: pattern` per line; blank lines
/// and `#` comments are ignored. Errors name the line and column.
pub fn parse_file(text: &str) -> Result<Vec<Pattern>, String> {
    let mut out: Vec<Pattern> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        if line.trim().is_empty() {
            continue;
        }
        let Some((name, body)) = line.split_once(':') else {
            return Err(format!("line {}: expected 'name: pattern'", n + 1));
        };
        let name = name.trim();
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            return Err(format!(
                "line {}: pattern name must be one word, got '{name}'",
                n + 1
            ));
        }
        if out.iter().any(|p| p.name == name) {
            return Err(format!("line {}: pattern '{name}' defined twice", n + 1));
        }
        let offset = line.len() - line[line.find(':').unwrap_or(0) + 1..].len();
        let p = parse(name, body).map_err(|e| {
            format!(
                "line {}: pattern '{name}': {} at column {}",
                n + 1,
                e.message,
                e.column + offset
            )
        })?;
        out.push(p);
    }
    if out.is_empty() {
        return Err("the file defines no pattern".into());
    }
    Ok(out)
}
