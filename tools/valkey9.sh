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

cache="${VALKEY9_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockwarden/valkey9}"
bin="$cache/valkey-server"

is_nine() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -q ' v=9\.'; }

if is_nine "$bin"; then
  echo "$bin"
  exit 0
fi

for tool in apt-get dpkg-source make cc; do
  command -v "$tool" >/dev/null || { echo "valkey9.sh: $tool is missing (apt-get install build-essential dpkg-dev)" >&2; exit 1; }
done

# One deb-src entry for sid, in a list of its own, and an update of that list alone.
list=/etc/apt/sources.list.d/lockwarden-sid-src.sources
if [ ! -f "$list" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "valkey9.sh: run as root once, to add the deb-src entry for sid ($list)" >&2
    exit 1
  fi
  cat > "$list" <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
fi
apt-get update -qq -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "valkey9.sh: fetching Debian's valkey source package ..." >&2
apt-get source -qq valkey >&2
src="$(find . -maxdepth 1 -type d -name 'valkey-*' | head -1)"
[ -n "$src" ] || { echo "valkey9.sh: apt-get source valkey unpacked nothing" >&2; exit 1; }
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
