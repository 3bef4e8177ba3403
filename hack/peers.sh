#!/usr/bin/env bash
# The ecosystem's tools as test peers, built from their Go modules (hack/lib/peers.sh, versions in
# hack/versions.env), cached in ~/.cache/olm-rs/NAME-VERSION/bin.
#
#   hack/peers.sh build [NAME...]   build the peers (default: all) unless cached
#   hack/peers.sh path NAME         build NAME if needed and print the folder of its commands (last line)
#   hack/peers.sh version NAME      the pinned version of NAME
#   hack/peers.sh source NAME       build NAME if needed and print its module's folder (its deploy/, testdata)
#   hack/peers.sh image olm-v0      OLM v0's image for the full cluster (built without a container engine, like
#                                   hack/images.sh): localhost/olm-v0/olm:VERSION with /bin/olm, catalog,
#                                   package-server, cpb, opm and busybox (`cp`, `sh`), runnable as any UID, as
#                                   OLM's own image serves as its --util-image and --opmImage; prints the archive
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
  version)
    [ $# -eq 2 ] || { echo "usage: hack/peers.sh version NAME" >&2; exit 2; }
    peer_version "$2"
    ;;
  source)
    [ $# -eq 2 ] || { echo "usage: hack/peers.sh source NAME" >&2; exit 2; }
    peer_build "$2"
    (cd "$(dirname "$(peer_bin_dir "$2")")/module" && go list -m -f '{{.Dir}}' "$(peer_module "$2")")
    ;;
  image)
    [ "${2:-}" = olm-v0 ] || { echo "usage: hack/peers.sh image olm-v0" >&2; exit 2; }
    peer_build olm-v0; peer_build opm
    olm_bin=$(peer_bin_dir olm-v0); opm_bin=$(peer_bin_dir opm)
    archive="$(dirname "$olm_bin")/olm.oci.tar"
    if [ ! -f "$archive" ] || [ "$archive" -ot "$olm_bin/olm" ] || [ "$archive" -ot "$opm_bin/opm" ]; then
      dpkg -s busybox-static >/dev/null 2>&1 ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >&2
      args=(--name "localhost/olm-v0/olm:$OLM_V0_VERSION" --out "$archive.tmp" --env PATH=/bin
        --file /bin/busybox:/bin/busybox --symlink /bin/cp:busybox --symlink /bin/sh:busybox --dir /tmp
        --file "$opm_bin/opm:/bin/opm" --with-libs /bin/opm --user 65532:65532)
      for c in olm catalog package-server cpb; do args+=(--file "$olm_bin/$c:/bin/$c"); done
      python3 hack/images/mkoci.py "${args[@]}" >&2
      mv "$archive.tmp" "$archive"
      log "OLM $OLM_V0_VERSION image: $archive"
    fi
    echo "$archive"
    ;;
  *) echo "usage: hack/peers.sh build [NAME...] | path NAME | version NAME | source NAME | image olm-v0" >&2; exit 2 ;;
esac
