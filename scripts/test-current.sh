#!/usr/bin/env bash
# The server tests again against the servers users run today (MySQL 9.7,
# MariaDB 11.8, PostgreSQL 18; scripts/provision-current.sh starts them): the
# same test binaries with the suite's server URL pointed at each. Prints, per
# server, its version and how many tests ran (none may skip:
# TXFUZZ_REQUIRE_SERVERS=1 makes a skip a failure). Called by scripts/test.sh
# after the suite has run against the host's MariaDB 10.11 and PostgreSQL 15.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/provision-current.sh)"
export TXFUZZ_REQUIRE_SERVERS=1

# The test files each server runs: every file whose MySQL/MariaDB tests
# pass there as written. Left out on MySQL 9.7: files of MariaDB-only facts
# (innodb_snapshot_isolation, REPLACE run in place, MariaDB's query bugs and
# error texts: mariadb, mariadb_bugs, noop_update, query_bugs, shadow,
# session_settings, hermitage_si, verdicts). Left out on MariaDB 11.8: files
# whose tests assume 10.11's innodb_snapshot_isolation=OFF at REPEATABLE READ
# (they would need the session setting made explicit).
MYSQL97_TESTS=(hermitage start_modes view_servers integrity record_identity subqueries
    mixed_levels sdg_oracle insert_select auto_key secrets pattern reduce resumed_scan mysql_family
    hostile_input)
MARIADB118_TESTS=(mariadb_bugs start_modes insert_select auto_key query_bugs verdicts secrets
    hermitage_si mysql_family)
# PostgreSQL 18 runs with MySQL 9.7 (TXFUZZ_PG_URL): the PostgreSQL tests of
# the files above, and these.
PG18_TESTS=(postgres export_isolation)

# run NAME VARIABLE URL TESTS...: the test files with VARIABLE=URL.
run() {
    local name=$1 var=$2 url=$3; shift 3
    local args=() t log
    for t in "$@"; do args+=(--test "$t"); done
    log=$(mktemp)
    echo "scripts/test-current.sh: $name: $*" >&2
    if ! env "$var=$url" cargo test --features turso "${args[@]}" >"$log" 2>&1; then
        cat "$log" >&2
        echo "scripts/test-current.sh: $name: FAILED" >&2
        exit 1
    fi
    local passed skipped
    passed=$(grep -Eo '[0-9]+ passed' "$log" | awk '{s += $1} END {print s + 0}')
    skipped=$(grep -c '^SKIPPED' "$log" || true)
    echo "scripts/test-current.sh: $name: $passed tests passed, $skipped skipped" >&2
    rm -f "$log"
}

my_version() { mariadb --protocol=tcp -h127.0.0.1 -P"$1" -utxfuzz --skip-ssl -N -e 'SELECT VERSION()'; }
pg_version() { psql "$1" -Atc 'SHOW server_version'; }

port() { local p=${1##*:}; echo "${p%%/*}"; }
export TXFUZZ_PG_URL=$TXFUZZ_PG18_URL
run "MySQL $(my_version "$(port "$TXFUZZ_MYSQL97_URL")") and PostgreSQL $(pg_version "$TXFUZZ_PG18_URL")" \
    TXFUZZ_MYSQL_URL "$TXFUZZ_MYSQL97_URL" "${MYSQL97_TESTS[@]}" "${PG18_TESTS[@]}"
run "MariaDB $(my_version "$(port "$TXFUZZ_MARIADB118_URL")")" \
    TXFUZZ_MYSQL_URL "$TXFUZZ_MARIADB118_URL" "${MARIADB118_TESTS[@]}"
