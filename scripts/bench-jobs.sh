#!/usr/bin/env bash
# Throughput by number of workers (--jobs 1, 2, 4, 8) on SQLite, MariaDB and
# PostgreSQL, with the per-phase time of a case (summary.json `phase_s`), as a
# Markdown table for BENCHMARKS.md (release build; scripts/provision.sh makes
# the servers reachable; TXFUZZ_BIN=path measures another binary).
#   scripts/bench-jobs.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-jobs-out}
mkdir -p "$out"
eval "$(scripts/provision.sh)"
if [ -z "${TXFUZZ_BIN:-}" ]; then
    cargo build --release --quiet
fi
bin=${TXFUZZ_BIN:-target/release/txfuzz}
mysql_url=$TXFUZZ_MYSQL_URL
pg_url=$TXFUZZ_PG_URL
runs=(
    "sqlite|1000|"
    "mariadb|400|--db $mysql_url"
    "postgres|300|--db $pg_url"
)
for run in "${runs[@]}"; do
    IFS='|' read -r name tests db <<<"$run"
    for jobs in 1 2 4 8; do
        dir="$out/$name-j$jobs"
        rm -rf "$dir"
        # shellcheck disable=SC2086
        "$bin" run $db --tests "$tests" --seed 7 --jobs "$jobs" --out "$dir" --quiet \
            >"$dir.log" 2>&1 || [ $? -eq 1 ]
    done
done
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
phases = ["execute", "wss", "sdg", "view", "fidelity", "graph", "generate", "record"]
print("| engine | jobs | cases | cases/s | transactions/hour | " + " | ".join(f"{p} ms" for p in phases) + " |")
print("|---|---|---|---|---|" + "---|" * len(phases))
for name in ["sqlite", "mariadb", "postgres"]:
    for jobs in [1, 2, 4, 8]:
        s = json.loads((out / f"{name}-j{jobs}" / "summary.json").read_text())
        per = [f"{s['phase_s'].get(p, 0) * 1000 / max(s['cases'], 1):.2f}" for p in phases]
        print(f"| {name} | {jobs} | {s['cases']} | {s['cases_per_s']:.1f} | {s['transactions_per_hour']:,.0f} | " + " | ".join(per) + " |")
PY
