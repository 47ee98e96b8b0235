//! Private MariaDB, PostgreSQL and MySQL instances that a test starts,
//! kills, stops and restarts itself (own port, own data directory, loopback
//! only; never the suite's shared servers): tests/server_faults.rs and
//! tests/server_crash.rs. MySQL 9.7 runs in the `sid` root of
//! scripts/provision-current.sh (under `TXFUZZ_ROOTS`), by `chroot`, its
//! data directory a temporary directory in the root's `/tmp`.
//!
//! They need root (PostgreSQL runs as the `postgres` user; MariaDB as root)
//! and the servers' binaries, which scripts/provision.sh installs: MariaDB's
//! `mariadb-install-db`, `mariadbd` and `mariadb`; PostgreSQL's `initdb` and
//! `postgres` under /usr/lib/postgresql/VERSION/bin, `psql` and the
//! `postgres` user. Without them [`Private::start`] skips the test (see
//! [`super::skip`]).

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{find_tool, skip};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Mariadb,
    Postgres,
    /// MySQL 9.7 in the `sid` root ([`mysql_root`]).
    Mysql,
}

/// The root MySQL 9.7 is installed in (scripts/provision-current.sh).
fn mysql_root() -> PathBuf {
    std::env::var_os("TXFUZZ_ROOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/txfuzz/roots"))
        .join("sid")
}

/// A private server instance; killed (and continued first, if stopped) when
/// dropped.
pub struct Private {
    pub kind: Kind,
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The binaries of the newest PostgreSQL under /usr/lib/postgresql.
fn pg_bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    versions.sort();
    Some(versions.last()?.join("bin"))
}

fn pg_bin(tool: &str) -> PathBuf {
    pg_bin_dir()
        .expect("PostgreSQL is installed (scripts/provision.sh installs it)")
        .join(tool)
}

/// A tool the private instances run; present, as [`Private::start`] checked.
fn tool(name: &str) -> PathBuf {
    find_tool(name).unwrap_or_else(|| panic!("{name} is not installed"))
}

/// uid and gid of the `postgres` user (PostgreSQL refuses to run as root).
fn postgres_ids() -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let o = Command::new("id")
            .args([flag, "postgres"])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        String::from_utf8_lossy(&o.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// Why this machine cannot run a private `kind` instance, if it cannot.
fn unavailable(kind: Kind) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let mut missing = Vec::new();
    let needs = match kind {
        Kind::Mysql => {
            if !mysql_root().join("usr/sbin/mysqld").is_file() {
                missing.push(format!("{}/usr/sbin/mysqld", mysql_root().display()));
            }
            "MySQL instance needs MySQL 9.7 in its root (scripts/provision-current.sh)"
        }
        Kind::Mariadb => {
            for t in ["mariadb-install-db", "mariadbd", "mariadb"] {
                if find_tool(t).is_none() {
                    missing.push(t.to_string());
                }
            }
            "MariaDB instance needs mariadb-install-db, mariadbd, mariadb"
        }
        Kind::Postgres => {
            let bin = pg_bin_dir();
            for t in ["initdb", "postgres"] {
                if !bin.as_ref().is_some_and(|b| b.join(t).is_file()) {
                    missing.push(format!("/usr/lib/postgresql/VERSION/bin/{t}"));
                }
            }
            if find_tool("psql").is_none() {
                missing.push("psql".into());
            }
            if postgres_ids().is_none() {
                missing.push("the postgres user".into());
            }
            "PostgreSQL instance needs initdb and postgres (/usr/lib/postgresql/VERSION/bin), \
             psql, the postgres user"
        }
    };
    let uid = std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid());
    if uid != 0 {
        missing.push(format!("root (this test runs as uid {uid})"));
    }
    (!missing.is_empty()).then(|| {
        format!(
            "a private {needs} (scripts/provision.sh installs them) and root; missing: {}",
            missing.join(", ")
        )
    })
}

