#!/usr/bin/env bash
# The ecosystem's tools as test peers, built from their Go modules (hack/lib/peers.sh, versions in
# hack/versions.env), cached in ~/.cache/olm-rs/NAME-VERSION/bin.
#
#   hack/peers.sh build [NAME...]   build the peers (default: all) unless cached
#   hack/peers.sh path NAME         build NAME if needed and print the folder of its commands (last line)
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${OLM_RS_CACHE:-$HOME/.cache/olm-rs}"
log() { echo "peers: $*" >&2; }
# shellcheck source=hack/lib/peers.sh
. hack/lib/peers.sh

case "${1:-}" in
  build)
    shift
    names=("$@"); [ ${#names[@]} -gt 0 ] || names=("${PEERS[@]}")
    for n in "${names[@]}"; do peer_build "$n"; done
    ;;
  path)
    [ $# -eq 2 ] || { echo "usage: hack/peers.sh path NAME" >&2; exit 2; }
    peer_build "$2"
    peer_bin_dir "$2"
    ;;
  *) echo "usage: hack/peers.sh build [NAME...] | path NAME" >&2; exit 2 ;;
esac
