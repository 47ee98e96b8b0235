#!/usr/bin/env bash
# Ablation of pattern-guided vs random generation (BENCHMARKS.md): time and
# cases until the graph oracle first reports lost update, write skew and read
# skew on MariaDB and PostgreSQL at REPEATABLE READ.
# Usage: scripts/ablation.sh [MAX_CASES] [MAX_SECS]   (defaults 2000, 120)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TXFUZZ_MYSQL_URL:=mysql://txfuzz@127.0.0.1:3306/test}"
: "${TXFUZZ_PG_URL:=postgres://postgres@127.0.0.1:5432/test}"
cargo run --release --quiet --example ablation -- \
  "$TXFUZZ_MYSQL_URL" "$TXFUZZ_PG_URL" "${1:-2000}" "${2:-120}"
