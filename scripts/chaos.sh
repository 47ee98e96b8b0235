#!/usr/bin/env bash
# A campaign under faults (docs/reliability.md, "Chaos campaigns"): runs
# txfuzz for DURATION while this script freezes and kills what it runs against
# at random moments, then checks the output after `txfuzz report DIR`: every
# finding readable with its script, no temporary file left, summary.json's
# counts equal to the finding files, and
# (MariaDB) no private database left and innodb_status_output_locks back OFF.
#
#   scripts/chaos.sh mariadb    DURATION OUT [txfuzz run flags...]
#   scripts/chaos.sh turso-mvcc DURATION OUT [txfuzz run flags...]
#   scripts/chaos.sh check 0 OUT DIR...  (the checks alone, on earlier campaign
#                                         outputs; the log goes to OUT/chaos.log)
#
# mariadb: a private mariadbd of its own (temporary data directory, a free
#   port, 127.0.0.1 only) is frozen (SIGSTOP for 3-30 s, then SIGCONT) or
#   killed (SIGKILL, restarted 1-15 s later). One campaign runs throughout.
# turso-mvcc: the engine is embedded, so the process that holds it is the
#   target: txfuzz itself is frozen (SIGSTOP/SIGCONT) or killed (SIGKILL);
#   after a kill a new campaign (the next seed) starts in OUT/segment-N and
#   runs for the time left.
# Faults come every 30-240 s (CHAOS_MIN_GAP / CHAOS_MAX_GAP override), drawn
# from CHAOS_SEED (default 1). The script only signals processes it started.
# Exit 0 when every check passed; each fault and check is logged to
# OUT/chaos.log.
set -euo pipefail

kind=${1:?usage: chaos.sh mariadb|turso-mvcc DURATION OUT [flags]}
duration=${2:?duration, e.g. 2h}
out=${3:?output directory}
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
txfuzz=${TXFUZZ_BIN:-$root/target/release/txfuzz}
min_gap=${CHAOS_MIN_GAP:-30}
max_gap=${CHAOS_MAX_GAP:-240}
RANDOM=${CHAOS_SEED:-1}
command -v python3 >/dev/null || { echo "chaos.sh needs python3" >&2; exit 2; }
[ -x "$txfuzz" ] || { echo "no txfuzz binary at $txfuzz (cargo build --release --features turso)" >&2; exit 2; }
mkdir -p "$out"
log="$out/chaos.log"
: >"$log"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$log" >&2; }
rand() { echo $(( $1 + RANDOM % ($2 - $1 + 1) )); }

seconds() { # 90, 90s, 20m, 2h
  case $1 in
    *h) echo $(( ${1%h} * 3600 ));; *m) echo $(( ${1%m} * 60 ));;
    *s) echo "${1%s}";; *) echo "$1";;
  esac
}
total=$(seconds "$duration")
end=$(( $(date +%s) + total ))

