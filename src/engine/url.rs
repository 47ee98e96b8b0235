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
                return Err(EngineError::Usage(format!("--db URL '{url}' names no host")));
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

/// Replaces the password of `scheme://user:password@host` with `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_string(),
    }
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
    }
}
