//! The built-in patterns: the classic anomalies of APTrans Table 2 and the 40
//! two-transaction, two-item patterns of its Table 3 (`aptrans-1` ..
//! `aptrans-40`), each with the isolation levels the paper says forbid it.
//!
//! Corrections to the paper's tables (typos there, noted per entry):
//! - dirty read: the paper writes `R2[x2]`; the read sees T1's `x1`;
//! - the paper's Table 2 swaps the names of read skew and write skew; here
//!   read skew is `R1[x0] W2[x1] W2[y1] C2 R1[y1] C1` (a G-single cycle) and
//!   write skew `R1[x0] R2[y0] W1[y1] W2[x1] C1 C2` (G2-item), as in Adya and
//!   the `graph` oracle;
//! - #6, #7, #30 and #31 have operations after a transaction's commit or
//!   repeated versions; they are rebuilt from their families' shapes
//!   (compare #14/#15).

use super::parser::{parse, Pattern};
use crate::model::Isolation::{self, *};

/// A built-in pattern.
#[derive(Clone, Copy, Debug)]
pub struct Builtin {
    pub name: &'static str,
    pub text: &'static str,
    /// Where it comes from (`Table 2`, `Table 3 #12`).
    pub source: &'static str,
    /// The levels the paper says forbid it.
    pub paper_forbids: &'static [Isolation],
    /// A correction to the paper's text, if any.
    pub note: &'static str,
}

const RC_UP: &[Isolation] = &[ReadCommitted, RepeatableRead, Serializable];
const RR_UP: &[Isolation] = &[RepeatableRead, Serializable];
const SER: &[Isolation] = &[Serializable];
const RR: &[Isolation] = &[RepeatableRead];
const ALL: &[Isolation] = &[ReadUncommitted, ReadCommitted, RepeatableRead, Serializable];

const fn b(
    name: &'static str,
    text: &'static str,
    source: &'static str,
    paper_forbids: &'static [Isolation],
    note: &'static str,
) -> Builtin {
    Builtin {
        name,
        text,
        source,
        paper_forbids,
        note,
    }
}

pub const CLASSIC: [Builtin; 6] = [
    b("dirty-write", "W1[x1] W2[x2] C1 C2", "Table 2", ALL, ""),
    b(
        "dirty-read",
        "W1[x1] R2[x1] A1 C2",
        "Table 2",
        RC_UP,
        "paper: R2[x2]",
    ),
    b(
        "lost-update",
        "R1[x0] W2[x1] C2 W1[x2] C1",
        "Table 2",
        RR_UP,
        "",
    ),
    b(
        "non-repeatable-read",
        "R1[x0] W2[x1] C2 R1[x1] C1",
        "Table 2",
        RR_UP,
        "",
    ),
    b(
        "read-skew",
        "R1[x0] W2[x1] W2[y1] C2 R1[y1] C1",
        "Table 2",
        RR_UP,
        "paper's Table 2 names this write skew",
    ),
    b(
        "write-skew",
        "R1[x0] R2[y0] W1[y1] W2[x1] C1 C2",
        "Table 2",
        SER,
        "paper's Table 2 names this read skew",
    ),
];

macro_rules! t3 {
    ($($n:literal $text:literal $lv:ident $note:literal;)*) => {
        pub const APTRANS: [Builtin; 40] = [$(
            b(concat!("aptrans-", $n), $text, concat!("Table 3 #", $n), $lv, $note),
        )*];
    };
}

