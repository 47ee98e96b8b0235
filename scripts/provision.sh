#!/usr/bin/env bash
# Makes MariaDB and PostgreSQL reachable on loopback for the test suite and prints
# the URLs to use as shell assignments:
#   eval "$(scripts/provision.sh)"
# When a server is not reachable it is installed from Debian's packages (if
# missing) and started with its own data directory. Exits non-zero, loudly, when
# a server cannot be made reachable: server tests never skip silently.
set -euo pipefail

MYSQL_PORT=${TXFUZZ_MYSQL_PORT:-3306}
PG_PORT=${TXFUZZ_PG_PORT:-5432}
log() { echo "provision: $*" >&2; }

need_root() {
    if [ "$(id -u)" != 0 ]; then
        log "$1 needs root (apt-get / starting a server); run as root or start it yourself"
        exit 1
    fi
}

# wait_for, apt_get_install
. "$(dirname "$0")/lib.sh"

apt_install() {
    need_root "installing $*"
    apt_get_install "$@"
}

# ---------------------------------------------------------------- MariaDB
mysql_tcp() { mariadb --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" "$@"; }
mysql_up() { mysql_tcp -utxfuzz -e 'SELECT 1' || mysql_tcp -uroot -e 'SELECT 1'; }

if ! mysql_up >/dev/null 2>&1; then
    command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || apt_install mariadb-server mariadb-client
    need_root "starting MariaDB"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
    if [ ! -d /var/lib/mysql/mysql ]; then
        mariadb-install-db --user=mysql --datadir=/var/lib/mysql >&2
    fi
    log "starting MariaDB"
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql >&2
    wait_for 60 mariadb -uroot -e 'SELECT 1' || { log "MariaDB did not start"; exit 1; }
fi
# A password-less user reachable over TCP (Debian's root may use unix_socket auth).
if ! mysql_tcp -utxfuzz -e 'SELECT 1' >/dev/null 2>&1; then
    admin=(mariadb -uroot)
    mysql_tcp -uroot -e 'SELECT 1' >/dev/null 2>&1 && admin=(mysql_tcp -uroot)
    "${admin[@]}" -e "CREATE USER IF NOT EXISTS 'txfuzz'@'%';
        CREATE USER IF NOT EXISTS 'txfuzz'@'localhost';
        GRANT ALL PRIVILEGES ON *.* TO 'txfuzz'@'%';
        GRANT ALL PRIVILEGES ON *.* TO 'txfuzz'@'localhost';
        CREATE DATABASE IF NOT EXISTS test;" >&2
fi
mysql_tcp -utxfuzz -e 'CREATE DATABASE IF NOT EXISTS test' >&2 \
    || { log "MariaDB is not reachable as txfuzz@127.0.0.1:$MYSQL_PORT"; exit 1; }

# MariaDB's own test runner (mysql-test-run), for the exported tests
# (`txfuzz export --format mtr`; tests/export.rs runs them).
[ -f /usr/share/mysql/mysql-test/mariadb-test-run.pl ] || apt_install mariadb-test

# ------------------------------------------------------------- PostgreSQL
PG_PASSWORD=pw-Quokka-81
pg_up() { PGPASSWORD=$PG_PASSWORD psql -h127.0.0.1 -p"$PG_PORT" -Upostgres -d postgres -Atc 'SELECT 1'; }

if ! pg_up >/dev/null 2>&1; then
    command -v pg_ctlcluster >/dev/null 2>&1 || apt_install postgresql postgresql-client
    need_root "starting PostgreSQL"
    ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)
    if [ -z "$ver" ]; then
        ver=$(ls /usr/lib/postgresql | sort -V | tail -n1)
        pg_createcluster "$ver" main >&2
    fi
    log "starting PostgreSQL $ver"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 || true
    wait_for 60 runuser -u postgres -- psql -Atc 'SELECT 1' || { log "PostgreSQL did not start"; exit 1; }
    # Password authentication over TCP (Debian's default is scram-sha-256).
    runuser -u postgres -- psql -qc "ALTER USER postgres PASSWORD '$PG_PASSWORD'" >&2
fi
if ! PGPASSWORD=$PG_PASSWORD psql -h127.0.0.1 -p"$PG_PORT" -Upostgres -d test -Atc 'SELECT 1' >/dev/null 2>&1; then
    PGPASSWORD=$PG_PASSWORD psql -h127.0.0.1 -p"$PG_PORT" -Upostgres -d postgres -qc 'CREATE DATABASE test' >&2 \
        || { log "PostgreSQL is not reachable as postgres@127.0.0.1:$PG_PORT"; exit 1; }
fi

echo "export TXFUZZ_MYSQL_URL='mysql://txfuzz@127.0.0.1:$MYSQL_PORT/test'"
echo "export TXFUZZ_PG_URL='postgres://postgres:$PG_PASSWORD@127.0.0.1:$PG_PORT/test'"
