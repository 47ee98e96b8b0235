//! Input files read with a size limit, JSON parsed as it is read.
//!
//! A user may hand txfuzz anything: `/dev/zero` (endless valid UTF-8), a
//! random device, a multi-gigabyte history. Every file txfuzz reads goes
//! through here: at most `limit` bytes are read (a larger file is refused
//! with its path and the limit, before or while reading), and JSON goes
//! straight into its typed structure without a text copy or an intermediate
//! `serde_json::Value` (which took about 70 times the file's size), so memory
//! grows with what the file describes, not with how it is spelt.

use serde::de::DeserializeOwned;
use std::io::{BufReader, Read};
use std::path::Path;

/// Finding and case files (a 57 MB finding holds 620,000 initial rows).
pub const CASE_FILE_LIMIT: u64 = 1 << 30;
/// Checker histories (`txfuzz check`): 10M transactions are about 2 GB.
pub const HISTORY_LIMIT: u64 = 16 << 30;
/// Campaign summaries (they list every finding file: a long campaign's
/// can reach tens of MB).
pub const SUMMARY_LIMIT: u64 = 1 << 30;
/// Known-issues and pattern files.
pub const SMALL_FILE_LIMIT: u64 = 64 << 20;

/// A file parsed twice: a probe for its kind, then the whole. A regular
/// file is read again from the start for the second parse; anything else
/// (a pipe, `/dev/stdin`) can be read only once, so the probe's parse keeps
/// the bytes it read (within the limit) for the second. Both parses stream:
/// `/dev/zero` is refused at its first byte either way.
pub struct Source {
    path: std::path::PathBuf,
    limit: u64,
    bytes: Option<Vec<u8>>,
}

impl Source {
    /// Parses `path` as the probe `P` (`what` names the expected content)
    /// and returns it with the file, ready for [`Source::json`].
    pub fn probe<P: DeserializeOwned>(
        path: &Path,
        limit: u64,
        what: &str,
    ) -> Result<(P, Source), String> {
        let source = |bytes| Source {
            path: path.to_path_buf(),
            limit,
            bytes,
        };
        if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Ok((read_json(path, limit, what)?, source(None)));
        }
        let mut tee = Tee {
            inner: BufReader::with_capacity(1 << 16, open(path, limit)?),
            kept: Vec::new(),
        };
        match serde_json::from_reader(&mut tee) {
            Ok(p) => Ok((p, source(Some(tee.kept)))),
            Err(e) => Err(json_error(path, limit, tee.inner.get_ref(), what, &e)),
        }
    }

    /// The file parsed as JSON into `T` ([`read_json`]).
    pub fn json<T: DeserializeOwned>(&self, what: &str) -> Result<T, String> {
        match &self.bytes {
            None => read_json(&self.path, self.limit, what),
            Some(bytes) => {
                serde_json::from_slice(bytes).map_err(|e| not_what(&self.path, what, &e))
            }
        }
    }
}

/// A reader that keeps a copy of what it read (what the parser consumed:
/// the buffering is below it).
struct Tee {
    inner: BufReader<Limited<std::fs::File>>,
    kept: Vec<u8>,
}

impl Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.kept.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// Any JSON value, skipped without keeping it, nested at most as deep as
/// the parser allows (serde's `IgnoredAny` skips `[[[[...` with no depth
/// limit, holding one byte per level: `check` on such a stream grew to
/// 2.3 GB). For the probes that tell file kinds apart.
pub struct Skip;

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> serde::de::Visitor<'de> for SkipVisitor {
    type Value = Skip;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// Reads `path` (at most `limit` bytes) as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> Result<String, String> {
    let mut text = String::new();
    let mut r = open(path, limit)?;
    match r.read_to_string(&mut text) {
        Ok(_) => Ok(text),
        Err(e) => Err(read_error(path, limit, &r, &e.to_string())),
    }
}

/// Parses `path` (at most `limit` bytes) as JSON into `T`; `what` names
/// the expected content in the error ("a finding file").
pub fn read_json<T: DeserializeOwned>(path: &Path, limit: u64, what: &str) -> Result<T, String> {
    let mut r = BufReader::with_capacity(1 << 16, open(path, limit)?);
    serde_json::from_reader(&mut r).map_err(|e| json_error(path, limit, r.get_ref(), what, &e))
}

/// A parse of `path` read through `inner` failed: too large, unreadable,
/// or not `what`.
fn json_error(
    path: &Path,
    limit: u64,
    inner: &Limited<std::fs::File>,
    what: &str,
    e: &serde_json::Error,
) -> String {
    if inner.over {
        too_large(path, limit)
    } else if e.is_io() {
        read_error(path, limit, inner, &e.to_string())
    } else {
        not_what(path, what, e)
    }
}

