#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit and integration tests, including
# the tests against real MariaDB and PostgreSQL servers, which scripts/provision.sh
# installs and starts when they are not reachable.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "scripts/test.sh: cargo is required (install Rust with rustup)" >&2
    exit 2
fi
if ! command -v cc >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    # rusqlite's bundled SQLite is compiled from C.
    apt-get update -qq && apt-get install -y -qq gcc >/dev/null
fi

eval "$(scripts/provision.sh)"
# MySQL 9.7, MariaDB 11.8 and PostgreSQL 18 from Debian's packages in
# debootstrap roots (tests/server_root.rs reads their logs; the server tests
# run again on them at the end, scripts/test-current.sh).
eval "$(scripts/provision-current.sh)"
# Headless Chromium renders the HTML report in tests/report.rs.
scripts/install-chromium.sh
# turso's Python module runs the exported scripts of turso findings.
eval "$(scripts/install-pyturso.sh)"
echo "scripts/test.sh: MariaDB and PostgreSQL are reachable; server tests will run" >&2
# Plain `cargo test` skips (loudly) a test whose server, private-server
# binaries or Chromium are missing; here such a skip is a failure.
export TXFUZZ_REQUIRE_SERVERS=1
# tests/hostile_input.rs: hostile strings put into case files; 20,000 files
# here (about a minute), 2,000 in a plain `cargo test` (5 s).
export TXFUZZ_HOSTILE_CASES=${TXFUZZ_HOSTILE_CASES:-20000}

cargo fmt --all -- --check
# The default build (no turso) and the one with every engine both stay clean;
# the suite runs with turso (tests/turso.rs needs it), and the default build's
# unit tests run too (they check the message of a build without turso).
cargo clippy --all-targets --quiet -- -D warnings
cargo clippy --all-targets --features turso --quiet -- -D warnings
cargo test --lib --quiet
cargo test --all-targets --features turso
# The server tests again on MySQL 9.7, MariaDB 11.8 and PostgreSQL 18.
scripts/test-current.sh
