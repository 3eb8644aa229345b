# Sourced by the scripts that build a server from a Debian source package no Debian 12 suite
# ships as a binary (tools/valkey9.sh, tools/redis8.sh): the checks, the deb-src entry and the
# fetch they share. Not run by itself.

# need_build_tools <script>: stops when apt-get source or the compiler is missing.
need_build_tools() {
  local tool
  for tool in apt-get dpkg-source make cc; do
    command -v "$tool" >/dev/null || { echo "$1: $tool is missing (apt-get install build-essential dpkg-dev)" >&2; exit 1; }
  done
}

# fetch_debian_source <script> <suite> <package[=version]>: one deb-src entry for <suite>, in a
# list of its own (added once, as root), an update of that list alone, then the source package
# unpacked in a temporary folder that is removed when the script exits. Leaves the shell in
# that folder, with $src the unpacked tree and $work the folder.
fetch_debian_source() {
  local script="$1" suite="$2" package="$3"
  local list="/etc/apt/sources.list.d/lockwarden-$suite-src.sources"
  if [ ! -f "$list" ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "$script: run as root once, to add the deb-src entry for $suite ($list)" >&2
      exit 1
    fi
    printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' "Suites: $suite" 'Components: main' \
      'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' > "$list"
  fi
  apt-get update -qq -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cd "$work"
  echo "$script: fetching Debian's $package source package ..." >&2
  apt-get source -qq "$package" >&2
  src="$(find . -maxdepth 1 -type d -name "${package%%=*}-*" | head -1)"
  [ -n "$src" ] || { echo "$script: apt-get source $package unpacked nothing" >&2; exit 1; }
}
