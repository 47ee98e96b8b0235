# Shell helpers the provisioning scripts share (sourced, not run).

# wait_for SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds;
# fails after SECONDS.
wait_for() {
    local n=$(( $1 * 10 )); shift
    for _ in $(seq "$n"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    return 1
}

# apt_get_install PACKAGES...: Debian's packages on this machine (one
# `apt-get update` per script run).
apt_get_install() {
    if [ -z "${APT_UPDATED:-}" ]; then
        apt-get update -qq >&2
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}