t3! {
    1 "W1[x1] R2[x1] C1 C2" RC_UP "";
    2 "W1[x1] C1 R2[x1] C2" RR "";
    3 "W1[x1] R2[x1] C2 W1[x2] C1" RC_UP "";
    4 "W1[x1] W2[y1] W2[x2] W1[y2] C1 C2" ALL "";
    5 "W1[x1] W2[y1] W1[y2] W2[x2] C1 C2" ALL "";
    6 "W1[x1] W2[y1] W2[x2] C2 W1[y2] C1" ALL "rebuilt; paper: W1[x1]W2[x2]C2W2[y2]W1[y2]C1";
    7 "W1[x1] W2[y1] W1[y2] C1 W2[x2] C2" ALL "rebuilt; paper: W1[x1]W2[y1]W2[x2]C2W1[x2]C1";
    8 "W1[x1] W2[y1] W2[x2] R1[y1] C1 C2" ALL "";
    9 "W1[x1] W2[y1] R1[y1] W2[x2] C1 C2" ALL "";
    10 "W1[x1] W2[y1] W2[x2] C2 R1[y1] C1" ALL "";
    11 "W1[x1] W2[y1] R1[y1] C1 W2[x2] C2" RC_UP "";
    12 "W1[x1] R2[y0] W2[x2] W1[y1] C1 C2" ALL "";
    13 "W1[x1] R2[y0] W1[y1] W2[x2] C1 C2" ALL "";
    14 "W1[x1] R2[y0] W2[x2] C2 W1[y1] C1" ALL "";
    15 "W1[x1] R2[y0] W1[y1] C1 W2[x2] C2" RR_UP "";
    16 "W1[x1] W2[y1] R2[x1] W1[y2] C1 C2" ALL "";
    17 "W1[x1] W2[y1] W1[y2] R2[x1] C1 C2" ALL "";
    18 "W1[x1] W2[y1] R2[x1] C2 W1[y2] C1" RC_UP "";
    19 "W1[x1] W2[y1] W1[y2] C1 R2[x1] C2" ALL "";
    20 "W1[x1] W2[y1] R2[x1] R1[y1] C1 C2" RC_UP "";
    21 "W1[x1] W2[y1] R1[y1] R2[x1] C1 C2" RC_UP "";
    22 "W1[x1] W2[y1] R2[x1] C2 R1[y1] C1" RC_UP "";
    23 "W1[x1] W2[y1] R1[y1] C1 R2[x1] C2" RC_UP "";
    24 "W1[x1] R2[y0] R2[x1] W1[y1] C1 C2" RC_UP "";
    25 "W1[x1] R2[y0] W1[y1] R2[x1] C1 C2" RC_UP "";
    26 "W1[x1] R2[y0] R2[x1] C2 W1[y1] C1" RC_UP "";
    27 "W1[x1] R2[y0] W1[y1] C1 R2[x1] C2" RR_UP "";
    28 "R1[x0] W2[y1] W2[x1] W1[y2] C1 C2" RC_UP "";
    29 "R1[x0] W2[y1] W1[y2] W2[x1] C1 C2" RC_UP "";
    30 "R1[x0] W2[y1] W2[x1] C2 W1[y2] C1" RR_UP "rebuilt; paper: R1[x0]W2[x1]C2W2[y1]W1[y2]C1";
    31 "R1[x0] W2[y1] W1[y2] C1 W2[x1] C2" ALL "rebuilt; paper: R1[x0]W2[y1]W2[x1]C2W1[x1]C1";
    32 "R1[x0] W2[y1] W2[x1] R1[y1] C1 C2" RC_UP "";
    33 "R1[x0] W2[y1] R1[y1] W2[x1] C1 C2" RC_UP "";
    34 "R1[x0] W2[y1] W2[x1] C2 R1[y1] C1" SER "";
    35 "R1[x0] W2[y1] R1[y1] C1 W2[x1] C2" RC_UP "";
    36 "W1[x1] W2[y1] C2 R1[y1] C1" SER "";
    37 "R1[x0] R2[y0] W2[x1] W1[y1] C1 C2" SER "";
    38 "R1[x0] R2[y0] W1[y1] W2[x1] C1 C2" SER "";
    39 "R1[x0] R2[y0] W2[x1] C2 W1[y1] C1" SER "";
    40 "R1[x0] R2[y0] W1[y1] C1 W2[x1] C2" SER "";
}

/// Every built-in pattern, classic ones first.
pub fn all() -> Vec<Builtin> {
    CLASSIC.iter().chain(APTRANS.iter()).copied().collect()
}

/// A built-in by name.
pub fn builtin(name: &str) -> Option<Builtin> {
    all().into_iter().find(|b| b.name == name)
}

impl Builtin {
    pub fn pattern(&self) -> Pattern {
        parse(self.name, self.text).expect("built-in patterns parse")
    }
}

/// Every built-in, parsed.
pub fn patterns() -> Vec<Pattern> {
    all().iter().map(Builtin::pattern).collect()
}
