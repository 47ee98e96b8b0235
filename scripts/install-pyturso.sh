#!/usr/bin/env bash
# Makes python3 (the SQLite scripts' interpreter) and turso's Python module (PyPI `pyturso`, the version Cargo.toml pins
# for the `turso` crate: the same engine) available for the exported-script
# tests (tests/export_script.rs) in a virtual environment under target/, and
# prints the interpreter to use as a shell assignment:
#   eval "$(scripts/install-pyturso.sh)"
# Idempotent. Exits non-zero, loudly, when it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "install-pyturso: $*" >&2; }

version=$(sed -n 's/^turso = { version = "=\([0-9.]*\)".*/\1/p' Cargo.toml)
[ -n "$version" ] || { log "no pinned turso version in Cargo.toml"; exit 1; }
venv="target/pyturso-$version"
python="$PWD/$venv/bin/python"
if ! "$python" -c 'import turso' >/dev/null 2>&1; then
    if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            log "installing Debian's python3 and python3-venv"
            apt-get update -qq >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >&2
        else
            log "python3 with venv is missing (Debian packages python3, python3-venv)"
            exit 1
        fi
    fi
    log "installing pyturso==$version into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$python" -m pip install -q "pyturso==$version" >&2
    "$python" -c 'import turso' || { log "pyturso did not install"; exit 1; }
fi
echo "export TXFUZZ_PYTURSO='$python'"
