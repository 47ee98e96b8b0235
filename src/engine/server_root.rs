//! Where a local server's files are on this machine.
//!
//! A server names its files (error log, data directory) by paths in its own
//! root directory. A server run in a chroot names `/var/log/mysql/error.log`
//! just as the host's own server does, and reading that name here reads the
//! host server's log: crash evidence from the wrong server. So txfuzz finds
//! the server's process through its own TCP connection to it — the socket in
//! /proc/net/tcp{,6} whose address pair mirrors the connection's, and the
//! process holding `socket:[inode]` among /proc/*/fd — and joins that
//! process's root directory (/proc/PID/root) with the server's path. The
//! result is an ordinary path, resolved at connect, so that it still names
//! the file after the server process died (which is when a crash finding
//! reads it). Where the process cannot be found there is no path, only the
//! reason: a path guessed from its name may be another server's file.

use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// `st` of a listening socket in /proc/net/tcp (the kernel's `TCP_LISTEN`).
pub const LISTEN: u8 = 0x0A;
/// `st` of a connected socket (`TCP_ESTABLISHED`).
pub const ESTABLISHED: u8 = 0x01;

/// How every reason for not locating a server starts.
const NOT_FOUND: &str = "the server's process was not found on this machine";

/// Why a server's process was not located: [`NOT_FOUND`] and `why`.
pub fn not_found(why: &str) -> String {
    format!("{NOT_FOUND}: {why}")
}

/// One line of /proc/net/tcp or /proc/net/tcp6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSocket {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// The kernel's TCP state ([`LISTEN`], [`ESTABLISHED`], ...).
    pub state: u8,
    pub inode: u64,
}

/// A line `sl: local remote st tx:rx tr:when retrnsmt uid timeout inode
/// ...`; `None` for the header line or one that does not parse.
pub fn parse_line(line: &str) -> Option<TcpSocket> {
    let mut fields = line.split_whitespace();
    fields.next()?.strip_suffix(':')?;
    let local = parse_endpoint(fields.next()?)?;
    let remote = parse_endpoint(fields.next()?)?;
    let state = u8::from_str_radix(fields.next()?, 16).ok()?;
    // After the state: tx:rx, tr:when, retrnsmt, uid, timeout, then inode.
    let inode = fields.nth(5)?.parse().ok()?;
    Some(TcpSocket {
        local,
        remote,
        state,
        inode,
    })
}

/// `ADDR:PORT` in hex; the port is a plain number, the address as
/// [`parse_ip`] reads it.
fn parse_endpoint(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    Some(SocketAddr::new(
        parse_ip(ip)?,
        u16::from_str_radix(port, 16).ok()?,
    ))
}

/// The kernel prints an address as 32-bit words (one for IPv4, four for
/// IPv6), each the network-order bytes read as a native integer (`%08X`):
/// on a little-endian machine 127.0.0.1 is `0100007F`. Native bytes of each
/// word give the address back on either endianness.
fn parse_ip(hex: &str) -> Option<IpAddr> {
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(0)?))),
        32 => {
            let mut bytes = [0u8; 16];
            for (i, chunk) in bytes.chunks_exact_mut(4).enumerate() {
                chunk.copy_from_slice(&word(i)?);
            }
            Some(IpAddr::V6(Ipv6Addr::from(bytes)))
        }
        _ => None,
    }
}

/// Whether two endpoints are one: an IPv4 peer of a dual-stack IPv6 socket
/// is listed as `::ffff:a.b.c.d` in tcp6 and as `a.b.c.d` in tcp.
fn same_endpoint(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

/// Every TCP socket of this network namespace. /proc/net/tcp6 is missing
/// where IPv6 is off; /proc/net/tcp missing means this is not Linux.
pub fn tcp_sockets() -> Result<Vec<TcpSocket>, String> {
    let v4 = fs::read_to_string("/proc/net/tcp").map_err(|e| {
        not_found(&format!(
            "/proc/net/tcp is not readable ({e}); txfuzz finds a server's process through \
             Linux's /proc"
        ))
    })?;
    let v6 = fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    Ok(v4
        .lines()
        .chain(v6.lines())
        .filter_map(parse_line)
        .collect())
}

/// The local server process txfuzz found, and its root directory as a path
/// on this machine (`/` for a server that is not chrooted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRoot {
    pub pid: u32,
    pub root: PathBuf,
}

