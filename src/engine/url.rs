//! `--db` URLs: `sqlite:PATH`, `sqlite::memory:`-style paths are not supported (the
//! executor needs a file shared by several connections); `mysql://`, `mariadb://`,
//! `postgres://`. Passwords never leave this module unredacted.

use super::EngineError;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbUrl {
    /// `None`: a temporary database.
    Sqlite { path: Option<PathBuf> },
    /// `turso:PATH` (SQLite-like single writer) or `turso-mvcc:PATH` (MVCC
    /// journal mode, `BEGIN CONCURRENT`); `None`: a temporary database.
    Turso { path: Option<PathBuf>, mvcc: bool },
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
    for (prefix, mvcc) in [("turso-mvcc:", true), ("turso:", false)] {
        if let Some(rest) = url.strip_prefix(prefix) {
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            let path = (!rest.is_empty() && rest != ":memory:").then(|| PathBuf::from(rest));
            return Ok(DbUrl::Turso { path, mvcc });
        }
    }
    // A "scheme" that is no RFC 3986 scheme (`host=h password=a://b`) may
    // hold a password: such a string is reported redacted as a whole.
    let Some((scheme, rest)) = url.split_once("://").filter(|(s, _)| is_scheme(s)) else {
        return Err(EngineError::Usage(format!(
            "unrecognised --db URL '{}': expected sqlite:PATH, turso:PATH, turso-mvcc:PATH, mysql://user@host:port/db or postgres://user@host:port/db",
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

/// The URL with every password it may carry replaced by `***`. Every URL
/// txfuzz prints or stores goes through here ([`parse`], `EngineInfo::url`).
///
/// Redaction is at least as greedy as both parsers txfuzz hands URLs to, and
/// also covers what a user may have meant as a password:
/// - tokio-postgres ends the userinfo at the **first** `@` of the whole
///   string and takes the password from its first `:`; the `url` crate
///   (mysql_async) ends it at the **last** `@` before the first `/`, `?` or
///   `#`. Hidden: from the first `:` to the **last** `@` of the string, so
///   unencoded `/`, `?`, `#`, `@` or `:` in a password stay hidden; unless
///   everything between the first `@` and the path is a plain host list
///   (`h:5432,[::1]:5433`), in which case the `@`s further on are in the
///   path or query and the userinfo holds no password.
/// - With no `@` at all, a "port" that is not a number is a password whose
///   host is missing: hidden to the end.
/// - Query parameters named `password`, `pass`, `passwd`, `pwd` or
///   `sslpassword` (any case, percent-encoded or not, after `?`, `&` or `;`):
///   the value up to the next `&` that starts another `key=` (tokio-postgres
///   and the `url` crate split only at `&`; `;`, `#`, `?`, `@` are data).
/// - A string that is no URL (a libpq `key=value` string, as
///   `Config::from_str` reads it: blanks around `=`, `'quoted values'`,
///   backslash escapes) gets its password values hidden.
pub fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) if is_scheme(scheme) => {
            let mut masks = query_masks(rest);
            masks.extend(userinfo_mask(rest));
            format!("{scheme}://{}", apply_masks(rest, masks))
        }
        _ => {
            // Also a mangled URL (`postgres:/u:pw@h`, `mysql:u:pw@h`).
            let mut masks = conninfo_masks(url);
            if let Some((_, rest)) = url.split_once(':').filter(|(s, _)| is_scheme(s)) {
                let off = url.len() - rest.trim_start_matches('/').len();
                let rest = &url[off..];
                let mut url_masks = query_masks(rest);
                url_masks.extend(userinfo_mask(rest));
                masks.extend(url_masks.into_iter().map(|m| m.start + off..m.end + off));
            }
            apply_masks(url, masks)
        }
    }
}

/// RFC 3986: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The byte range of `rest` (the URL after `scheme://`) that the userinfo
/// password may occupy.
fn userinfo_mask(rest: &str) -> Option<std::ops::Range<usize>> {
    let authority_end = |from: usize| {
        rest[from..]
            .find(['/', '?', '#'])
            .map_or(rest.len(), |i| from + i)
    };
    let (Some(first_at), Some(last_at)) = (rest.find('@'), rest.rfind('@')) else {
        // No userinfo: a "port" that is no number is a password without a
        // host (which may hold a `#`).
        let hosts = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
        return match is_host_list(hosts) {
            false => rest.find(':').map(|colon| colon + 1..rest.len()),
            true => None,
        };
    };
    let colon = rest[..last_at].find(':')?;
    if colon > first_at && is_host_list(&rest[first_at + 1..authority_end(first_at + 1)]) {
        // `user@host:port/...`: the later `@`s are in the path or query.
        return None;
    }
    Some(colon + 1..last_at)
}

/// `host[:port]` or `[v6]:port`, comma-separated (libpq's multi-host form),
/// with numeric ports and no `@`: what follows the userinfo when there is no
/// password before it.
fn is_host_list(hosts: &str) -> bool {
    let numeric = |port: &str| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    !hosts.contains('@')
        && hosts.split(',').all(|chunk| {
            let port = match chunk.strip_prefix('[') {
                Some(v6) => match v6.split_once(']') {
                    Some((_, "")) => return true,
                    Some((_, after)) => after.strip_prefix(':'),
                    None => return false,
                },
                None => chunk.split_once(':').map(|(_, p)| p),
            };
            port.is_none_or(numeric)
        })
}

/// Byte ranges of `rest` holding the values of password query parameters.
fn query_masks(rest: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = rest.as_bytes();
    let mut masks = Vec::new();
    for (eq, _) in rest.match_indices('=') {
        // The key runs back to the `?`, `&` or `;` that starts the parameter.
        let Some(start) = rest[..eq].rfind(['?', '&', ';', '=']) else {
            continue;
        };
        if bytes[start] == b'=' || !is_secret_key(&rest[start + 1..eq]) {
            continue;
        }
        // The value runs to the next `&` that starts another `key=`.
        let mut end = rest.len();
        for (sep, _) in rest[eq + 1..].match_indices('&') {
            let next = &rest[eq + 1 + sep + 1..];
            if next
                .find('=')
                .is_some_and(|k| k > 0 && !next[..k].contains(['&', ';', '?', '#', '/', '@', ' ']))
            {
                end = eq + 1 + sep;
                break;
            }
        }
        masks.push(eq + 1..end);
    }
    masks
}

/// Byte ranges of a libpq `key = value` string holding password values, as
/// tokio-postgres's `Config::from_str` reads them: blanks may surround `=`,
/// a value is `'quoted'` or runs to the next blank, `\` escapes the next
/// character. An unterminated quote hides the rest. `&`, `;` and `?` also
/// start a key, in case the string is a mangled URL.
fn conninfo_masks(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut masks = Vec::new();
    for (eq, _) in text.match_indices('=') {
        let key_end = text[..eq].trim_end().len();
        let key_start = text[..key_end]
            .rfind(|c: char| c.is_whitespace() || matches!(c, '&' | ';' | '?' | '='))
            .map_or(0, |i| i + 1);
        if key_start > 0 && bytes[key_start - 1] == b'='
            || !is_secret_key(&text[key_start..key_end])
        {
            continue;
        }
        let start = eq + 1 + (text[eq + 1..].len() - text[eq + 1..].trim_start().len());
        let quoted = bytes.get(start) == Some(&b'\'');
        let mut i = start + usize::from(quoted);
        let mut end = text.len();
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 1,
                b'\'' if quoted => {
                    end = i + 1;
                    break;
                }
                b if !quoted && (b as char).is_ascii_whitespace() => {
                    end = i;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        masks.push(start..end.min(text.len()));
    }
    masks
}

/// `text` with every (merged) non-empty range in `masks` replaced by `***`.
fn apply_masks(text: &str, mut masks: Vec<std::ops::Range<usize>>) -> String {
    masks.retain(|m| m.start < m.end);
    masks.sort_by_key(|m| m.start);
    let mut out = String::with_capacity(text.len());
    // `at`: the end of the text copied or hidden so far.
    let (mut at, mut hiding) = (0, false);
    for m in masks {
        if hiding && m.start <= at {
            at = at.max(m.end);
            continue;
        }
        out.push_str(&text[at..m.start]);
        out.push_str("***");
        (at, hiding) = (m.end, true);
    }
    out.push_str(&text[at..]);
    out
}

fn is_secret_key(key: &str) -> bool {
    let decoded = percent_decode(key.trim_start_matches('?'));
    SECRET_KEYS.contains(&decoded.trim().to_ascii_lowercase().as_str())
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
    fn turso_urls() {
        assert_eq!(
            parse(Some("turso:/tmp/x.db")).unwrap(),
            DbUrl::Turso {
                path: Some("/tmp/x.db".into()),
                mvcc: false
            }
        );
        assert_eq!(
            parse(Some("turso-mvcc:")).unwrap(),
            DbUrl::Turso {
                path: None,
                mvcc: true
            }
        );
        assert_eq!(
            parse(Some("turso-mvcc://rel.db")).unwrap(),
            DbUrl::Turso {
                path: Some("rel.db".into()),
                mvcc: true
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

    /// Forms where the query, not the userinfo, holds the last `@`, and forms
    /// neither parser accepts but whose text is meant as a password.
    #[test]
    fn passwords_around_stray_separators_are_redacted() {
        for (url, want) in [
            // tokio-postgres ends the userinfo at the *first* `@`: an `@` in
            // a query value is part of the value.
            (
                "postgres://u@h/db?password=s3@cr3t",
                "postgres://u@h/db?password=***",
            ),
            // No `@` before the query's: tokio-postgres reads
            // `5432/db?password=s3` as the userinfo password.
            ("postgres://h:5432/db?password=s3@cr3t", "postgres://h:***"),
            (
                "postgres://u@h:5432,h2:5433/db?password=s3:cr3t@x",
                "postgres://u@h:5432,h2:5433/db?password=***",
            ),
            (
                "postgres://u@[::1]:5432/db?password=s3@cr3t",
                "postgres://u@[::1]:5432/db?password=***",
            ),
            // A query value runs to the next `&` that starts a parameter
            // (tokio-postgres splits only at `&`; `;`, `#`, `?` are data).
            (
                "postgres://u@h/db?password=s3;cr3t",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgres://u@h/db?password=s3;x=cr3t",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgres://u@h/db?password=s3#cr3t",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgres://u@h/db?password=s3?cr3t",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgres://u@h/db?password=s3&cr3t",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgres://u@h/db?password=s3cr3t&sslmode=disable",
                "postgres://u@h/db?password=***&sslmode=disable",
            ),
            (
                "postgres://u@h/db?%20Password%20=s3cr3t",
                "postgres://u@h/db?%20Password%20=***",
            ),
            // The url crate (mysql_async) ends the userinfo at the last `@`
            // of the authority: a user name may hold an `@`.
            ("mysql://me@corp:s3cr3t@h/db", "mysql://me@corp:***@h/db"),
            ("mysql://me@corp:s3/cr3t@h/db", "mysql://me@corp:***@h/db"),
            // An `@` in the query after a userinfo password: everything up
            // to it could be the password (tokio-postgres reads `s3`).
            (
                "postgres://u:s3cr3t@h/db?application_name=a@b",
                "postgres://u:***@b",
            ),
            // No host: the text after `:` is no port.
            ("mysql://u:s3cr3t", "mysql://u:***"),
            ("mysql://u:#s3cr3t", "mysql://u:***"),
            ("postgres://u:s3/cr3t/db", "postgres://u:***"),
            // libpq key=value strings: quoted values, blanks around `=`,
            // escapes, `://` inside a value.
            (
                "host=h password='s3 cr3t' user=u",
                "host=h password=*** user=u",
            ),
            (
                "host=h password = s3cr3t user=u",
                "host=h password = *** user=u",
            ),
            (
                "host=h password=s3\\ cr3t user=u",
                "host=h password=*** user=u",
            ),
            (
                "host=h password='s3\\' cr3t' user=u",
                "host=h password=*** user=u",
            ),
            ("host=h PASSWORD=s3://cr3t", "host=h PASSWORD=***"),
            ("password=s3cr3t://h", "password=***"),
            ("host=h password='s3 cr3t", "host=h password=***"),
            // Mangled URLs (no `//`).
            ("postgres:/u:s3cr3t@h/db", "postgres:/u:***@h/db"),
            ("mysql:u:s3cr3t", "mysql:u:***"),
            ("mysql:/h/db?password=s3cr3t", "mysql:/h/db?password=***"),
            // Overlapping ranges hide as one (the `&password=` in the
            // userinfo hides up to the next `&key=`, host included).
            (
                "postgres://u:s3cr3t&password=cr3t@h/db?password=s3&pass=cr3t",
                "postgres://u:***&pass=***",
            ),
        ] {
            let got = redact(url);
            assert_eq!(got, want, "{url}");
            assert!(!got.contains("cr3t"), "{url}: {got}");
        }
        // Ports, IPv6 hosts, several hosts and `@` elsewhere stay readable.
        for url in [
            "postgres://h:5432/db",
            "postgres://[::1]:5432/db",
            "postgres://u@[::1]:5432/db",
            "postgres://u@h1:5432,h2:5433/db?application_name=a@b",
            "mysql://u@h:3306/db?x=1&y=2",
            "sqlite:///tmp/x.db",
            "sqlite:/tmp/a:1.db",
            "sqlite:rel/x.db",
        ] {
            assert_eq!(redact(url), url);
        }
    }

    proptest::proptest! {
        /// Whatever separators a password holds and whichever form carries
        /// it, no piece of it survives (`Zq` and `Xk` mark its pieces; the
        /// rest of each URL is lower case).
        #[test]
        fn no_piece_of_a_password_survives(
            a in "[a-z/@?#:;&= %'\\\\]{0,6}",
            b in "[a-z/@?#:;&= %'\\\\]{0,6}",
            form in 0..8usize,
            user in "[a-z]{1,4}",
            host in proptest::sample::select(
                vec!["h", "h:5432", "[::1]:5432", "h1:1,h2:2", ""],
            ),
            query in proptest::sample::select(
                vec!["", "?sslmode=disable", "?application_name=a@b", "?x=1&y=2"],
            ),
        ) {
            let pw = format!("{a}Zq{b}Xk");
            let enc: String = pw
                .chars()
                .map(|c| match c.is_ascii_alphanumeric() {
                    true => c.to_string(),
                    false => format!("%{:02X}", c as u32),
                })
                .collect();
            let sep = if query.is_empty() { '?' } else { '&' };
            // A raw query value ends at an `&` for both parsers.
            let raw_q = pw.replace('&', "%26");
            let escaped: String = pw
                .chars()
                .flat_map(|c| match c {
                    '\\' | '\'' | ' ' => vec!['\\', c],
                    _ => vec![c],
                })
                .collect();
            let url = match form {
                0 => format!("postgres://{user}:{enc}@{host}/db{query}"),
                1 => format!("postgres://{user}:{pw}@{host}/db{query}"),
                2 => format!("postgres://{user}@{host}/db{query}{sep}password={raw_q}"),
                3 => format!("mysql://{user}@{host}/db{query}{sep}PassWord={enc}&z=1"),
                4 => format!("mariadb://{user}:{pw}@{host}"),
                // No host: text after a raw `@` would be the host.
                5 => format!("mysql://{user}:{}", pw.replace('@', "%40")),
                6 => format!("host={host} password='{escaped}' user={user}"),
                _ => format!("host={host} password = {escaped} user={user}"),
            };
            let got = redact(&url);
            proptest::prop_assert!(
                !got.contains("Zq") && !got.contains("Xk"),
                "{} -> {}", url, got
            );
        }
    }

    #[test]
    fn rejected_urls_do_not_echo_passwords() {
        for url in [
            "host=h password=s3://cr3t",
            "password=s3cr3t://",
            "postgres:/u:s3cr3t@h://x",
            "postgres://u:s3cr3t@",
            "mysql://root:s3cr3t@127.0.0.1:1/x?x=",
        ] {
            let msg = match parse(Some(url)) {
                Err(e) => e.to_string(),
                Ok(DbUrl::Server { redacted, .. }) => redacted,
                Ok(other) => panic!("{url}: {other:?}"),
            };
            assert!(!msg.contains("cr3t"), "{url}: {msg}");
        }
    }
}
