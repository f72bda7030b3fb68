#!/usr/bin/env bash
# Installs everything encbench needs into ./.venv on a fresh Debian 12 machine (or reuses it).
# Usage: bash scripts/setup.sh [--test]   (--test also installs the test tools)
set -euo pipefail
cd "$(dirname "$0")/.."

apt_install() {
  echo "setup: installing $* with apt-get" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "$@" >/dev/null
}

if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  apt_install python3 python3-venv
fi
if [ ! -x .venv/bin/pip ]; then
  rm -rf .venv
  # Debian ships venv's pip bootstrap in a separate package (python3-venv)
  if ! python3 -m venv .venv 2>/dev/null; then
    rm -rf .venv
    apt_install python3-venv
    python3 -m venv .venv
  fi
fi
# --meter instructions counts instructions under valgrind's callgrind (run and selftest; the tests use it too)
command -v valgrind >/dev/null 2>&1 || apt_install valgrind
extras=""
# the MariaDB oltp workload drives sysbench (its OLTP scripts): wherever a MariaDB server is installed, and
# whenever setup installs one (--test; encbench's own install hint names sysbench beside mariadb-server)
if { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; } && ! command -v sysbench >/dev/null 2>&1; then
  apt_install sysbench
fi
if [ "${1:-}" = "--test" ]; then
  extras="[test]"
  # the PostgreSQL tests start a real private server: they need its binaries (and pgbench)
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt_install postgresql
  fi
  # the MariaDB tests start a real private server too (and run mariadb-backup)
  if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ] || ! command -v mariadb-backup >/dev/null 2>&1; then
    apt_install mariadb-server mariadb-backup sysbench
  fi
  # the CPU profiles (perf), the raw references (openssl speed), the HTML report's render test (chromium)
  missing=()
  command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  # the native storm clients: a small C/libpq driver built on first use, and the mariadb client
  command -v cc >/dev/null 2>&1 || missing+=(gcc)
  [ -f /usr/include/postgresql/libpq-fe.h ] || missing+=(libpq-dev)
  command -v mariadb >/dev/null 2>&1 || missing+=(mariadb-client)
  # the MariaDB oltp workload's driver
  command -v sysbench >/dev/null 2>&1 || missing+=(sysbench)
  # the encrypted-filesystem layer (host/encfs): loop ext4 images, fscrypt, gocryptfs over FUSE
  command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.ext4 ] || missing+=(e2fsprogs)
  command -v fscrypt >/dev/null 2>&1 || missing+=(fscrypt)
  command -v gocryptfs >/dev/null 2>&1 || missing+=(gocryptfs)
  command -v fusermount3 >/dev/null 2>&1 || missing+=(fuse3)
  if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}"
  fi
fi
.venv/bin/python -m pip install --disable-pip-version-check -q -e ".${extras}"
echo "setup: ready ($(.venv/bin/encbench --version))" >&2