/// The process listening on `addr` (on its address, or on a wildcard
/// address at its port): how to find a server that txfuzz has no
/// connection to yet.
pub fn of_listener(addr: SocketAddr) -> Result<ServerRoot, String> {
    let inodes: Vec<u64> = tcp_sockets()?
        .into_iter()
        .filter(|s| s.state == LISTEN && s.local.port() == addr.port())
        .filter(|s| {
            let ip = s.local.ip().to_canonical();
            ip.is_unspecified() || ip == addr.ip().to_canonical()
        })
        .map(|s| s.inode)
        .collect();
    if inodes.is_empty() {
        return Err(not_found(&format!(
            "no socket listens on {addr} in this machine's network namespace"
        )));
    }
    root_of_holders(&inodes, &format!("the socket listening on {addr}"))
}

/// How txfuzz is connected to a server, as the server reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// TCP to the server's `port`, from `client_port` where the server
    /// says which (MariaDB started with `--skip-grant-tables` does not).
    Tcp { port: u16, client_port: Option<u16> },
    /// A Unix socket, whose other end /proc/net does not show.
    Socket,
}

/// The process at the other end of this process's TCP connections to
/// `port`: the one from `client_port` where the server said which.
///
/// The connection must be one this process holds, so a proxy or address
/// translation in between (the server then sees another client port, and
/// txfuzz is connected to another port) finds nothing rather than the
/// proxy. The server's end of the connection, not its listening socket,
/// decides: it is held by exactly the process that accepted it. Without a
/// client port every connection of this process to `port` counts, and
/// their servers must share one root.
pub fn of_connection(port: u16, client_port: Option<u16>) -> Result<ServerRoot, String> {
    let sockets = tcp_sockets()?;
    let mine = socket_inodes(Path::new("/proc/self")).unwrap_or_default();
    let ours: Vec<&TcpSocket> = sockets
        .iter()
        .filter(|s| s.state == ESTABLISHED && s.remote.port() == port)
        .filter(|s| client_port.is_none_or(|c| s.local.port() == c))
        .filter(|s| mine.contains(&s.inode))
        .collect();
    if ours.is_empty() {
        let from = client_port.map_or(String::new(), |c| format!(" from local port {c}"));
        return Err(not_found(&format!(
            "txfuzz holds no TCP connection{from} to port {port}, the server's own (it \
             reaches the server through a Unix socket, a proxy or address translation)"
        )));
    }
    let peers: Vec<u64> = sockets
        .iter()
        .filter(|s| {
            ours.iter()
                .any(|o| same_endpoint(s.local, o.remote) && same_endpoint(s.remote, o.local))
        })
        .map(|s| s.inode)
        .collect();
    let remote = ours[0].remote;
    if peers.is_empty() {
        return Err(not_found(&format!(
            "no socket in this machine's network namespace is the server's end of txfuzz's \
             connection to {remote} (the server runs in a container or on another host)"
        )));
    }
    root_of_holders(
        &peers,
        &format!("the server's end of the connection to {remote}"),
    )
}

/// The sockets the process of `proc_dir` (`/proc/PID`, `/proc/self`)
/// holds: the inodes of its `socket:[inode]` descriptors.
fn socket_inodes(proc_dir: &Path) -> std::io::Result<Vec<u64>> {
    Ok(fs::read_dir(proc_dir.join("fd"))?
        .flatten()
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_str()?;
            link.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect())
}