impl Private {
    /// Starts a private `kind` instance with a database `test`, or returns
    /// `None` after a SKIPPED line when this machine cannot run one.
    #[track_caller]
    pub fn start(kind: Kind) -> Option<Private> {
        if let Some(reason) = unavailable(kind) {
            return skip(&reason);
        }
        let dir = match kind {
            Kind::Mysql => tempfile::tempdir_in(mysql_root().join("tmp")).unwrap(),
            _ => tempfile::tempdir().unwrap(),
        };
        let data = dir.path().join("data");
        match kind {
            Kind::Mysql => {
                let inside = in_root(&data);
                let ok = Command::new("chroot")
                    .arg(mysql_root())
                    .args([
                        "mysqld",
                        "--no-defaults",
                        "--initialize-insecure",
                        "--user=root",
                    ])
                    .arg(format!("--datadir={inside}"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .expect("run mysqld --initialize-insecure");
                assert!(ok.success(), "mysqld --initialize-insecure failed");
            }
            Kind::Mariadb => {
                let tmp = dir.path().join("tmp");
                std::fs::create_dir(&tmp).unwrap();
                let ok = Command::new(tool("mariadb-install-db"))
                    .args(["--no-defaults", "--user=root"])
                    .arg(format!("--datadir={}", data.display()))
                    // A private tmpdir: concurrent bootstraps sharing /tmp
                    // collide on their temporary tables ("Unknown table
                    // 'mysql.tmp_user_sys'").
                    .arg(format!("--tmpdir={}", tmp.display()))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .expect("run mariadb-install-db");
                assert!(ok.success(), "mariadb-install-db failed");
            }
            Kind::Postgres => {
                let (uid, gid) = postgres_ids().unwrap();
                std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
                let ok = Command::new(pg_bin("initdb"))
                    .args(["-A", "trust", "-U", "postgres", "-D"])
                    .arg(&data)
                    .uid(uid)
                    .gid(gid)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .unwrap();
                assert!(ok.success(), "initdb failed");
            }
        }
        let mut p = Private {
            kind,
            child: None,
            port: free_port(),
            dir,
        };
        p.launch();
        p.sql("CREATE DATABASE IF NOT EXISTS test", "CREATE DATABASE test");
        if kind == Kind::Mysql {
            // root@localhost alone answers the socket; txfuzz comes by TCP.
            p.query(
                "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; \
                 GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
            )
            .expect("MySQL takes the TCP account");
        }
        Some(p)
    }

    /// Starts the server on its data directory and port; waits until it answers.
    pub fn launch(&mut self) {
        let data = self.dir.path().join("data");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let child = match self.kind {
                // chroot execs mysqld: the child's pid is the server's.
                Kind::Mysql => Command::new("chroot")
                    .arg(mysql_root())
                    .args(["mysqld", "--no-defaults", "--user=root", "--mysqlx=OFF"])
                    .args(["--bind-address=127.0.0.1", "--innodb-buffer-pool-size=32M"])
                    .arg("--disable-log-bin")
                    .arg(format!("--datadir={}", in_root(&data)))
                    .arg(format!("--port={}", self.port))
                    .arg(format!(
                        "--socket={}",
                        in_root(&self.dir.path().join("sock"))
                    ))
                    .arg(format!(
                        "--pid-file={}",
                        in_root(&self.dir.path().join("pid"))
                    ))
                    .arg(format!(
                        "--log-error={}",
                        in_root(&self.dir.path().join("error.log"))
                    ))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
                Kind::Mariadb => Command::new(tool("mariadbd"))
                    .args(["--no-defaults", "--user=root", "--skip-grant-tables"])
                    .args(["--bind-address=127.0.0.1", "--innodb-buffer-pool-size=32M"])
                    .arg(format!("--datadir={}", data.display()))
                    .arg(format!("--port={}", self.port))
                    .arg(format!(
                        "--tmpdir={}",
                        self.dir.path().join("tmp").display()
                    ))
                    .arg(format!(
                        "--socket={}",
                        self.dir.path().join("sock").display()
                    ))
                    .arg(format!(
                        "--log-error={}",
                        self.dir.path().join("error.log").display()
                    ))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
                Kind::Postgres => {
                    let (uid, gid) = postgres_ids().unwrap();
                    Command::new(pg_bin("postgres"))
                        .arg("-D")
                        .arg(&data)
                        .args(["-p", &self.port.to_string(), "-k"])
                        .arg(self.dir.path())
                        .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
                        .args(["-c", "shared_buffers=16MB", "-c", "max_connections=60"])
                        .uid(uid)
                        .gid(gid)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap()
                }
            };
            self.child = Some(child);
            let up = Instant::now() + Duration::from_secs(20);
            while Instant::now() < up {
                if self.answers() {
                    return;
                }
                if let Ok(Some(_)) = self.child.as_mut().unwrap().try_wait() {
                    break; // e.g. old backends still hold PostgreSQL's shared memory
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            self.kill();
            assert!(Instant::now() < deadline, "{:?} did not start", self.kind);
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    pub fn answers(&self) -> bool {
        self.query("SELECT 1").is_some()
    }

    /// One SQL text through the command-line client: its output lines.
    pub fn query(&self, sql: &str) -> Option<Vec<String>> {
        let port = self.port.to_string();
        let o = match self.kind {
            Kind::Mysql => Command::new("chroot")
                .arg(mysql_root())
                .args(["mysql", "-uroot", "-N", "-B", "--connect-timeout=2"])
                .arg(format!(
                    "--socket={}",
                    in_root(&self.dir.path().join("sock"))
                ))
                .args(["-e", sql])
                .output(),
            Kind::Mariadb => Command::new(tool("mariadb"))
                .args(["--protocol=tcp", "-h127.0.0.1", "-uroot", "-N", "-B"])
                .args(["--connect-timeout=2", "-P", &port, "-e", sql])
                .output(),
            Kind::Postgres => Command::new(tool("psql"))
                .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres"])
                .args(["-p", &port, "-tAc", sql])
                .env("PGCONNECT_TIMEOUT", "2")
                .output(),
        }
        .ok()?;
        o.status.success().then(|| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(String::from)
                .collect()
        })
    }

    /// Runs the statement for this kind of server, ignoring failure.
    pub fn sql(&self, mariadb: &str, postgres: &str) {
        let q = if self.kind == Kind::Postgres {
            postgres
        } else {
            mariadb
        };
        // PostgreSQL: CREATE DATABASE fails when it exists; fine.
        let _ = self.query(q);
    }

    /// The `--db` URL of the database `test`.
    pub fn url(&self) -> String {
        match self.kind {
            Kind::Mariadb | Kind::Mysql => format!("mysql://root@127.0.0.1:{}/test", self.port),
            Kind::Postgres => format!("postgres://postgres@127.0.0.1:{}/test", self.port),
        }
    }

    /// The private databases/schemas of txfuzz on this server.
    pub fn leftovers(&self) -> Vec<String> {
        let q = match self.kind {
            Kind::Mariadb | Kind::Mysql => "SHOW DATABASES LIKE 'txfuzz%'".to_string(),
            Kind::Postgres => {
                // Schemas live in the database txfuzz was given.
                let port = self.port.to_string();
                let o = Command::new(tool("psql"))
                    .args([
                        "-h",
                        "127.0.0.1",
                        "-U",
                        "postgres",
                        "-d",
                        "test",
                        "-p",
                        &port,
                    ])
                    .args([
                        "-tAc",
                        "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'txfuzz%'",
                    ])
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                return String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(String::from)
                    .collect();
            }
        };
        self.query(&q).expect("the server answers")
    }

    /// The server's error log, as this machine sees it.
    pub fn error_log(&self) -> PathBuf {
        self.dir.path().join("error.log")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGKILL of the server and every process it started.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = c.id();
            for child in children(pid) {
                signal("KILL", child);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The backend pid of txfuzz's connection named `txfuzz-<role>`
    /// (PostgreSQL), once one exists.
    pub fn backend(&self, role: &str) -> Option<u32> {
        let q = format!(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'txfuzz-{role}' \
             ORDER BY backend_start DESC LIMIT 1"
        );
        self.query(&q)?.first()?.trim().parse().ok()
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        if let Some(c) = &self.child {
            signal("CONT", c.id());
            for child in children(c.id()) {
                signal("CONT", child);
            }
        }
        self.kill();
    }
}

/// `path` (under [`mysql_root`]) as the chroot sees it.
fn in_root(path: &std::path::Path) -> String {
    let inside = path.strip_prefix(mysql_root()).expect("a path in the root");
    format!("/{}", inside.display())
}

/// The processes whose parent is `pid` (from /proc).
pub fn children(pid: u32) -> Vec<u32> {
    // Fast where the kernel lists them; else a scan of /proc.
    if let Ok(list) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
        return list
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
        if after.split_whitespace().nth(1) == Some(&pid.to_string()) {
            out.push(p);
        }
    }
    out
}

/// Sends `kill -<sig>` to `pid`.
pub fn signal(sig: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status();
}
