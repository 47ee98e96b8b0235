//! Values: literals in generated SQL and values read back from an engine.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A SQL value. `Real` holds the canonical text of a non-integer number (engines
/// return DECIMAL/REAL in different native forms; text keeps equality exact and
/// hashing possible, so result sets can be compared as bags).
///
/// Read from a file, a `Real` must be a decimal number ([`is_number`]): it
/// is rendered into SQL as it is spelt.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "ValueRepr")]
pub enum Value {
    Null,
    Int(i64),
    Real(String),
    Text(String),
    Bool(bool),
}

/// [`Value`] as a file spells it, before the number check.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum ValueRepr {
    Null,
    Int(i64),
    Real(String),
    Text(String),
    Bool(bool),
}

impl TryFrom<ValueRepr> for Value {
    type Error = String;
    fn try_from(v: ValueRepr) -> Result<Value, String> {
        Ok(match v {
            ValueRepr::Null => Value::Null,
            ValueRepr::Int(i) => Value::Int(i),
            ValueRepr::Real(r) if is_number(&r) => Value::Real(r),
            ValueRepr::Real(r) => {
                let shown: String = r.chars().take(40).collect();
                return Err(format!("real {shown:?} is not a decimal number"));
            }
            ValueRepr::Text(s) => Value::Text(s),
            ValueRepr::Bool(b) => Value::Bool(b),
        })
    }
}

/// A decimal number as every dialect reads it: `-12.5`, `3`, `1.5e-7`.
pub fn is_number(s: &str) -> bool {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let s = s.strip_prefix('-').unwrap_or(s);
    let (mantissa, exponent) = match s.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (s, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => digits(int) && digits(frac),
        None => digits(mantissa),
    };
    mantissa_ok && exponent.is_none_or(digits) && s.len() <= 80
}

impl Value {
    /// Canonical text for a floating value: integral values print without a
    /// fraction so that `2.0` and `2` compare equal across engines.
    pub fn real(f: f64) -> Value {
        if f.fract() == 0.0 && f.abs() < 1e15 {
            Value::Int(f as i64)
        } else {
            Value::Real(format!("{f}"))
        }
    }

    /// A decimal literal from a scaled integer (`cents` / 100).
    pub fn decimal_cents(cents: i64) -> Value {
        if cents % 100 == 0 {
            Value::Int(cents / 100)
        } else {
            let sign = if cents < 0 { "-" } else { "" };
            let a = cents.unsigned_abs();
            let frac = a % 100;
            let frac = if frac.is_multiple_of(10) {
                format!("{}", frac / 10)
            } else {
                format!("{frac:02}")
            };
            Value::Real(format!("{sign}{}.{frac}", a / 100))
        }
    }

    /// A value a server returned as text (text protocols): integers become
    /// `Int`, decimals their canonical `Real`/`Int` form (`12.50` -> `12.5`,
    /// `7.00` -> `7`), anything else stays text.
    pub fn from_db_text(s: &str) -> Value {
        if let Ok(i) = s.parse::<i64>() {
            return Value::Int(i);
        }
        let digits = s.strip_prefix('-').unwrap_or(s);
        if let Some((int, frac)) = digits.split_once('.') {
            let numeric = !int.is_empty()
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit());
            if numeric {
                let frac = frac.trim_end_matches('0');
                let sign = if s.starts_with('-') { "-" } else { "" };
                let int = int.trim_start_matches('0');
                let int = if int.is_empty() { "0" } else { int };
                return match (frac.is_empty(), int, sign) {
                    (true, "0", _) => Value::Int(0),
                    (true, _, _) => format!("{sign}{int}")
                        .parse()
                        .map(Value::Int)
                        .unwrap_or_else(|_| Value::Real(format!("{sign}{int}"))),
                    (false, _, _) => Value::Real(format!("{sign}{int}.{frac}")),
                };
            }
        }
        Value::Text(s.to_string())
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "NULL"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Real(r) => write!(f, "{r}"),
            Value::Text(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Value::Bool(b) => write!(f, "{}", if *b { "TRUE" } else { "FALSE" }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_from_a_file_must_be_a_number() {
        for ok in ["12.5", "-3.05", "7", "1.5e-7", "2E+3"] {
            let v: Value = serde_json::from_str(&format!("{{\"real\": \"{ok}\"}}")).unwrap();
            assert_eq!(v, Value::Real(ok.into()));
        }
        for bad in [
            "1; DROP TABLE t0",
            "",
            "1.",
            ".5",
            "1e",
            "--1",
            "0x10",
            "1 ",
            "NaN",
        ] {
            let json = serde_json::to_string(&serde_json::json!({ "real": bad })).unwrap();
            let e = serde_json::from_str::<Value>(&json)
                .unwrap_err()
                .to_string();
            assert!(e.contains("not a decimal number"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn decimal_text_is_canonical() {
        assert_eq!(Value::decimal_cents(1250), Value::Real("12.5".into()));
        assert_eq!(Value::decimal_cents(-305), Value::Real("-3.05".into()));
        assert_eq!(Value::decimal_cents(700), Value::Int(7));
        assert_eq!(Value::real(12.5), Value::Real("12.5".into()));
        assert_eq!(Value::real(3.0), Value::Int(3));
    }

    #[test]
    fn server_text_is_normalised() {
        assert_eq!(Value::from_db_text("12"), Value::Int(12));
        assert_eq!(Value::from_db_text("12.50"), Value::Real("12.5".into()));
        assert_eq!(Value::from_db_text("-0.25"), Value::Real("-0.25".into()));
        assert_eq!(Value::from_db_text("7.00"), Value::Int(7));
        assert_eq!(Value::from_db_text("-3.00"), Value::Int(-3));
        assert_eq!(Value::from_db_text("0.00"), Value::Int(0));
        assert_eq!(Value::from_db_text("ab"), Value::Text("ab".into()));
        assert_eq!(Value::from_db_text("1.2.3"), Value::Text("1.2.3".into()));
        assert_eq!(Value::from_db_text("t"), Value::Text("t".into()));
    }
}
