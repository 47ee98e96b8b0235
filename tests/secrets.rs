//! Passwords given in a URL or through PGPASSWORD / MYSQL_PWD never appear in
//! output, logs, findings or summaries.

mod common;

use std::path::Path;
use std::process::Command;

/// Every file below `dir`, read as text.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
    out
}

#[test]
fn url_password_never_leaks() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, p)| p.to_string())
        .expect("the provisioned PostgreSQL URL carries a password");
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args([
            "run",
            "--fault",
            "lose-write",
            "--tests",
            "40",
            "--seed",
            "2",
            "--quiet",
        ])
        .args(["--db", &url, "--out"])
        .arg(out.path())
        .env("TXFUZZ_LOG", "debug")
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let files = all_text(out.path());
    assert!(files.contains("***"), "the redacted URL is recorded");
    for (what, text) in [
        ("stdout", String::from_utf8_lossy(&o.stdout).into_owned()),
        ("stderr", String::from_utf8_lossy(&o.stderr).into_owned()),
        ("output files", files),
    ] {
        assert!(!text.contains(&password), "password leaked into {what}");
    }
}

#[test]
fn failed_connections_do_not_print_passwords() {
    for (env, url) in [
        (None, "postgres://postgres:Sekrit-Wombat-3@127.0.0.1:1/x"),
        (None, "mysql://root:Sekrit-Wombat-3@127.0.0.1:1/x"),
        (
            Some(("PGPASSWORD", "Sekrit-Wombat-3")),
            "postgres://postgres@127.0.0.1:1/x",
        ),
        (
            Some(("MYSQL_PWD", "Sekrit-Wombat-3")),
            "mysql://root@127.0.0.1:1/x",
        ),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_txfuzz"));
        cmd.args(["run", "--tests", "1", "--db", url])
            .env("TXFUZZ_LOG", "debug");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{url}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!text.contains("Sekrit-Wombat-3"), "{url}: {text}");
        assert!(text.contains("127.0.0.1:1"), "{url}: {text}");
    }
}

/// The provisioned password in every form the PostgreSQL URL parser accepts
/// (userinfo percent-encoded, `?password=`, an encoded `&password=` after another
/// parameter): the campaign connects, and the password appears in no output
/// and no file; the same for `txfuzz stress` (stress-history.json).
#[test]
fn every_url_form_of_the_password_stays_secret() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let (scheme, rest) = url.split_once("://").unwrap();
    let (userinfo, hostpart) = rest.rsplit_once('@').unwrap();
    let (user, password) = userinfo.split_once(':').expect("a password");
    let encoded: String = password.bytes().map(|b| format!("%{b:02X}")).collect();
    let sep = if hostpart.contains('?') { '&' } else { '?' };
    let forms = [
        format!("{scheme}://{user}:{encoded}@{hostpart}"),
        format!("{scheme}://{user}@{hostpart}{sep}password={password}"),
        format!("{scheme}://{user}@{hostpart}{sep}sslmode=disable&password={encoded}"),
    ];
    for form in &forms {
        for cmd in [
            vec!["run", "--tests", "3", "--quiet"],
            vec!["stress", "--time", "1s"],
        ] {
            let out = tempfile::tempdir().unwrap();
            let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
                .args(&cmd)
                .args(["--db", form, "--out"])
                .arg(out.path())
                .env("TXFUZZ_LOG", "debug")
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            assert!(matches!(o.status.code(), Some(0 | 1)), "{cmd:?}: {stderr}");
            let files = all_text(out.path());
            assert!(
                files.contains("***"),
                "{cmd:?}: the redacted URL is recorded"
            );
            for (what, text) in [
                ("stdout", String::from_utf8_lossy(&o.stdout).into_owned()),
                ("stderr", stderr),
                ("output files", files),
            ] {
                assert!(
                    !text.contains(password),
                    "{cmd:?}: password leaked into {what}"
                );
                assert!(
                    !text.contains(&encoded),
                    "{cmd:?}: password leaked into {what}"
                );
            }
        }
    }
}

#[test]
fn rejected_urls_of_every_form_do_not_print_passwords() {
    for url in [
        "mysql://root:Se/krit-Wombat@127.0.0.1:1/x",
        "mariadb://root:Se@krit-Wombat@127.0.0.1:1/x",
        "mysql://root:Se%2Fkrit-Wombat@127.0.0.1:1/x",
        "mysql://root@127.0.0.1:1/x?password=Se-krit-Wombat",
        "postgres://u:Se?krit-Wombat@127.0.0.1:1/x",
        "postgres://u@127.0.0.1:1/x?password=Se-krit-Wombat",
        "postgres://u:Se-krit-Wombat@",
        "host=127.0.0.1 password=Se-krit-Wombat",
        // The MariaDB forms: a parameter mysql_async rejects, an
        // unencoded `/` that ends the url crate's authority.
        "mysql://root:Se-krit-Wombat@127.0.0.1:1/x?x=",
        "mariadb://root:Se/krit-Wombat@host",
        "mysql://me@corp:Se-krit-Wombat@127.0.0.1:1/x",
        // `@`, `;`, `#` inside a query value (tokio-postgres ends the
        // userinfo at the first `@` and splits parameters only at `&`).
        "postgres://u@127.0.0.1:1/x?password=Se@krit-Wombat",
        "postgres://u@127.0.0.1:1/x?password=Se;krit-Wombat",
        "postgres://u@127.0.0.1:1/x?PASSWORD=Se#krit-Wombat",
        // No host: the "port" is the password.
        "mysql://root:Se-krit-Wombat",
        // Not URLs: libpq key=value strings, `://` inside a value, a
        // mangled scheme.
        "host=127.0.0.1 password='Se krit-Wombat'",
        "host=127.0.0.1 password = Se://krit-Wombat",
        "postgres:/u:Se-krit-Wombat@127.0.0.1:1/x",
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
            .args(["run", "--tests", "1", "--db", url])
            .env("TXFUZZ_LOG", "debug")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{url}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!text.contains("krit-Wombat"), "{url}: {text}");
    }
}

