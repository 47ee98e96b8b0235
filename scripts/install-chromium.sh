#!/usr/bin/env bash
# Makes headless Chromium available for the HTML report test
# (tests/report.rs): installs Debian's `chromium` package when `chromium` is
# not on PATH. Idempotent. Exits non-zero, loudly, when it cannot.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: chromium is missing and cannot be installed here (needs root and apt-get)" >&2
    exit 1
fi
echo "install-chromium: installing Debian's chromium package" >&2
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
command -v chromium >/dev/null 2>&1 || { echo "install-chromium: chromium still missing" >&2; exit 1; }
