#!/bin/sh
# dist/install-deps.sh - install the Debian packages folio builds, tests and
# benchmarks with.  Run as root (or with sudo available).  CI runs it too.
set -eu

PACKAGES="
    build-essential autoconf automake libtool pkg-config
    libevent-dev libmsgpack-dev liblmdb-dev libdivsufsort-dev check
    libjansson-dev libedit-dev
    libdw-dev zlib1g-dev libunwind-dev
    golang-go google-perftools
    curl jq
    mandoc cscope universal-ctags
    systemd strace procps linux-perf
    prometheus chromium
    python3 python3-pynvim
    clang libclang-rt-14-dev valgrind
    redis-server redis-tools memcached
    libpq-dev libssl-dev postgresql haproxy socat rsync
    hey wrk nginx jmeter jmeter-http openjdk-17-jdk-headless
"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "run as root or install sudo" >&2; exit 1; }
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# shellcheck disable=SC2086
$SUDO apt-get install -y --no-install-recommends $PACKAGES
