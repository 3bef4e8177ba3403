#!/usr/bin/env bash
# Install olm-rs VERSION into the cluster kubectl points at, or upgrade it to VERSION: apply crds.yaml, wait
# until every CRD is Established, apply olm-rs.yaml (server-side, taking over fields another manager set), wait
# until every Deployment in it (olm-operator, catalog-operator, package-server, the default catalog's registry when
# it has one) has rolled out and
# the PackageManifest APIService is Available. Re-running it is harmless; with a newer VERSION it upgrades
# olm-rs in place (operators olm-rs installed keep running: their Deployments are not touched).
#
#   install.sh VERSION
#
# The assets are read from $OLM_RS_RELEASE_BASE/VERSION/ (a folder, or an http(s) URL fetched with curl); the
# default is the folder this script's release folder sits in (hack/release.sh writes dist/VERSION/).
# KUBECTL names the kubectl to use (default: `kubectl` on PATH); OLM_RS_INSTALL_TIMEOUT the seconds to wait for
# each step (default 300).
set -euo pipefail
VERSION=${1:?usage: install.sh VERSION}
HERE=$(cd "$(dirname "$0")" && pwd)
BASE=${OLM_RS_RELEASE_BASE:-$(dirname "$HERE")}
KUBECTL=${KUBECTL:-kubectl}
TIMEOUT=${OLM_RS_INSTALL_TIMEOUT:-300}
NS=olm
log() { echo "install.sh: $*" >&2; }

assets=$(mktemp -d)
trap 'rm -rf "$assets"' EXIT
for f in crds.yaml olm-rs.yaml; do
  case "$BASE" in
    http://*|https://*) curl -fsSL "$BASE/$VERSION/$f" -o "$assets/$f" ;;
    *) cp "$BASE/$VERSION/$f" "$assets/$f" ;;
  esac
done

t0=$(date +%s)
log "olm-rs $VERSION: applying the CRDs"
"$KUBECTL" apply --server-side --force-conflicts -f "$assets/crds.yaml" >/dev/null
"$KUBECTL" wait --for=condition=Established --timeout="${TIMEOUT}s" -f "$assets/crds.yaml" >/dev/null
log "CRDs Established; applying olm-rs.yaml"
"$KUBECTL" apply --server-side --force-conflicts -f "$assets/olm-rs.yaml" >/dev/null
mapfile -t deployments < <("$KUBECTL" get -f "$assets/olm-rs.yaml" -o name | grep '^deployment')
for d in "${deployments[@]}"; do
  "$KUBECTL" -n "$NS" rollout status "$d" --timeout="${TIMEOUT}s" >&2
done
"$KUBECTL" wait --for=condition=Available --timeout="${TIMEOUT}s" apiservice/v1.packages.operators.coreos.com >/dev/null
log "olm-rs $VERSION ready in $(( $(date +%s) - t0 )) s: Deployments rolled out, APIService Available"
