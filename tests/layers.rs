//! The module layers point only down, and no two files import each other
//! (ARCHITECTURE.md draws the layers).
//!
//! Why a test and not a workspace split: the layers are one crate's modules,
//! and a split into a dozen crates would make every `pub(crate)` public and
//! slow the build on a 2-core machine; this test reads the `crate::`,
//! `super::` and `self::` paths of every source file (comments and test
//! modules left out) and fails on the first import that points up a layer or
//! closes a cycle between files, naming the file and the path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom first. A module may use modules of lower layers only.
const LAYERS: &[&[&str]] = &[
    &["rng", "interrupt", "input"],
    &["model"],
    &["sql"],
    &["instrument"],
    &["engine"],
    &["gen"],
    &["exec"],
    &["oracle"],
    &["finding"],
    &["export"],
    &["campaign"],
    &["report"],
    &["reduce"],
    &["stress"],
    &["testkit"],
    &["bench"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a source file: `src/oracle/view/mod.rs` -> `oracle::view`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The code of a file without comments, string literals and test modules
/// (`#[cfg(test)]` items are at the end of a file, by convention).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::new();
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !in_str && c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' && !(prev == '\'' && chars.get(i + 1) == Some(&'\'')) {
                in_str = !in_str;
            } else if !in_str {
                kept.push(c);
            }
            prev = c;
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    // `x as y` renames: keep `x`.
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut kept = String::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "as" && i + 1 < words.len() {
            // The alias may carry the separator that follows it (`y,` `y}`).
            kept.extend(
                words[i + 1]
                    .chars()
                    .filter(|c| matches!(c, ',' | '{' | '}')),
            );
            i += 2;
        } else {
            kept.push_str(words[i]);
            i += 1;
        }
    }
    let tree = kept;
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(p).into_iter().map(move |q| format!("{prefix}{q}")))
        .collect()
}

/// The paths a file names: its `use` trees expanded, and inline paths.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut others = String::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        others.push_str(&rest[..i]);
        let after = &rest[i + 4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            others.push_str("use ");
            rest = after;
            continue;
        }
        let end = after.find(';').unwrap_or(after.len());
        out.extend(expand(&after[..end]));
        rest = &after[end..];
    }
    others.push_str(rest);
    let bytes = others.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in others.match_indices(start) {
            let prev = i.checked_sub(1).map(|j| bytes[j]);
            if prev.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
                continue;
            }
            let end = others[i..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(others.len(), |e| i + e);
            out.push(others[i..end].trim_end_matches(':').to_string());
        }
    }
    out
}

/// The module a path in file module `here` refers to (the longest prefix
/// that is a module of the crate).
fn target(here: &[String], path: &str, modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = match *segs.first()? {
        "crate" => Vec::new(),
        // In `a/b.rs` (module a::b) `self` is a::b and `super` is a; in
        // `a/mod.rs` (module a) likewise.
        "self" => here.to_vec(),
        "super" => here[..here.len().saturating_sub(1)].to_vec(),
        _ => return None,
    };
    let mut rest = &segs[1..];
    while rest.first() == Some(&"super") {
        base.pop();
        rest = &rest[1..];
    }
    let mut best = None;
    let mut cur = base.clone();
    if modules.contains(&cur) && !cur.is_empty() {
        best = Some(cur.clone());
    }
    for s in rest {
        cur.push(s.to_string());
        if modules.contains(&cur) {
            best = Some(cur.clone());
        }
    }
    best
}

struct Crate {
    /// File module -> the modules it uses (other than itself).
    uses: BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>,
}

fn read_crate() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut uses: BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>> = BTreeMap::new();
    for f in &files {
        let here = module_of(&src, f);
        // Test-only files.
        if here.last().is_some_and(|m| m == "tests") || here.is_empty() || here == ["main"] {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let entry = uses.entry(here.clone()).or_default();
        for p in paths(&code(&text)) {
            if let Some(t) = target(&here, &p, &modules) {
                if t != here {
                    entry.entry(t).or_insert(p);
                }
            }
        }
    }
    Crate { uses }
}

#[test]
fn every_top_level_module_has_a_layer() {
    let c = read_crate();
    let tops: BTreeSet<&String> = c.uses.keys().filter_map(|m| m.first()).collect();
    for t in tops {
        assert!(
            layer_of(t).is_some(),
            "module `{t}` has no layer in tests/layers.rs (and ARCHITECTURE.md)"
        );
    }
}

#[test]
fn imports_point_down_the_layers() {
    let c = read_crate();
    let mut upward = Vec::new();
    for (file, used) in &c.uses {
        let (Some(from), top) = (layer_of(&file[0]), &file[0]) else {
            continue;
        };
        for (module, path) in used {
            let to = &module[0];
            if to == top {
                continue;
            }
            match layer_of(to) {
                Some(l) if l < from => {}
                _ => upward.push(format!("{} uses {path}", file.join("::"))),
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that point up a layer:\n{}",
        upward.join("\n")
    );
}

/// No cycle between files, other than a module file (`mod.rs`) and the
/// files of its submodules, which Rust's module tree ties together.
#[test]
fn no_two_files_depend_on_each_other() {
    let c = read_crate();
    let related = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
    let edges: BTreeMap<&Vec<String>, Vec<&Vec<String>>> = c
        .uses
        .iter()
        .map(|(f, used)| {
            (
                f,
                used.keys()
                    .filter(|t| c.uses.contains_key(*t) && !related(f, t))
                    .collect(),
            )
        })
        .collect();
    // Tarjan's strongly connected components.
    struct Walk<'a> {
        edges: &'a BTreeMap<&'a Vec<String>, Vec<&'a Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        cycles: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a Vec<String>) {
        let n = w.index.len();
        w.index.insert(v, (n, n));
        w.stack.push(v);
        for &t in w.edges.get(v).into_iter().flatten() {
            match w.index.get(t) {
                None => {
                    visit(w, t);
                    let low = w.index[t].1.min(w.index[v].1);
                    w.index.get_mut(v).unwrap().1 = low;
                }
                Some(&(i, _)) if w.stack.contains(&t) => {
                    let low = i.min(w.index[v].1);
                    w.index.get_mut(v).unwrap().1 = low;
                }
                _ => {}
            }
        }
        if w.index[v].0 == w.index[v].1 {
            let mut comp = Vec::new();
            while let Some(t) = w.stack.pop() {
                comp.push(t.join("::"));
                if t == v {
                    break;
                }
            }
            if comp.len() > 1 {
                w.cycles.push(comp);
            }
        }
    }
    let mut w = Walk {
        edges: &edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        cycles: Vec::new(),
    };
    for v in edges.keys() {
        if !w.index.contains_key(v) {
            visit(&mut w, v);
        }
    }
    assert!(
        w.cycles.is_empty(),
        "files that depend on each other: {:?}",
        w.cycles
    );
}

#[test]
fn the_reader_sees_use_trees_and_inline_paths() {
    let code = code(concat!(
        "use crate::a::{b, c::{d as x, e}};\n",
        "use crate::f as g;\n",
        "// crate::z\n",
        "let x = super::h::i(\"crate::s\");\n",
    ));
    let mut p = paths(&code);
    p.sort();
    let want = [
        "crate::a::b",
        "crate::a::c::d",
        "crate::a::c::e",
        "crate::f",
        "super::h::i",
    ];
    assert_eq!(p, want);
}
