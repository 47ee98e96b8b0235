//! `--db` URLs: `sqlite:PATH`, `sqlite::memory:`-style paths are not supported (the
//! executor needs a file shared by several connections); `mysql://`, `mariadb://`,
//! `postgres://`. Passwords never leave this module unredacted.

use super::EngineError;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbUrl {
    /// `None`: a temporary database.
    Sqlite { path: Option<PathBuf> },
    Server {
        scheme: String,
        /// The URL as given (may hold a password: never print it).
        url: String,
        redacted: String,
    },
}

pub fn parse(url: Option<&str>) -> Result<DbUrl, EngineError> {
    let Some(url) = url else {
        return Ok(DbUrl::Sqlite { path: None });
    };
    let url = url.trim();
    if let Some(rest) = url.strip_prefix("sqlite:") {
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        if rest.is_empty() || rest == ":memory:" {
            return Ok(DbUrl::Sqlite { path: None });
        }
        return Ok(DbUrl::Sqlite {
            path: Some(PathBuf::from(rest)),
        });
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(EngineError::Usage(format!(
            "unrecognised --db URL '{}': expected sqlite:PATH, mysql://user@host:port/db or postgres://user@host:port/db",
            redact(url)
        )));
    };
    match scheme {
        "mysql" | "mariadb" | "postgres" | "postgresql" => {
            if rest.is_empty() {
                return Err(EngineError::Usage(format!(
                    "--db URL '{}' names no host",
                    redact(url)
                )));
            }
            Ok(DbUrl::Server {
                scheme: scheme.to_string(),
                url: url.to_string(),
                redacted: redact(url),
            })
        }
        other => Err(EngineError::Usage(format!(
            "unsupported database scheme '{other}' in --db (expected sqlite, mysql, mariadb or postgres)"
        ))),
    }
}

/// Query-string and key=value parameters that carry a password (libpq:
/// `password`, `sslpassword`; MariaDB/MySQL clients: `password`, `pass`).
const SECRET_KEYS: [&str; 5] = ["password", "pass", "passwd", "pwd", "sslpassword"];

/// The URL with every password it may carry replaced by `***`: the userinfo
/// password (everything between the first `:` of the userinfo and the
/// **last** `@`, as libpq and the `url` crate read it, so unencoded `/`, `?`,
/// `#`, `@` or `:` in a password stay hidden) and the values of password
/// parameters, percent-encoded or not. A string that is no URL (a libpq
/// `key=value` string) gets its password values hidden too. Every URL txfuzz
/// prints or stores goes through here ([`parse`], `EngineInfo::url`).
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return redact_params(url, &[' ', '\t', '&', ';']);
    };
    let at = rest.rfind('@');
    // The query starts at the first `?` after the userinfo.
    let from = at.map_or(0, |i| i + 1);
    let (main, query) = match rest[from..].find('?') {
        Some(q) => rest.split_at(from + q),
        None => (rest, ""),
    };
    let main = match at {
        Some(i) if i < main.len() => {
            let (userinfo, host) = main.split_at(i);
            match userinfo.split_once(':') {
                Some((user, _password)) => format!("{user}:***{host}"),
                None => main.to_string(),
            }
        }
        _ => main.to_string(),
    };
    format!("{scheme}://{main}{}", redact_params(query, &['&', ';']))
}

/// Replaces the value of every password parameter (`key=value`, keys
/// compared case-insensitively after percent-decoding) in `text`, whose
/// parameters are separated by any of `seps`.
fn redact_params(text: &str, seps: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        match token.split_once('=') {
            Some((key, _)) if is_secret_key(key) => {
                out.push_str(key);
                out.push_str("=***");
            }
            _ => out.push_str(token),
        }
        token.clear();
    };
    for c in text.chars() {
        if seps.contains(&c) {
            flush(&mut token, &mut out);
            out.push(c);
        } else {
            token.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

fn is_secret_key(key: &str) -> bool {
    let key = key.trim_start_matches('?').trim();
    let decoded = percent_decode(key).to_ascii_lowercase();
    SECRET_KEYS.contains(&decoded.as_str())
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls() {
        assert_eq!(parse(None).unwrap(), DbUrl::Sqlite { path: None });
        assert_eq!(
            parse(Some("sqlite:/tmp/x.db")).unwrap(),
            DbUrl::Sqlite {
                path: Some("/tmp/x.db".into())
            }
        );
        assert_eq!(
            parse(Some("sqlite://rel.db")).unwrap(),
            DbUrl::Sqlite {
                path: Some("rel.db".into())
            }
        );
    }

    #[test]
    fn bad_urls_are_usage_errors() {
        assert!(matches!(
            parse(Some("nonsense")),
            Err(EngineError::Usage(_))
        ));
        assert!(matches!(
            parse(Some("oracle://x")),
            Err(EngineError::Usage(_))
        ));
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("mysql://root:secret@127.0.0.1:3306/test"),
            "mysql://root:***@127.0.0.1:3306/test"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        let err = parse(Some("oracle://root:secret@h/x"))
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secret"), "{err}");
        let err = parse(Some("postgres://")).unwrap_err().to_string();
        assert!(err.contains("no host"), "{err}");
    }

    /// One case per form libpq (tokio-postgres) or the MariaDB client accepts.
    #[test]
    fn every_password_form_is_redacted() {
        for (url, want) in [
            // userinfo
            (
                "postgres://u:s3cr3t@h:5432/db",
                "postgres://u:***@h:5432/db",
            ),
            // unencoded '/', '@', '?', '#', ':' in the password
            ("postgres://u:s3/cr3t@h/db", "postgres://u:***@h/db"),
            ("mysql://u:s3@cr3t@h:3306/db", "mysql://u:***@h:3306/db"),
            ("postgres://u:s3?cr3t@h/db", "postgres://u:***@h/db"),
            ("postgres://u:s3#cr3t@h/db", "postgres://u:***@h/db"),
            ("mariadb://u:s3:cr3t@h/db", "mariadb://u:***@h/db"),
            // percent-encoded
            ("postgres://u:s3%2Fcr3t%40@h/db", "postgres://u:***@h/db"),
            // query parameters, any position, any case, encoded keys
            (
                "postgres://u@h/db?password=s3cr3t",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgres://u@h/db?sslmode=disable&PassWord=s3cr3t&x=1",
                "postgres://u@h/db?sslmode=disable&PassWord=***&x=1",
            ),
            (
                "postgres://u@h/db?sslpassword=s3cr3t",
                "postgres://u@h/db?sslpassword=***",
            ),
            ("mysql://u@h/db?pass=s3cr3t", "mysql://u@h/db?pass=***"),
            (
                "postgres://u@h/db?pass%77ord=s3cr3t",
                "postgres://u@h/db?pass%77ord=***",
            ),
            // both
            (
                "postgres://u:s3cr3t@h/db?password=s3cr3t",
                "postgres://u:***@h/db?password=***",
            ),
            // libpq key=value strings
            (
                "host=h user=u password=s3cr3t dbname=db",
                "host=h user=u password=*** dbname=db",
            ),
        ] {
            let got = redact(url);
            assert_eq!(got, want, "{url}");
            assert!(
                !got.contains("s3cr3t") && !got.contains("cr3t"),
                "{url}: {got}"
            );
        }
        // No password: unchanged.
        for url in ["postgres://u@h/db", "mysql://h/db?x=1", "sqlite:/tmp/x.db"] {
            assert_eq!(redact(url), url);
        }
    }
}
