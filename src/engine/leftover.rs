//! The private databases (MariaDB) and schemas (PostgreSQL) txfuzz works in:
//! `txfuzz_<pid>_<n>`, marked with the host and process that own them, and
//! the clean-up of those whose process no longer exists (a run killed before
//! it could drop them).

use std::sync::atomic::{AtomicU32, Ordering};

/// Numbers the private databases/schemas of this process.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// Where this process's numbers start: a multiple of 1000 drawn from the
/// host name and the clock, so that processes of different machines with
/// one process id (every container's first process is pid 1: the pods of
/// a sharded campaign, docs/kubernetes.md) sharing a server do not collide.
fn first_number() -> u32 {
    static FIRST: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *FIRST.get_or_init(|| {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        for b in hostname().bytes().chain(nanos.to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        (h % 4_000_000) as u32 * 1000
    })
}

/// A new private name for this process: `txfuzz_<pid>_<n>`.
pub fn private_name() -> String {
    format!(
        "txfuzz_{}_{}",
        std::process::id(),
        first_number().wrapping_add(NEXT.fetch_add(1, Ordering::SeqCst))
    )
}

/// The owner mark stored with a private database/schema (its comment).
pub fn owner_mark() -> String {
    format!("txfuzz host={} pid={}", hostname(), std::process::id())
}

/// This machine's name (`/proc/sys/kernel/hostname`), or "unknown".
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .collect()
}

/// The process id in a private name `txfuzz_<pid>_<n>`.
pub fn pid_of(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("txfuzz_")?;
    let (pid, n) = rest.split_once('_')?;
    // `_s`: the view oracle's scratch database next to it (MySQL).
    n.strip_suffix("_s").unwrap_or(n).parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Whether process `pid` exists on this machine (Linux: `/proc/<pid>`; where
/// that cannot be told, every process counts as alive, so nothing is removed).
fn alive(pid: u32) -> bool {
    let proc = std::path::Path::new("/proc");
    if !proc.join("self").exists() {
        return true;
    }
    proc.join(pid.to_string()).exists()
}

/// Whether the private database/schema `name` (with its owner `mark`, if
/// any) was left behind by a txfuzz process of this machine that no longer
/// runs. Unmarked ones (older txfuzz versions) count only on a server of this
/// machine (`local`).
pub fn is_stale(name: &str, mark: Option<&str>, local: bool) -> bool {
    let Some(pid) = pid_of(name) else {
        return false;
    };
    let owned_here = match mark.and_then(|m| m.strip_prefix("txfuzz host=")) {
        Some(rest) => {
            let host = rest.split_whitespace().next().unwrap_or("");
            host == hostname()
        }
        None => local,
    };
    owned_here && pid != std::process::id() && !alive(pid)
}

/// Says in one line what was removed (on stderr: a user should know txfuzz
/// dropped something on their server).
pub fn report(what: &str, removed: &[String], failed: &[String]) {
    if !removed.is_empty() {
        eprintln!(
            "txfuzz: removed {} leftover {what}(s) of txfuzz runs that no longer exist: {}",
            removed.len(),
            removed.join(", ")
        );
    }
    if !failed.is_empty() {
        eprintln!(
            "txfuzz: could not remove {} leftover {what}(s) (still in use?): {}",
            failed.len(),
            failed.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_owners() {
        let a = private_name();
        let b = private_name();
        assert_ne!(a, b);
        assert_eq!(pid_of(&a), Some(std::process::id()));
        assert_eq!(pid_of("txfuzz_x_1"), None);
        assert_eq!(pid_of("txfuzz_41_7_s"), Some(41));
        assert_eq!(pid_of("txfuzz_41_7_t"), None);
        assert_eq!(pid_of("txfuzz_12"), None);
        assert!(owner_mark().contains(&hostname()));
    }

    #[test]
    fn only_dead_processes_of_this_host_are_stale() {
        // A pid far above any pid_max is not alive.
        let dead = "txfuzz_4294967290_0";
        let here = format!("txfuzz host={} pid=4294967290", hostname());
        assert!(is_stale(dead, Some(&here), false));
        assert!(!is_stale(dead, Some("txfuzz host=elsewhere pid=1"), true));
        assert!(is_stale(dead, None, true));
        assert!(!is_stale(dead, None, false));
        // This process and a live one (pid 1) are not stale.
        let mine = private_name();
        assert!(!is_stale(&mine, Some(&owner_mark()), true));
        assert!(!is_stale("txfuzz_1_0", None, true));
        assert!(!is_stale("other_1_0", None, true));
    }
}
