#!/usr/bin/env bash
# Benchmarks behind BENCHMARKS.md, side by side in one run on this machine:
# lock-wait detection latency and reset time (`txfuzz bench`), and campaign
# throughput (`txfuzz run`) on embedded SQLite, MariaDB and PostgreSQL.
#   scripts/bench.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-out}
mkdir -p "$out"
eval "$(scripts/provision.sh)"
cargo build --release --quiet
tx=target/release/txfuzz

echo "## txfuzz bench (lock-wait latency, reset)"
"$tx" bench --rounds 200 | tee "$out/bench-sqlite.txt"
"$tx" bench --rounds 200 --db "$TXFUZZ_MYSQL_URL" | tee "$out/bench-mariadb.txt"
"$tx" bench --rounds 200 --db "$TXFUZZ_PG_URL" | tee "$out/bench-postgres.txt"

echo "## campaigns (seed 1)"
printf '| engine | cases | cases/s | transactions/hour | blocked | aborts | violations | permitted |\n'
printf '|---|---|---|---|---|---|---|---|\n'
run() { # name tests extra-args...
    local name=$1 tests=$2; shift 2
    "$tx" run --tests "$tests" --seed 1 --quiet --out "$out/run-$name" "$@" >/dev/null || true
    python3 - "$out/run-$name/summary.json" "$name" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]} | {s['cases']} | {s['cases_per_s']:.1f} | {s['transactions_per_hour']:.0f} | "
      f"{s['blocked_events']} | {s['aborts']} | {s['violations']} | {s['permitted']} |")
PY
}
run sqlite 2000
taskset -c 0 "$tx" run --tests 2000 --seed 1 --quiet --out "$out/run-sqlite-taskset" >/dev/null || true
python3 -c "import json;s=json.load(open('$out/run-sqlite-taskset/summary.json'));print(f\"| sqlite (taskset -c 0) | {s['cases']} | {s['cases_per_s']:.1f} | {s['transactions_per_hour']:.0f} | {s['blocked_events']} | {s['aborts']} | {s['violations']} | {s['permitted']} |\")"
run mariadb 600 --db "$TXFUZZ_MYSQL_URL"
run postgres 300 --db "$TXFUZZ_PG_URL"
