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
    match serde_json::from_reader(&mut r) {
        Ok(v) => Ok(v),
        Err(e) => {
            let inner = r.get_ref();
            if inner.over {
                Err(too_large(path, limit))
            } else if e.is_io() {
                Err(read_error(path, limit, inner, &e.to_string()))
            } else {
                Err(format!("{} is not {what}: {e}", path.display()))
            }
        }
    }
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
