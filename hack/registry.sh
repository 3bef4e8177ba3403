#!/usr/bin/env bash
# The local OCI registry alone (hack/control-plane.sh `up` starts it too, and `down` stops it):
#
#   hack/registry.sh up       start (or reuse) docker-registry on 127.0.0.1:${OLM_RS_REGISTRY_PORT:-25000}
#   hack/registry.sh down     stop it (its storage stays in ~/.cache/olm-rs/registry)
#   hack/registry.sh status   say whether it runs
#   hack/registry.sh addr     print host:port
set -euo pipefail
CACHE="${OLM_RS_CACHE:-$HOME/.cache/olm-rs}"
log() { echo "registry: $*" >&2; }
# shellcheck source=hack/lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
# shellcheck source=hack/lib/registry.sh
. "$(dirname "$0")/lib/registry.sh"
case "${1:-up}" in
  up) registry_up; echo "$REGISTRY_ADDR" ;;
  down) registry_down; log "down" ;;
  status) if registry_alive; then echo "registry running (pid $(cat "$REGISTRY_DIR/registry.pid")) at $REGISTRY_ADDR"; else echo "registry stopped"; fi ;;
  addr) echo "$REGISTRY_ADDR" ;;
  *) echo "usage: $0 up|down|status|addr" >&2; exit 2 ;;
esac
