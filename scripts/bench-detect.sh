#!/usr/bin/env bash
# Detection speed: for every live bug class txfuzz knows on a local engine
# (each known-issues.toml entry, plus --known files, whose engine, version and
# settings the campaign has), run default campaigns with several seeds until
# each class was found (`txfuzz run --until-known all`) or the time limit, and
# print per class: seeds that found it, median and worst seconds and cases to
# its first finding. A Markdown table for BENCHMARKS.md.
#
#   scripts/bench-detect.sh [--seeds N] [--limit DURATION] [--out DIR]
#                           [--cases N1,N2,...] [--known FILE]... [CONFIG...]
#
# --cases gives each seed (1, 2, ...) a budget of cases instead of a time
# limit: the cases of a seed do not depend on the machine's speed, so two
# binaries compare case for case on a machine whose speed varies (BENCHMARKS.md
# "Key moves behind a locked row" and later sections).
#
# CONFIG (default: sqlite mariadb mariadb-si, plus turso turso-mvcc in a build
# with the `turso` feature):
#   sqlite       embedded SQLite, the default campaign
#   mariadb      MariaDB (scripts/provision.sh), the default campaign
#   mariadb-si   MariaDB, sessions drawing innodb_snapshot_isolation=ON,OFF
#   postgres     PostgreSQL, the default campaign
#   turso        turso (one writer at a time), turso-mvcc: its MVCC mode
#   NAME='URL [run flags]'  any other campaign, e.g. 'mine=mysql://u@h:3306/db --isolation read-committed'
# TXFUZZ_BIN=path measures another binary (default: a release build, with
# the turso feature when a turso config is asked for).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=5
limit=10m
out=bench-detect-out
known=()
configs=()
cases=""
while [ $# -gt 0 ]; do
    case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --known) known+=(--known "$2"); shift 2 ;;
    -h | --help) sed -n '2,28p' "$0"; exit 0 ;;
    -*) echo "bench-detect: unknown option $1" >&2; exit 2 ;;
    *) configs+=("$1"); shift ;;
    esac
done
budgets=()
if [ -n "$cases" ]; then
    IFS=, read -r -a budgets <<<"$cases"
    seeds=${#budgets[@]}
    limit="the budget"
fi
features=()
if [ ${#configs[@]} -eq 0 ]; then
    configs=(sqlite mariadb mariadb-si)
fi
for c in "${configs[@]}"; do
    case "$c" in turso | turso-mvcc) features=(--features turso) ;; esac
done
needs_servers=0
for c in "${configs[@]}"; do
    case "$c" in sqlite | turso | turso-mvcc) ;; *) needs_servers=1 ;; esac
done
if [ $needs_servers = 1 ]; then
    eval "$(scripts/provision.sh)"
fi
if [ -z "${TXFUZZ_BIN:-}" ]; then
    cargo build --release --quiet "${features[@]}"
fi
bin=${TXFUZZ_BIN:-target/release/txfuzz}
mkdir -p "$out"
for c in "${configs[@]}"; do
    case "$c" in
    sqlite) name=sqlite; args="" ;;
    mariadb) name=mariadb; args="--db $TXFUZZ_MYSQL_URL" ;;
    mariadb-si) name=mariadb-si; args="--db $TXFUZZ_MYSQL_URL --setting innodb_snapshot_isolation=ON,OFF" ;;
    postgres) name=postgres; args="--db $TXFUZZ_PG_URL" ;;
    turso) name=turso; args="--db turso:" ;;
    turso-mvcc) name=turso-mvcc; args="--db turso-mvcc:" ;;
    *=*) name=${c%%=*}; args="--db ${c#*=}" ;;
    *) echo "bench-detect: unknown config '$c'" >&2; exit 2 ;;
    esac
    for seed in $(seq 1 "$seeds"); do
        dir="$out/$name-s$seed"
        rm -rf "$dir"
        budget=(--time "$limit")
        if [ -n "$cases" ]; then
            budget=(--tests "${budgets[$((seed - 1))]}")
        fi
        echo "$name seed $seed: up to ${budget[1]}" >&2
        rc=0
        # shellcheck disable=SC2086
        "$bin" run $args "${budget[@]}" --seed "$seed" --until-known all \
            "${known[@]}" --out "$dir" --quiet >"$dir.log" 2>&1 || rc=$?
        if [ $rc -gt 1 ]; then
            # No class to look for (or a usage error): said once per config.
            echo "$name: $(tail -1 "$dir.log")" >&2
            echo "$rc" >"$dir.skipped"
            break
        fi
    done
done
python3 - "$out" "$limit" "${configs[@]}" <<'PY'
import json, sys, pathlib, statistics
out, limit, configs = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
print(f"| campaign | known issue | found (seeds) | median s | worst s | median cases | campaign cases/s |")
print("|---|---|---|---|---|---|---|")
for c in configs:
    name = c.split("=", 1)[0]
    runs = sorted(out.glob(f"{name}-s[0-9]*/summary.json"))
    if not runs:
        skipped = sorted(out.glob(f"{name}-s[0-9]*.log"))
        why = skipped[0].read_text().strip().splitlines()[-1] if skipped else "no run"
        print(f"| {name} | — ({why}) | | | | | |")
        continue
    sums = [json.loads(p.read_text()) for p in runs]
    rate = statistics.median(s["cases_per_s"] for s in sums)
    classes = sorted({k for s in sums for k in s.get("until_known", [])})
    for k in classes:
        firsts = [s.get("known_first", {}).get(k) for s in sums]
        found = [f for f in firsts if f]
        missed = len(firsts) - len(found)
        # A seed that never found it counts as the whole limit (worst: "> limit").
        secs = sorted([f["seconds"] for f in found] + [float("inf")] * missed)
        cases = sorted([f["cases"] for f in found] + [float("inf")] * missed)
        med = statistics.median_low(secs)
        medc = statistics.median_low(cases)
        fmt = lambda v, over: over if v == float("inf") else f"{v:,.0f}"
        print(f"| {name} | {k} | {len(found)}/{len(firsts)} | {fmt(med, '> ' + limit)} | {fmt(secs[-1], '> ' + limit)} | {fmt(medc, '—')} | {rate:.1f} |")
PY