/// The root of the processes holding any of `inodes` (`what` names them in
/// reasons). Several holders (a server's worker processes) must share one
/// root; processes whose descriptors this user may not read are counted,
/// since they are why nothing may be found.
fn root_of_holders(inodes: &[u64], what: &str) -> Result<ServerRoot, String> {
    let procs = fs::read_dir("/proc").map_err(|e| not_found(&format!("/proc: {e}")))?;
    let (mut found, mut hidden) = (Vec::<ServerRoot>::new(), 0usize);
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        match socket_inodes(&entry.path()) {
            Ok(held) if held.iter().any(|i| inodes.contains(i)) => found.push(ServerRoot {
                pid,
                root: root_of(pid)?,
            }),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => hidden += 1,
            Err(_) => {} // the process ended meanwhile
        }
    }
    match found.as_slice() {
        [] if hidden > 0 => Err(not_found(&format!(
            "no process whose descriptors this user may read holds {what} ({hidden} \
             processes' are not readable: run txfuzz as the server's user or as root)"
        ))),
        [] => Err(not_found(&format!("no process holds {what}"))),
        [first, rest @ ..] if rest.iter().all(|r| r.root == first.root) => Ok(first.clone()),
        _ => Err(not_found(&format!(
            "processes with different root directories hold {what}"
        ))),
    }
}

/// The root directory of process `pid` as a path on this machine.
fn root_of(pid: u32) -> Result<PathBuf, String> {
    let root = fs::read_link(format!("/proc/{pid}/root"))
        .map_err(|e| not_found(&format!("the root directory of process {pid}: {e}")))?;
    if root.to_string_lossy().ends_with(" (deleted)") {
        return Err(not_found(&format!(
            "the root directory of process {pid} was deleted ({})",
            root.display()
        )));
    }
    Ok(root)
}

impl ServerRoot {
    /// `server_path` (absolute, as the server names it) as a path on this
    /// machine: the root joined with it. A server in a mount namespace of
    /// its own (a systemd `PrivateTmp`, a container's mounts) may see
    /// another file under that name, so where the server's own view
    /// (/proc/PID/root/...) shows the file, the joined path must be that
    /// same file.
    pub fn file(&self, server_path: &Path) -> Result<PathBuf, String> {
        let rel = server_path
            .strip_prefix("/")
            .map_err(|_| format!("{} is not an absolute path", server_path.display()))?;
        let here = self.root.join(rel);
        let seen = Path::new("/proc")
            .join(self.pid.to_string())
            .join("root")
            .join(rel);
        match (fs::metadata(&seen), fs::metadata(&here)) {
            (Ok(a), Ok(b)) if same_file(&a, &b) => Ok(here),
            (Ok(_), _) => Err(format!(
                "the server (process {}) sees {} through mounts of its own: {} on this \
                 machine is not that file",
                self.pid,
                server_path.display(),
                here.display()
            )),
            // Not there (yet) or not readable: reading it later says so.
            (Err(_), _) => Ok(here),
        }
    }
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &fs::Metadata, _: &fs::Metadata) -> bool {
    true
}