/// `path` is not `what`: the parser's message, on one line.
fn not_what(path: &Path, what: &str, e: &serde_json::Error) -> String {
    format!(
        "{} is not {what}: {}",
        path.display(),
        one_line(&e.to_string())
    )
}

/// `text` on one line: a parser's message may quote the file's own text
/// (an unknown variant, a bad name), newlines and other controls included.
pub fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            c if c.is_control() => c.escape_default().collect::<Vec<_>>(),
            c => vec![c],
        })
        .collect()
}

/// The file, refused at once when its size is known to exceed `limit`.
fn open(path: &Path, limit: u64) -> Result<Limited<std::fs::File>, String> {
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if let Ok(m) = f.metadata() {
        if m.is_dir() {
            return Err(format!("cannot read {}: it is a directory", path.display()));
        }
        if m.is_file() && m.len() > limit {
            return Err(too_large(path, limit));
        }
    }
    Ok(Limited {
        inner: f,
        left: limit,
        over: false,
    })
}

fn too_large(path: &Path, limit: u64) -> String {
    format!(
        "{} is larger than {} MiB, the most txfuzz reads from such a file",
        path.display(),
        limit >> 20
    )
}

fn read_error(path: &Path, limit: u64, r: &Limited<std::fs::File>, e: &str) -> String {
    if r.over {
        too_large(path, limit)
    } else {
        format!("cannot read {}: {e}", path.display())
    }
}

/// A reader that fails once more than `left` bytes would be read.
struct Limited<R> {
    inner: R,
    left: u64,
    over: bool,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // At the limit: one more byte means the input is too large.
            let mut one = [0u8; 1];
            return match self.inner.read(&mut one)? {
                0 => Ok(0),
                _ => {
                    self.over = true;
                    Err(std::io::Error::other("input over the size limit"))
                }
            };
        }
        let max = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe skips values nested at most as deep as the parser allows:
    /// an endless `[[[[` fails at once instead of growing (it reached
    /// 2.3 GB); ordinary nesting is skipped.
    #[test]
    fn a_probe_refuses_endless_nesting() {
        #[derive(serde::Deserialize)]
        struct Probe {
            #[allow(dead_code)]
            case: Option<Skip>,
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("deep.json");
        let deep = format!("{{\"case\": {}", "[".repeat(5_000_000));
        std::fs::write(&p, deep).unwrap();
        let e = read_json::<Probe>(&p, 1 << 30, "a JSON object")
            .err()
            .expect("refused");
        assert!(e.contains("recursion limit"), "{e}");
        std::fs::write(
            &p,
            r#"{"case": [[1, {"a": [true, null, "x", 2.5]}]], "other": 3}"#,
        )
        .unwrap();
        assert!(read_json::<Probe>(&p, 1 << 30, "a JSON object").is_ok());
    }

    /// A pipe is read once: both parses of a probed file see its content.
    #[test]
    fn a_source_that_is_not_a_regular_file_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(ok.success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, r#"{"a": [1, 2]}"#).unwrap())
        };
        let (first, src): (serde_json::Value, Source) =
            Source::probe(&fifo, 1 << 20, "JSON").unwrap();
        writer.join().unwrap();
        let second: serde_json::Value = src.json("JSON").unwrap();
        assert_eq!(first, second);
        assert_eq!(first["a"][1], 2);
    }

    #[test]
    fn an_endless_device_is_refused_quickly() {
        // Zeros are valid UTF-8: read as text, /dev/zero never ends.
        let e = read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.contains("larger than 1 MiB"), "{e}");
        // Parsed as JSON, the first byte is already wrong.
        let e =
            read_json::<serde_json::Value>(Path::new("/dev/zero"), 1 << 20, "JSON").unwrap_err();
        assert!(e.contains("is not JSON"), "{e}");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_within_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "[1, 2, 3]").unwrap();
        assert_eq!(
            read_json::<Vec<u8>>(&p, 9, "a list").unwrap(),
            vec![1, 2, 3]
        );
        let e = read_json::<Vec<u8>>(&p, 8, "a list").unwrap_err();
        assert!(e.contains("larger than"), "{e}");
        let e = read_json::<String>(&p, 100, "a string").unwrap_err();
        assert!(e.contains("is not a string"), "{e}");
    }

    #[test]
    fn a_pipe_over_the_limit_is_refused_while_reading() {
        // A non-regular file has no size to check first.
        let mut r = Limited {
            inner: std::io::repeat(b' '),
            left: 1000,
            over: false,
        };
        let mut sink = Vec::new();
        assert!(r.read_to_end(&mut sink).is_err());
        assert!(r.over);
        assert_eq!(sink.len(), 1000);
    }
}
