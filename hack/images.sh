#!/usr/bin/env bash
# Container images of olm-rs, built WITHOUT a container engine: each is a single-layer OCI archive assembled from
# the release binary and the shared libraries `ldd` lists for it (glibc, libgcc_s, the loader), by
# hack/images/mkoci.py (Python stdlib only). Users with Docker can use the Dockerfile instead.
#
#   hack/images.sh          build every image into $OLM_RS_IMAGES (default ~/.cache/olm-rs/images/<profile>);
#                           an archive is kept while its recorded inputs are unchanged; print sizes
#   hack/images.sh sizes    print the sizes of the archives already built
#
# OLM_RS_IMAGE_PROFILE=release (default: what users deploy) or debug (the
# binaries `cargo build` already made, debug info stripped; hack/test.sh uses it to spare CI a release build).
# OLM_RS_IMAGES_NO_BUILD=1 skips the release `cargo build` and keeps the archives already built.
#
# OLM_RS_IMAGE_TAG=TAG tags them (default dev; hack/release.sh sets the release VERSION). Every image carries the
# OCI labels org.opencontainers.image.version (the tag), .revision (the git commit, "-dirty" when the tree has
# changes) and .source (OLM_RS_IMAGE_SOURCE, else the git remote `origin`, else the clone as a file:// URL), in
# its config and as manifest annotations.
#
# Images (tagged :dev unless OLM_RS_IMAGE_TAG says otherwise; deploy/ refers to :dev, override with kustomize `images:`):
#   localhost/olm-rs/olm-operator      olm-operator (release build)
#   localhost/olm-rs/catalog-operator  catalog-operator (release build)
#   localhost/olm-rs/package-server    package-server, the PackageManifest API (release build)
#   localhost/olm-rs/registry          `registry serve /catalog`, with deploy/samples/catalog baked in
#   localhost/olm-rs/test-operator     TEST ONLY: a tiny operator (static busybox httpd) for the full-cluster tests
#   localhost/olm-rs/test-webhook      TEST ONLY: admission + conversion webhook server (crate test-webhook), issue 14
#   localhost/olm-rs/pause             the pod sandbox of the local full cluster (hack/images/pause.c, static)
# Every image runs as 65532:65532 by default, also runs under any other UID (docs/pod-security.md), and needs
# nothing writable but what its pod mounts.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE="${OLM_RS_CACHE:-$HOME/.cache/olm-rs}"
PROFILE="${OLM_RS_IMAGE_PROFILE:-release}"
OUT="${OLM_RS_IMAGES:-$CACHE/images/$PROFILE}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/target}"
TAG="${OLM_RS_IMAGE_TAG:-dev}"
log() { echo "images: $*" >&2; }
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain 2>/dev/null)" ] || REVISION="$REVISION-dirty"
SOURCE="${OLM_RS_IMAGE_SOURCE:-$(git remote get-url origin 2>/dev/null || echo "file://$REPO")}"
LABELS=(--label "org.opencontainers.image.version=$TAG" --label "org.opencontainers.image.revision=$REVISION"
  --label "org.opencontainers.image.source=$SOURCE")

