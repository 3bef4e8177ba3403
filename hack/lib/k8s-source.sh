# Build Kubernetes 1.20.2 binaries from Debian's `kubernetes` source package into $BIN_CACHE, once (sourced by
# hack/control-plane.sh and hack/full-cluster.sh; needs CACHE, BIN_CACHE, log, apt_install, ensure_deb_src).
# The two known defects of that tree under Go >= 1.16/1.18 are patched before building (see
# ../shared/docs/local-control-plane.md): the reflect2 1.0.1 crash, and empty strings rejected by CRD validation.

# k8s_build_binaries NAME...   e.g. kube-apiserver kube-controller-manager, or kubelet kube-scheduler
k8s_build_binaries() {
  local missing=() name
  for name in "$@"; do [ -x "$BIN_CACHE/$name" ] || missing+=("$name"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local lock="$CACHE/k8s-build.lock"; mkdir -p "$CACHE"
  exec 9>"$lock"; flock 9
  missing=()
  for name in "$@"; do [ -x "$BIN_CACHE/$name" ] || missing+=("$name"); done
  if [ ${#missing[@]} -eq 0 ]; then exec 9>&-; return 0; fi
  local what=""; for name in "${missing[@]}"; do what="$what cmd/$name"; done
  log "building${what} 1.20.2 from Debian's source package (one time; kube-apiserver ~10-15 min, kubelet ~2 min)"
  apt_install golang-go rsync make dpkg-dev golang-github-modern-go-reflect2-dev
  ensure_deb_src
  local src="$CACHE/k8s-src"; rm -rf "$src"; mkdir -p "$src"
  ( cd "$src" && apt-get source --download-only -qq kubernetes >&2 )
  local orig; orig=$(ls "$src"/kubernetes_*.orig.tar.gz | head -1)
  mkdir -p "$src/tree"; tar xzf "$orig" -C "$src/tree" --strip-components=1
  local tree="$src/tree"
  # 1. reflect2 1.0.1 crashes under Go >= 1.18: use Debian's 1.0.2.
  rm -rf "$tree/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$tree/vendor/github.com/modern-go/reflect2"
  # 2. Empty strings rejected by CRD schema validation under Go >= 1.16 (kubernetes#99804).
  for f in "$tree/vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go" "$tree/vendor/github.com/go-openapi/validate/type.go"; do
    [ -f "$f" ] && sed -i 's/data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data))/data == nil/g' "$f"
  done
  mkdir -p "$tree/.go/src/k8s.io"; ln -sfn "$tree" "$tree/.go/src/k8s.io/kubernetes"
  ( cd "$tree/.go/src/k8s.io/kubernetes" && GOPATH="$tree/.go" GO111MODULE=off GOFLAGS=-mod=vendor CGO_ENABLED=0 GOCACHE="$CACHE/go-build" \
      make WHAT="${what# }" >&2 ) \
    || ( cd "$tree/.go/src/k8s.io/kubernetes" && GOPATH="$tree/.go" CGO_ENABLED=0 GOCACHE="$CACHE/go-build" \
      make WHAT="${what# }" >&2 )
  mkdir -p "$BIN_CACHE"
  for name in "${missing[@]}"; do cp "$tree/_output/local/bin/linux/amd64/$name" "$BIN_CACHE/"; done
  rm -rf "$src"
  exec 9>&-
  log "cached${what} in $BIN_CACHE"
}
