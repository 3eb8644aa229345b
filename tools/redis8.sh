#!/usr/bin/env bash
# Builds redis-server 8.6 once, from Debian's source package in the experimental suite (no
# Redis 8 is packaged for Debian 12), and keeps it in a cache folder: a second run finds it
# there and builds nothing. Its last line of output is the binary's path; npm run test:matrix
# looks for it there (or at $REDIS8_SERVER) and runs its Redis 8.6 leg when it is present.
#
#   tools/redis8.sh             build if needed, print the path
#   REDIS8_CACHE=<dir>          where to keep it (default ~/.cache/lockwarden/redis8)
#
# Built with TLS, because the TLS tests run on it too, so it needs libssl-dev (installed here
# when missing and run as root). The one binary serves single servers and cluster nodes alike
# (cluster mode is a config switch). redis-cli is not built: the harness talks to the servers
# through ioredis, and creates Clusters with Debian's redis-cli, whose 7.0 speaks to 8.6 too.
#
# Needs apt-get source (root, to add a deb-src entry for experimental once), a C compiler and
# make.
set -euo pipefail
# shellcheck source=tools/debian-source.sh
. "$(dirname "$0")/debian-source.sh"

version=8.6.3
cache="${REDIS8_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockwarden/redis8}"
bin="$cache/redis-server"

is_eight() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep ' v=8\.6\.' >/dev/null; }
# Built with BUILD_TLS=yes, the server links OpenSSL: a cached build without it is rebuilt.
# grep reads all of ldd's output: with -q it would stop at the first match, and ldd, cut off,
# would fail the pipe (pipefail), calling a TLS build one without.
has_tls() { ldd "$1" 2>/dev/null | grep 'libssl\.so' >/dev/null; }

if is_eight "$bin" && has_tls "$bin"; then
  echo "$bin"
  exit 0
fi

need_build_tools redis8.sh

# TLS needs OpenSSL's headers.
if ! dpkg-query -W -f='${Status}' libssl-dev 2>/dev/null | grep -q 'install ok installed'; then
  if [ "$(id -u)" != 0 ]; then
    echo "redis8.sh: libssl-dev is missing (apt-get install libssl-dev, as root)" >&2
    exit 1
  fi
  echo "redis8.sh: installing libssl-dev with apt-get ..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libssl-dev >&2
fi

fetch_debian_source redis8.sh experimental "redis=5:$version-1"
echo "redis8.sh: building $src with TLS (a few minutes) ..." >&2
# The server alone, with TLS linked in and without systemd, with the allocator and Lua bundled
# in the source.
make -C "$src" -j"$(nproc)" BUILD_TLS=yes USE_SYSTEMD=no redis-server >"$work/build.log" 2>&1 \
  || { tail -40 "$work/build.log" >&2; echo "redis8.sh: the build failed" >&2; exit 1; }
built="$src/src/redis-server"
is_eight "$built" || { echo "redis8.sh: the built server is not 8.6: $("$built" --version)" >&2; exit 1; }
has_tls "$built" || { echo "redis8.sh: the built server has no TLS" >&2; exit 1; }
mkdir -p "$cache"
cp "$built" "$bin.tmp"
mv "$bin.tmp" "$bin"
"$bin" --version >&2
echo "$bin"