/// The server's file `server_path` (absolute, in the server's root) as a
/// path on this machine, located through txfuzz's connection to the
/// server. The reason, when there is none, says the name is not read here.
pub fn server_file(via: Via, server_path: &Path) -> Result<PathBuf, String> {
    let located = match via {
        Via::Tcp { port, client_port } => of_connection(port, client_port),
        Via::Socket => Err(not_found(
            "txfuzz is connected through a Unix socket and finds a server's process by its \
             TCP connection (connect over TCP, e.g. to 127.0.0.1)",
        )),
    };
    located.and_then(|r| r.file(server_path)).map_err(|why| {
        format!(
            "{why}; so {} as the server names it is not read here (on this machine that \
             name may be another server's file)",
            server_path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    const V4_LISTEN: &str = "   0: 0100007F:18EB 00000000:0000 0A 00000000:00000000 \
        00:00000000 00000000     0        0 3749 1 000000006aa5a288 100 0 0 10 0";
    const V4_CONN: &str = "   7: 0100007F:B7AC 0100007F:0CEB 01 00000000:00000000 \
        02:000A7B2E 00000000   999        0 4215667 2 00000000c5b3c1a1 20 4 30 10 -1";
    const V6_LOOPBACK: &str = "   0: 00000000000000000000000001000000:18EB \
        00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 \
        0        0 3750 1 00000000ef153d53 100 0 0 10 0";
    const V6_MAPPED: &str = "   3: 0000000000000000FFFF00000100007F:0CEB \
        0000000000000000FFFF00000100007F:B7AC 01 00000000:00000000 00:00000000 00000000 \
        999        0 4215668 1 0000000000000000 20 4 30 10 -1";

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn header_and_garbage_are_no_sockets() {
        let header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when \
                      retrnsmt   uid  timeout inode";
        assert_eq!(parse_line(header), None);
        assert_eq!(parse_line(""), None);
        assert_eq!(parse_line("   0: 0100007F:18EB"), None);
        assert_eq!(parse_line(&V4_LISTEN.replace("0100007F", "7F0001")), None);
    }

    #[test]
    fn ports_states_and_inodes_are_read() {
        let l = parse_line(V4_LISTEN).unwrap();
        assert_eq!((l.local.port(), l.remote.port()), (0x18EB, 0));
        assert_eq!((l.state, l.inode), (LISTEN, 3749));
        let c = parse_line(V4_CONN).unwrap();
        assert_eq!((c.local.port(), c.remote.port()), (47020, 3307));
        assert_eq!((c.state, c.inode), (ESTABLISHED, 4215667));
    }

    // The kernel prints each address word in the machine's byte order.
    #[cfg(target_endian = "little")]
    #[test]
    fn addresses_are_read_in_the_kernels_word_order() {
        assert_eq!(parse_line(V4_LISTEN).unwrap().local, addr("127.0.0.1:6379"));
        assert_eq!(parse_line(V4_LISTEN).unwrap().remote, addr("0.0.0.0:0"));
        assert_eq!(parse_line(V6_LOOPBACK).unwrap().local, addr("[::1]:6379"));
        assert_eq!(parse_line(V6_LOOPBACK).unwrap().remote, addr("[::]:0"));
        let mapped = parse_line(V6_MAPPED).unwrap();
        assert_eq!(mapped.local, addr("[::ffff:127.0.0.1]:3307"));
        // The server's end of the IPv4 connection of V4_CONN, as tcp6 lists it.
        let ours = parse_line(V4_CONN).unwrap();
        assert!(same_endpoint(mapped.local, ours.remote));
        assert!(same_endpoint(mapped.remote, ours.local));
        assert!(!same_endpoint(mapped.local, ours.local));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_listener_of_this_process_is_found_with_its_root() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let found = of_listener(listener.local_addr().unwrap()).unwrap();
        assert_eq!(found.pid, std::process::id());
        assert_eq!(found.root, fs::read_link("/proc/self/root").unwrap());
        assert_eq!(found.root, Path::new("/"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_other_end_of_a_connection_is_found_by_the_ports() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        let client = TcpStream::connect(server).unwrap();
        let (_accepted, _) = listener.accept().unwrap();
        let client_port = client.local_addr().unwrap().port();
        for client_port in [Some(client_port), None] {
            let found = of_connection(server.port(), client_port).unwrap();
            assert_eq!(found.pid, std::process::id());
            assert_eq!(found.root, Path::new("/"));
        }
        // A file the server names is the same path here.
        let exe = fs::read_link("/proc/self/exe").unwrap();
        let via = Via::Tcp {
            port: server.port(),
            client_port: Some(client_port),
        };
        assert_eq!(server_file(via, &exe), Ok(exe));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn without_the_connection_nothing_is_guessed() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Nobody is connected to it: no connection to it is this process's.
        for client_port in [Some(port), None] {
            let via = Via::Tcp { port, client_port };
            let why = server_file(via, Path::new("/var/log/x.log")).unwrap_err();
            assert!(why.starts_with(NOT_FOUND), "{why}");
            assert!(
                why.contains("/var/log/x.log as the server names it is not read"),
                "{why}"
            );
        }
        let why = server_file(Via::Socket, Path::new("/var/log/x.log")).unwrap_err();
        assert!(why.contains("Unix socket"), "{why}");
        drop(listener);
    }

    #[test]
    fn a_relative_server_path_is_refused() {
        let root = ServerRoot {
            pid: std::process::id(),
            root: PathBuf::from("/"),
        };
        assert!(root.file(Path::new("x.log")).is_err());
    }
}
