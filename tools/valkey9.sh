#!/usr/bin/env bash
# Builds valkey-server 9.x once, from Debian's source package in the unstable suite (no
# Valkey 9 is packaged for Debian 12), and keeps it in a cache folder: a second run finds it
# there and builds nothing. Its last line of output is the binary's path; npm test looks
# for it there (or at $VALKEY9_SERVER) and runs the Valkey 9 tests when it is present.
#
#   tools/valkey9.sh            build if needed, print the path
#   VALKEY9_CACHE=<dir>         where to keep it (default ~/.cache/lockwarden/valkey9)
#
# Needs apt-get source (root, to add a deb-src entry for sid once), a C compiler and make.
set -euo pipefail
# shellcheck source=tools/debian-source.sh
. "$(dirname "$0")/debian-source.sh"

cache="${VALKEY9_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockwarden/valkey9}"
bin="$cache/valkey-server"

is_nine() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep ' v=9\.' >/dev/null; }

if is_nine "$bin"; then
  echo "$bin"
  exit 0
fi

need_build_tools valkey9.sh
fetch_debian_source valkey9.sh sid valkey
echo "valkey9.sh: building $src (a minute or two) ..." >&2
# The server alone, without TLS or systemd, with the allocator and Lua bundled in the source.
make -C "$src" -j"$(nproc)" BUILD_TLS=no USE_SYSTEMD=no valkey-server >"$work/build.log" 2>&1 \
  || { tail -40 "$work/build.log" >&2; echo "valkey9.sh: the build failed" >&2; exit 1; }
built="$src/src/valkey-server"
is_nine "$built" || { echo "valkey9.sh: the built server is not 9.x: $("$built" --version)" >&2; exit 1; }
mkdir -p "$cache"
cp "$built" "$bin.tmp"
mv "$bin.tmp" "$bin"
"$bin" --version >&2
echo "$bin"
