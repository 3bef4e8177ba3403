#!/usr/bin/env bash
# Prints the folder of OLM's own published CRDs: the `crds/` of the Go module github.com/operator-framework/api at
# the version hack/versions.env pins (OLM_API_VERSION; the environment may override it), downloaded once through
# the Go module proxy and copied to $OLM_RS_CACHE/olm-api-<version>/crds (default ~/.cache/olm-rs), outside the
# clone. Only the CRD YAML files are copied; nothing of OLM enters the repository.
#
#   OLM_RS_CRDS=$(hack/olm-crds.sh) cargo test -p olm-tests --test csv_lifecycle
#   OLM_RS_CRDS=$(hack/olm-crds.sh) hack/quickstart.sh
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
pinned=$(sed -n 's/^OLM_API_VERSION=//p' "$REPO/hack/versions.env")
VERSION=${OLM_API_VERSION:-$pinned}
[ -n "$VERSION" ] || { echo "olm-crds: no OLM_API_VERSION in hack/versions.env" >&2; exit 1; }
DEST="${OLM_RS_CACHE:-$HOME/.cache/olm-rs}/olm-api-$VERSION/crds"
if [ ! -f "$DEST/.complete" ]; then
  command -v go >/dev/null || { echo "olm-crds: needs the go command" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # A throwaway module: `go mod download` of a module version outside a module needs one.
  (cd "$work" && go mod init olm-rs.local/olm-crds >/dev/null 2>&1 &&
    go mod download -json "github.com/operator-framework/api@$VERSION") >"$work/download.json"
  src=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$work/download.json")
  [ -d "$src/crds" ] || { echo "olm-crds: no crds/ in github.com/operator-framework/api@$VERSION" >&2; cat "$work/download.json" >&2; exit 1; }
  rm -rf "$DEST"
  mkdir -p "$DEST"
  cp "$src"/crds/*.yaml "$DEST/"
  chmod u+w "$DEST"/*.yaml
  touch "$DEST/.complete"
fi
echo "$DEST"