# ---- MariaDB: a private server -------------------------------------------
work=""
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill -CONT "$server_pid" 2>/dev/null || true
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  if [ -n "$work" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
mariadb_client() { mariadb --no-defaults -uroot -h127.0.0.1 -P"$port" -N -B -e "$1"; }
launch_mariadb() {
  mariadbd --no-defaults --user=root --skip-grant-tables --bind-address=127.0.0.1 \
    --innodb-buffer-pool-size=64M --datadir="$work/data" --port="$port" \
    --tmpdir="$work/tmp" --socket="$work/sock" --log-error="$work/error.log" \
    >/dev/null 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    mariadb_client "SELECT 1" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  note "the private server did not start"; return 1
}

# ---- the faults ------------------------------------------------------------
freezes=0 kills=0
fault() { # $1: the pid to freeze or kill; sets `killed` after a kill
  local pid=$1 pause
  killed=""
  if (( RANDOM % 2 )); then
    pause=$(rand 3 30)
    note "freeze pid $pid for ${pause}s"
    kill -STOP "$pid" 2>/dev/null || return 0
    sleep "$pause"
    kill -CONT "$pid" 2>/dev/null || true
    freezes=$((freezes + 1))
  else
    note "kill pid $pid"
    kill -9 "$pid" 2>/dev/null || return 0
    kills=$((kills + 1))
    killed=1
  fi
}

# Sleeps until the next fault, or returns 1 once `pid` has exited.
wait_gap() {
  local pid=$1 until=$(( $(date +%s) + $(rand "$min_gap" "$max_gap") ))
  while (( $(date +%s) < until )); do
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 1
  done
}

segments=()
case $kind in
  check)
    # scripts/chaos.sh check 0 OUT DIR...: only the checks, on earlier output.
    segments=("$@")
    ;;
  mariadb)
    work=$(mktemp -d /tmp/txfuzz-chaos.XXXXXX)
    mkdir -p "$work/tmp"
    mariadb-install-db --no-defaults --user=root --datadir="$work/data" \
      --tmpdir="$work/tmp" >/dev/null 2>&1
    port=$(free_port)
    launch_mariadb
    mariadb_client "CREATE DATABASE IF NOT EXISTS test"
    note "private MariaDB on 127.0.0.1:$port (pid $server_pid)"
    dir="$out/campaign"
    segments+=("$dir")
    "$txfuzz" run --db "mysql://root@127.0.0.1:$port/test" --time "${total}s" \
      --recover-wait 60s --out "$dir" -q "$@" >"$out/campaign.stdout" 2>"$out/campaign.stderr" &
    run=$!
    while wait_gap "$run"; do
      fault "$server_pid"
      if [ -n "$killed" ]; then
        wait "$server_pid" 2>/dev/null || true
        sleep "$(rand 1 15)"
        launch_mariadb
        note "restarted (pid $server_pid)"
      fi
    done
    set +e; wait "$run"; rc=$?; set -e
    note "campaign exit $rc"
    ;;
  turso-mvcc)
    n=0
    while (( $(date +%s) < end - 5 )); do
      n=$((n + 1))
      dir="$out/segment-$n"
      segments+=("$dir")
      left=$(( end - $(date +%s) ))
      "$txfuzz" run --db turso-mvcc: --seed "$n" --time "${left}s" --out "$dir" -q "$@" \
        >"$dir.stdout" 2>"$dir.stderr" &
      run=$!
      note "segment $n: pid $run for ${left}s"
      killed=""
      while wait_gap "$run"; do
        fault "$run"
        [ -z "$killed" ] || break
      done
      set +e; wait "$run"; rc=$?; set -e
      note "segment $n exit $rc${killed:+ (killed)}"
    done
    ;;
  *) echo "unknown kind $kind (mariadb or turso-mvcc)" >&2; exit 2;;
esac

# ---- the checks ------------------------------------------------------------
failed=0
for dir in "${segments[@]}"; do
  # What a user does next: the report, which first completes the summary and
  # scripts of a campaign killed before it could (src/campaign/repair.rs).
  "$txfuzz" report "$dir" >/dev/null 2>>"$log" || failed=1
  if ! python3 - "$dir" <<'EOF' 2>&1 | tee -a "$log"
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
bad = []
tmp = [str(p) for p in d.rglob("*.tmp")]
if tmp:
    bad.append(f"temporary files left: {tmp}")
summary = json.loads((d / "summary.json").read_text())
files = sorted((d / "findings").glob("*.json")) if (d / "findings").exists() else []
for f in files:
    try:
        rec = json.loads(f.read_text())
        rec["finding"]["oracle"], rec["case"], rec["history"]
    except Exception as e:
        bad.append(f"unreadable finding {f}: {e}")
    if not f.with_suffix(".sql").exists():
        bad.append(f"finding without its script: {f}")
listed = sorted(pathlib.Path(p).name for p in summary["finding_files"])
on_disk = sorted(f.name for f in files)
if listed != on_disk:
    bad.append(f"summary lists {len(listed)} finding(s), {len(on_disk)} on disk: "
               f"{sorted(set(listed) ^ set(on_disk))[:5]}")
counted = sum(sum(k.values()) for k in summary["findings"].values())
if counted != len(on_disk):
    bad.append(f"summary counts {counted} finding(s), {len(on_disk)} on disk")
kinds = {}
for o, ks in summary["findings"].items():
    for k, n in ks.items():
        kinds[f"{o}:{k}"] = n
print(f"{d}: {summary['cases']} cases, {len(on_disk)} findings {kinds}, "
      f"stopped={summary.get('stopped')!r}: {'OK' if not bad else 'FAILED'}")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
  then failed=1; fi
done
if [ "$kind" = mariadb ]; then
  left_dbs=$(mariadb_client "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'txfuzz%'")
  locks=$(mariadb_client "SELECT @@GLOBAL.innodb_status_output_locks")
  note "private databases left: ${left_dbs:-none}; innodb_status_output_locks=$locks"
  [ -z "$left_dbs" ] || failed=1
  [ "$locks" = 0 ] || failed=1
fi
note "faults: $freezes freeze(s), $kills kill(s); segments: ${#segments[@]}; checks: $([ $failed = 0 ] && echo passed || echo FAILED)"
exit $failed
