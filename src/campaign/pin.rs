//! Pinning a campaign worker to one core. A case is a chain of hand-offs
//! between the executor's thread and one thread per session; a hand-off to a
//! thread on another core waits for that core to wake up, which costs more
//! than most statements take. Threads inherit their creator's CPU set, so a
//! worker pinned before it opens sessions keeps its whole case on one core
//! (BENCHMARKS.md, "Workers, shards and the default campaign": 113 -> 187
//! cases/s for one worker on SQLite).

/// Pins campaign worker `job` to a core: the `job`-th after one chosen by
/// the host name and the process id, so that the workers of one process,
/// and mostly those of processes or containers (all pid 1) started side by
/// side, spread over the cores. Where the process may use fewer cores than
/// its CPU set holds (a cgroup CPU quota, as in a Kubernetes pod), nothing
/// is pinned: the quota is not tied to particular cores, and pods that
/// pinned would pile onto the same ones.
pub fn pin_worker(job: usize) -> Option<usize> {
    let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus = allowed_cpus()?;
    if cpus.len() > usable {
        return None;
    }
    let host = crate::engine::leftover::hostname();
    let offset = host.bytes().fold(std::process::id() as usize, |h, b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    });
    pin_to(&cpus, offset.wrapping_add(job))
}

/// The CPUs this process may run on.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: `cpu_set_t` is plain data; the call gets its size and a valid
    // pointer, and pid 0 is the calling thread.
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &allowed))
                .collect(),
        )
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Option<Vec<usize>> {
    None
}

/// Pins the calling thread to the `k`-th (modulo their number) of the CPUs
/// this process may run on; returns that CPU, or `None` where pinning is not
/// available (then the thread runs wherever the system puts it).
#[cfg(test)]
fn pin_current_thread(k: usize) -> Option<usize> {
    pin_to(&allowed_cpus()?, k)
}

/// Pins the calling thread to the `k`-th (modulo their number) of `cpus`.
#[cfg(target_os = "linux")]
fn pin_to(cpus: &[usize], k: usize) -> Option<usize> {
    let cpu = *cpus.get(k % cpus.len().max(1))?;
    // SAFETY: `cpu_set_t` is plain data; the call gets its size and a valid
    // pointer, and pid 0 is the calling thread.
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        (libc::sched_setaffinity(0, size, &one) == 0).then_some(cpu)
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_cpus: &[usize], _k: usize) -> Option<usize> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn a_pinned_thread_and_the_threads_it_starts_run_on_one_cpu() {
        std::thread::spawn(|| {
            let cpu = super::pin_current_thread(1).expect("pinned");
            let on = |_: ()| unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
                (0..libc::CPU_SETSIZE as usize)
                    .filter(|&c| libc::CPU_ISSET(c, &set))
                    .collect::<Vec<_>>()
            };
            assert_eq!(on(()), vec![cpu]);
            let child = std::thread::spawn(move || on(())).join().unwrap();
            assert_eq!(child, vec![cpu]);
        })
        .join()
        .unwrap();
    }
}
