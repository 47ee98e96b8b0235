//! SIGINT and SIGTERM during a campaign: the first one asks the campaign to
//! stop after the current case (it then writes its summary and cleans up);
//! a second one exits at once, with the shell's code for the signal.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

struct Flags {
    any: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// Installs the handlers (idempotent). Until this is called, signals keep
/// their default action.
pub fn install() -> std::io::Result<()> {
    if FLAGS.get().is_some() {
        return Ok(());
    }
    let flags = Flags {
        any: Arc::new(AtomicBool::new(false)),
        which: Arc::new(AtomicUsize::new(0)),
    };
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first, so it sees the flag as the earlier signal left it.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, flags.any.clone())?;
        signal_hook::flag::register(sig, flags.any.clone())?;
        signal_hook::flag::register_usize(sig, flags.which.clone(), sig as usize)?;
    }
    let _ = FLAGS.set(flags);
    Ok(())
}

/// The signal received, if any.
pub fn requested() -> Option<i32> {
    let f = FLAGS.get()?;
    if !f.any.load(Ordering::SeqCst) {
        return None;
    }
    match f.which.load(Ordering::SeqCst) {
        0 => Some(signal_hook::consts::SIGINT),
        n => Some(n as i32),
    }
}

/// The signal's name: SIGINT, SIGTERM.
pub fn name(sig: i32) -> &'static str {
    match sig {
        signal_hook::consts::SIGINT => "SIGINT",
        signal_hook::consts::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// The exit code after a clean stop on `sig` (128 + the signal number).
pub fn exit_code(sig: i32) -> u8 {
    u8::try_from(128 + sig).unwrap_or(130)
}