/// A password with every character a URL parser may take for a separator.
const SLASH_PASSWORD: &str = "Sl/a@sh:Numbat?7#x";
/// Pieces of [`SLASH_PASSWORD`] that must appear nowhere.
const SLASH_PIECES: [&str; 4] = ["Sl/a", "Numbat", "sh:N", "7#x"];

/// Creates (idempotently, also when tests run concurrently) a superuser
/// `txfuzz_slash` with [`SLASH_PASSWORD`], as the provisioned user (`url`).
fn create_slash_role(url: &str) {
    let sql = format!(
        "DO $$ BEGIN CREATE ROLE txfuzz_slash LOGIN SUPERUSER PASSWORD '{SLASH_PASSWORD}'; \
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connecting as the provisioned PostgreSQL user");
        let task = tokio::spawn(conn);
        // Sent only when missing: a server that logs statements logs the
        // password once.
        let exists = client
            .query_opt("SELECT 1 FROM pg_roles WHERE rolname = 'txfuzz_slash'", &[])
            .await
            .expect("looking up txfuzz_slash")
            .is_some();
        if !exists {
            client
                .batch_execute(&sql)
                .await
                .expect("creating txfuzz_slash");
        }
        drop(client);
        let _ = task.await;
    });
}

/// A role whose password holds `/`, `@`, `:`, `?` and `#`, given in every
/// form tokio-postgres accepts: raw in the userinfo (only the `@` encoded:
/// tokio-postgres ends the userinfo at the first `@`), fully percent-encoded,
/// raw as `?password=`, encoded after another parameter. `run` and `stress`
/// connect, and no piece of the password appears in any output or file
/// (summary.json, findings' `engine.url` and `replay`, stress-history.json).
#[test]
fn passwords_with_separators_stay_secret() {
    let Some(url) = common::pg_url() else {
        return;
    };
    create_slash_role(&url);
    let (scheme, rest) = url.split_once("://").unwrap();
    let (_, hostpart) = rest.rsplit_once('@').unwrap();
    let hostpart = hostpart.split('?').next().unwrap();
    let encoded: String = SLASH_PASSWORD
        .bytes()
        .map(|b| format!("%{b:02X}"))
        .collect();
    let at_encoded = SLASH_PASSWORD.replace('@', "%40");
    let user = "txfuzz_slash";
    let forms = [
        format!("{scheme}://{user}:{at_encoded}@{hostpart}"),
        format!("{scheme}://{user}:{encoded}@{hostpart}"),
        format!("{scheme}://{user}@{hostpart}?password={SLASH_PASSWORD}"),
        format!("{scheme}://{user}@{hostpart}?sslmode=disable&password={encoded}"),
    ];
    for form in &forms {
        for cmd in [
            vec!["run", "--tests", "3", "-q"],
            vec!["stress", "--time", "1s"],
        ] {
            let out = tempfile::tempdir().unwrap();
            let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
                .args(&cmd)
                .args(["--db", form, "--out"])
                .arg(out.path())
                .env("TXFUZZ_LOG", "debug")
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            let files = all_text(out.path());
            for (what, text) in [
                ("stdout", String::from_utf8_lossy(&o.stdout).into_owned()),
                ("stderr", stderr.clone()),
                ("output files", files.clone()),
            ] {
                for piece in SLASH_PIECES.iter().chain([&encoded.as_str()]) {
                    assert!(!text.contains(piece), "{cmd:?}: {piece} leaked into {what}");
                }
            }
            assert!(
                matches!(o.status.code(), Some(0 | 1)),
                "{cmd:?} (form {}): {stderr}",
                forms.iter().position(|f| f == form).unwrap()
            );
            assert!(
                files.contains("txfuzz_slash:***@") || files.contains("password=***"),
                "{cmd:?}: the redacted URL is recorded"
            );
        }
    }
}

/// A password the MariaDB server refuses (the provisioned user has none):
/// the access-denied error names neither the password nor its pieces.
#[test]
fn refused_mariadb_password_is_not_printed() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let (scheme, rest) = url.split_once("://").unwrap();
    let (user, hostpart) = rest.rsplit_once('@').unwrap();
    let user = user.split(':').next().unwrap();
    for password in ["Ref%2Fused-Wombat", "Ref%40used:Wombat%3F"] {
        let form = format!("{scheme}://{user}:{password}@{hostpart}");
        let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
            .args(["run", "--tests", "1", "--db", &form])
            .env("TXFUZZ_LOG", "debug")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(o.status.code(), Some(2), "{form}: {text}");
        assert!(!text.contains("used"), "{form}: {text}");
        assert!(text.contains("***"), "{form}: {text}");
    }
}
