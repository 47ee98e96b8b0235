#!/usr/bin/env bash
# Makes the engines users run today reachable on loopback, each from Debian's
# own packages in a Debian root made with debootstrap (cached between runs),
# started with chroot on a port of its own, its own data directory, and
# stopped by PID (`stop`): the host's servers are never touched.
#
#   eval "$(scripts/provision-current.sh)"      # start what is not reachable
#   scripts/provision-current.sh stop           # stop what this script started
#
# Servers (root, port, URL variable):
#   MySQL 9.7        sid     3307  TXFUZZ_MYSQL97_URL   (mysql-server, Debian unstable)
#   MariaDB 11.8     trixie  3308  TXFUZZ_MARIADB118_URL (mariadb-server, Debian 13)
#   PostgreSQL 18    sid     5433  TXFUZZ_PG18_URL      (postgresql-18, Debian unstable)
# mysql-server and mariadb-server conflict, hence two roots. Prints the URLs
# as shell assignments; exits non-zero, loudly, when a server cannot be made
# reachable (server tests never skip silently). Needs root.
set -euo pipefail

ROOTS=${TXFUZZ_ROOTS:-/var/cache/txfuzz/roots}
MIRROR=${TXFUZZ_DEBIAN_MIRROR:-http://deb.debian.org/debian}
MYSQL97_PORT=${TXFUZZ_MYSQL97_PORT:-3307}
MARIADB118_PORT=${TXFUZZ_MARIADB118_PORT:-3308}
PG18_PORT=${TXFUZZ_PG18_PORT:-5433}
log() { echo "provision-current: $*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, starting servers)"

# wait_for, apt_get_install
. "$(dirname "$0")/lib.sh"

# The clients on the host talk to every server over TCP.
command -v mariadb >/dev/null 2>&1 || apt_get_install mariadb-client
command -v psql >/dev/null 2>&1 || apt_get_install postgresql-client

# make_root NAME SUITE PACKAGES...: a minbase Debian root with PACKAGES
# installed (no service started by their postinst), made once.
make_root() {
    local name=$1 suite=$2; shift 2
    local root=$ROOTS/$name
    if [ -f "$root/.txfuzz-ready" ] && [ "$(cat "$root/.txfuzz-ready")" = "$*" ]; then
        mount_proc "$root"; return 0
    fi
    command -v debootstrap >/dev/null 2>&1 || apt_get_install debootstrap
    if [ ! -x "$root/usr/bin/apt-get" ]; then
        log "debootstrap $suite into $root"
        mkdir -p "$root"
        debootstrap --variant=minbase "$suite" "$root" "$MIRROR" >&2 \
            || die "debootstrap $suite failed"
    fi
    # A minbase root has no /etc/hosts (mariadb-install-db needs localhost).
    [ -s "$root/etc/hosts" ] || printf '127.0.0.1 localhost\n::1 localhost\n' > "$root/etc/hosts"
    # Packages' postinst scripts must not start their service.
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
    chmod +x "$root/usr/sbin/policy-rc.d"
    mount_proc "$root"
    log "installing $* into $root"
    # The mirror's Release file of unstable may be past its Valid-Until date.
    chroot "$root" apt-get -o Acquire::Check-Valid-Until=false update -qq >&2 \
        || die "apt-get update in $root failed"
    DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq \
        --no-install-recommends "$@" >&2 || die "installing $* in $root failed"
    echo "$*" > "$root/.txfuzz-ready"
}

mount_proc() {
    mountpoint -q "$1/proc" || mount -t proc proc "$1/proc"
}

# start_server ROOT NAME COMMAND...: runs COMMAND in ROOT, in the
# background, its PID in $ROOTS/NAME.pid (the PID `stop` kills).
start_server() {
    local root=$1 name=$2; shift 2
    setsid chroot "$root" "$@" >"$ROOTS/$name.out" 2>&1 < /dev/null &
    echo $! > "$ROOTS/$name.pid"
}

# ----------------------------------------------------------- MySQL-family
# my_tcp PORT ARGS...: the host's client over TCP (the MariaDB client speaks
# to MySQL 9.7 too; its default auth plugin is caching_sha2_password only
# for accounts with a password).
my_tcp() { local port=$1; shift; mariadb --protocol=tcp -h127.0.0.1 -P"$port" --skip-ssl "$@"; }
my_up() { my_tcp "$1" -utxfuzz -e 'SELECT 1'; }

# my_account ROOT SOCKET CLIENT PORT: the password-less txfuzz user over
# TCP and the database `test`, made through the server's own socket.
my_account() {
    local root=$1 socket=$2 client=$3 port=$4
    chroot "$root" "$client" -uroot --socket="$socket" -e "
        CREATE USER IF NOT EXISTS 'txfuzz'@'127.0.0.1';
        CREATE USER IF NOT EXISTS 'txfuzz'@'localhost';
        GRANT ALL PRIVILEGES ON *.* TO 'txfuzz'@'127.0.0.1';
        GRANT ALL PRIVILEGES ON *.* TO 'txfuzz'@'localhost';
        CREATE DATABASE IF NOT EXISTS test;" >&2
    wait_for 10 my_up "$port" || die "txfuzz@127.0.0.1:$port is not reachable"
}

mysql97() {
    my_up "$MYSQL97_PORT" >/dev/null 2>&1 && return 0
    make_root sid sid mysql-server mysql-client postgresql-18
    local root=$ROOTS/sid
    mkdir -p "$root/run/mysqld" "$root/var/log/mysql"
    chroot "$root" chown mysql:mysql /run/mysqld /var/log/mysql
    if [ ! -d "$root/var/lib/mysql/mysql" ]; then
        chroot "$root" mysqld --initialize-insecure --user=mysql --datadir=/var/lib/mysql >&2
    fi
    log "starting MySQL 9.7 on 127.0.0.1:$MYSQL97_PORT"
    # A throwaway test server, configured as MariaDB's packages are: no
    # binary log (MySQL enables it by default since 8.0, MariaDB does not;
    # with binlog_format=ROW it changes no lock or isolation behaviour, and
    # each commit and DDL pays its fsync). BENCHMARKS.md has the difference.
    start_server "$root" mysql97 mysqld --user=mysql --port="$MYSQL97_PORT" \
        --bind-address=127.0.0.1 --mysqlx=OFF --socket=/run/mysqld/mysqld.sock \
        --log-error=/var/log/mysql/error.log --disable-log-bin
    wait_for 90 chroot "$root" mysql -uroot --socket=/run/mysqld/mysqld.sock -e 'SELECT 1' \
        || die "MySQL 9.7 did not start (see $root/var/log/mysql/error.log)"
    my_account "$root" /run/mysqld/mysqld.sock mysql "$MYSQL97_PORT"
}

mariadb118() {
    my_up "$MARIADB118_PORT" >/dev/null 2>&1 && return 0
    make_root trixie trixie mariadb-server mariadb-client
    local root=$ROOTS/trixie
    mkdir -p "$root/run/mysqld" "$root/var/log/mysql"
    chroot "$root" chown mysql:mysql /run/mysqld /var/log/mysql
    if [ ! -d "$root/var/lib/mysql/mysql" ]; then
        chroot "$root" mariadb-install-db --user=mysql --datadir=/var/lib/mysql >&2
    fi
    log "starting MariaDB 11.8 on 127.0.0.1:$MARIADB118_PORT"
    start_server "$root" mariadb118 mariadbd --user=mysql --port="$MARIADB118_PORT" \
        --bind-address=127.0.0.1 --socket=/run/mysqld/mysqld.sock \
        --log-error=/var/log/mysql/error.log
    wait_for 90 chroot "$root" mariadb -uroot --socket=/run/mysqld/mysqld.sock -e 'SELECT 1' \
        || die "MariaDB 11.8 did not start (see $root/var/log/mysql/error.log)"
    my_account "$root" /run/mysqld/mysqld.sock mariadb "$MARIADB118_PORT"
}

# ------------------------------------------------------------- PostgreSQL
PG_PASSWORD=pw-Quokka-81
pg18_up() {
    PGPASSWORD=$PG_PASSWORD psql -h127.0.0.1 -p"$PG18_PORT" -Upostgres -d test -Atc 'SELECT 1'
}

pg18() {
    pg18_up >/dev/null 2>&1 && return 0
    make_root sid sid mysql-server mysql-client postgresql-18
    local root=$ROOTS/sid
    mkdir -p "$root/run/postgresql"
    chroot "$root" chown postgres:postgres /run/postgresql
    [ -d "$root/var/lib/postgresql/18/main" ] \
        || chroot "$root" pg_createcluster 18 main >&2
    log "starting PostgreSQL 18 on 127.0.0.1:$PG18_PORT"
    start_server "$root" pg18 runuser -u postgres -- /usr/lib/postgresql/18/bin/postgres \
        -D /var/lib/postgresql/18/main -c config_file=/etc/postgresql/18/main/postgresql.conf \
        -c port="$PG18_PORT" -c listen_addresses=127.0.0.1 \
        -c logging_collector=on -c log_directory=/var/log/postgresql -c log_filename=pg18.log
    wait_for 60 chroot "$root" runuser -u postgres -- psql -p"$PG18_PORT" -Atc 'SELECT 1' \
        || die "PostgreSQL 18 did not start (see $ROOTS/pg18.out)"
    chroot "$root" runuser -u postgres -- psql -p"$PG18_PORT" -qc \
        "ALTER USER postgres PASSWORD '$PG_PASSWORD'" >&2
    chroot "$root" runuser -u postgres -- psql -p"$PG18_PORT" -Atc \
        "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
        || chroot "$root" runuser -u postgres -- psql -p"$PG18_PORT" -qc 'CREATE DATABASE test' >&2
    wait_for 10 pg18_up || die "postgres@127.0.0.1:$PG18_PORT is not reachable"
}

stop_all() {
    local name pid
    for name in mysql97 mariadb118 pg18; do
        [ -f "$ROOTS/$name.pid" ] || continue
        pid=$(cat "$ROOTS/$name.pid")
        # The PID is chroot's, which exec'd the server (or runuser, whose
        # child is postgres): stop the process group setsid made.
        kill -TERM -- "-$pid" 2>/dev/null || true
        for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        rm -f "$ROOTS/$name.pid"
        log "stopped $name"
    done
}

case "${1:-start}" in
    stop) stop_all; exit 0 ;;
    start) ;;
    *) die "usage: $0 [start|stop]" ;;
esac

mkdir -p "$ROOTS"
mysql97
mariadb118
pg18
echo "export TXFUZZ_MYSQL97_URL='mysql://txfuzz@127.0.0.1:$MYSQL97_PORT/test'"
echo "export TXFUZZ_MARIADB118_URL='mysql://txfuzz@127.0.0.1:$MARIADB118_PORT/test'"
echo "export TXFUZZ_PG18_URL='postgres://postgres:$PG_PASSWORD@127.0.0.1:$PG18_PORT/test'"