sizes() {
  for f in "$OUT"/*.oci.tar; do
    [ -f "$f" ] || continue
    printf '%-28s %8s archive  %8s unpacked\n' "$(basename "$f" .oci.tar)" "$(du -h --apparent-size "$f" | cut -f1)" \
      "$(tar -xOf "$f" index.json >/dev/null 2>&1 && python3 - "$f" <<'PY'
import json, sys, tarfile, gzip
t = tarfile.open(sys.argv[1])
idx = json.load(t.extractfile("index.json"))
man = json.load(t.extractfile("blobs/sha256/" + idx["manifests"][0]["digest"].split(":")[1]))
layer = man["layers"][0]["digest"].split(":")[1]
n = len(gzip.decompress(t.extractfile("blobs/sha256/" + layer).read()))
print(f"{n/1048576:.1f}M")
PY
)"
  done
}

# fresh IMAGE INPUT...: the archive exists and was built from exactly these inputs (path, size and mtime of every
# file, folders walked, plus mkoci.py) and labels (tag, revision, source), so archives from another target folder or an older build are never reused.
# When not fresh, the archive is removed and the new inputs recorded: if its build then fails, the missing
# archive makes the next run build it again.
fresh() {
  local image=$1; shift
  local archive="$OUT/$image.oci.tar" stamp="$OUT/$image.inputs"
  local now; now=$(printf '%s\n' "${LABELS[@]}"; find "$@" hack/images/mkoci.py -type f -printf '%p %s %T@\n' 2>/dev/null | sort)
  if [ -f "$archive" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$now" ]; then return 0; fi
  rm -f "$archive"
  printf '%s\n' "$now" > "$stamp"
  return 1
}

need() { command -v "$1" >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2; }; }

build() {
  need gcc gcc
  dpkg -s busybox-static >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >&2
  dpkg -s ca-certificates >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ca-certificates >&2
  mkdir -p "$OUT"
  local bin
  case "$PROFILE" in
    release)
      if [ -z "${OLM_RS_IMAGES_NO_BUILD:-}" ]; then
        log "release build of olm-operator, catalog-operator, package-server, registry (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
        cargo build --release --locked -p olm-operator -p catalog-operator -p package-server -p registry -p test-webhook >&2
      fi
      bin="$CARGO_TARGET_DIR/release" ;;
    debug)
      cargo build --locked --workspace --bins >&2   # the workspace's feature set: nothing rebuilt after hack/test.sh's build
      bin="$OUT/stripped"; mkdir -p "$bin"
      # Strip every time (a second or two) but keep the old file when identical, so its mtime, and the archive
      # built from it, stay valid; a binary from another target folder or build replaces it.
      for b in olm-operator catalog-operator package-server registry test-webhook; do
        strip --strip-debug -o "$bin/$b.new" "$CARGO_TARGET_DIR/debug/$b"
        if cmp -s "$bin/$b.new" "$bin/$b"; then rm -f "$bin/$b.new"; else mv "$bin/$b.new" "$bin/$b"; fi
      done ;;
    *) log "OLM_RS_IMAGE_PROFILE must be release or debug"; exit 2 ;;
  esac
  local common=(--user 65532:65532 --dir /tmp "${LABELS[@]}")
  # The operators speak HTTPS to registries (catalog and bundle images, package-server's image catalogs) and to
  # the API server: they carry the host's CA bundle where rustls-native-certs looks for it, as distroless images
  # do. Without it, no HTTPS registry can be reached (a RegistryClientError condition).
  local cas=/etc/ssl/certs/ca-certificates.crt
  for b in olm-operator catalog-operator package-server; do
    fresh "$b" "$bin/$b" "$cas" || python3 hack/images/mkoci.py --name "localhost/olm-rs/$b:$TAG" --out "$OUT/$b.oci.tar" \
      --file "$bin/$b:/usr/local/bin/$b" --with-libs "/usr/local/bin/$b" --file "$cas:$cas" \
      --entrypoint "/usr/local/bin/$b" --owned "/usr/local/bin/$b" --cmd run --port 8080 "${common[@]}"
  done
  fresh registry "$bin/registry" "$REPO/deploy/samples/catalog" \
    || python3 hack/images/mkoci.py --name "localhost/olm-rs/registry:$TAG" --out "$OUT/registry.oci.tar" \
    --file "$bin/registry:/usr/local/bin/registry" --with-libs /usr/local/bin/registry \
    --tree "$REPO/deploy/samples/catalog:/catalog" \
    --entrypoint /usr/local/bin/registry --cmd serve --cmd /catalog --port 50051 "${common[@]}"
  fresh test-webhook "$bin/test-webhook" \
    || python3 hack/images/mkoci.py --name "localhost/olm-rs/test-webhook:$TAG" --out "$OUT/test-webhook.oci.tar" \
    --file "$bin/test-webhook:/usr/local/bin/test-webhook" --with-libs /usr/local/bin/test-webhook \
    --entrypoint /usr/local/bin/test-webhook --port 9443 "${common[@]}"
  # The test operator: busybox's httpd serving a page, so its Deployment has a real readiness probe.
  if ! fresh test-operator /bin/busybox hack/images.sh; then
    local www; www=$(mktemp -d); echo "olm-rs test operator" > "$www/index.html"
    python3 hack/images/mkoci.py --name "localhost/olm-rs/test-operator:$TAG" --out "$OUT/test-operator.oci.tar" \
      --file /bin/busybox:/bin/busybox --tree "$www:/www" \
      --entrypoint /bin/busybox --cmd=httpd --cmd=-f --cmd=-p --cmd=8080 --cmd=-h --cmd=/www --port 8080 "${common[@]}"
    rm -rf "$www"
  fi
  if ! fresh pause hack/images/pause.c; then
    local pause; pause=$(mktemp -d)
    gcc -Os -static -o "$pause/pause" hack/images/pause.c
    python3 hack/images/mkoci.py --name "localhost/olm-rs/pause:$TAG" --out "$OUT/pause.oci.tar" \
      --file "$pause/pause:/pause" --entrypoint /pause --user 65535:65535 "${LABELS[@]}"
    rm -rf "$pause"
  fi
  log "archives in $OUT"
  sizes
}

case "${1:-build}" in
  build) build ;;
  sizes) sizes ;;
  *) echo "usage: $0 [build|sizes]" >&2; exit 2 ;;
esac
