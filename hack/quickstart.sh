#!/usr/bin/env bash
# The main job, on a fresh Debian machine: a real local control plane (etcd + kube-apiserver +
# kube-controller-manager on loopback, plus our node simulator), a real OCI registry (docker-registry on loopback),
# the sample catalog published there as bundle images plus a file-based catalog image that references them by
# digest (built and pushed by `olm-oci`, no container engine), both operators, package-server behind the API
# server's aggregation layer (`kubectl get packagemanifests`), a CatalogSource naming the catalog image (served
# in-process by catalog-operator, no registry pod), and a Subscription that installs a real operator (etcd) end to
# end from those images.
#
#   hack/quickstart.sh        bring everything up, install, print the result (everything keeps running)
#   hack/quickstart.sh down   stop the operators, the catalog server and the control plane
#
# The quick start has a control plane of its own (state in ~/.cache/olm-rs/quickstart, ports 24290/24300 for etcd,
# 26943 for kube-apiserver, 26757 for the controller manager, 25500 for the OCI registry), apart from the one the
# tests use (hack/test.sh): its operators never manage a test's objects, and both can run at once.
#
# OLM_RS_BIN_DIR=<dir> runs the binaries found there (olm-operator, catalog-operator, olm-oci, node-sim) instead of
# building debug ones (e.g. release binaries, or instrumented ones for profiling).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/olm-rs/target}"
export OLM_RS_CLUSTER_DIR="${OLM_RS_QUICKSTART_DIR:-${OLM_RS_CACHE:-$HOME/.cache/olm-rs}/quickstart}"
# Ports: each can be moved with OLM_RS_QUICKSTART_<NAME>_PORT (tests/tests/quickstart.rs runs a second quick start).
port() { local v="OLM_RS_QUICKSTART_$1_PORT"; echo "${!v:-$2}"; }
export OLM_RS_ETCD_PORT=$(port ETCD 24290) OLM_RS_ETCD_PEER_PORT=$(port ETCD_PEER 24300)
export OLM_RS_API_PORT=$(port API 26943) OLM_RS_KCM_PORT=$(port KCM 26757)
export OLM_RS_REGISTRY_PORT=$(port REGISTRY 25500) OLM_RS_REGISTRY_DIR="$OLM_RS_CLUSTER_DIR/registry"
OLM_PORT=$(port OLM 18080); CATALOG_PORT=$(port CATALOG 18081); PACKAGES_PORT=$(port PACKAGES 18443)
PACKAGES_HTTP_PORT=$(port PACKAGES_HTTP 18082) # package-server's health and metrics (its default, :8080, is OLM v0's)
STATE="$OLM_RS_CLUSTER_DIR"
RUN="$STATE/quickstart"
NS="${QUICKSTART_NAMESPACE:-etcd-demo}"
BIN="${OLM_RS_BIN_DIR:-$CARGO_TARGET_DIR/debug}"
log() { echo "== quickstart: $*" >&2; }

stop_ours() {
  for p in olm-operator catalog-operator package-server registry; do
    if [ -f "$RUN/$p.pid" ] && kill -0 "$(cat "$RUN/$p.pid")" 2>/dev/null; then kill "$(cat "$RUN/$p.pid")" || true; fi
    rm -f "$RUN/$p.pid"
  done
}

case "${1:-up}" in
  up) ;;
  down)
    stop_ours
    # The APIService goes first: left behind without its server, it would stall discovery on this plane.
    if [ -f "$STATE/kubeconfig" ] && eval "$(hack/control-plane.sh env 2>/dev/null)"; then
      kubectl delete apiservice v1.packages.operators.coreos.com --ignore-not-found --wait=false >/dev/null 2>&1 || true
    fi
    hack/control-plane.sh down; exit 0 ;;
  *) echo "usage: hack/quickstart.sh [up|down]" >&2; exit 2 ;;
esac

if [ -n "${OLM_RS_BIN_DIR:-}" ]; then
  log "using the binaries in $OLM_RS_BIN_DIR"
  hack/control-plane.sh build >/dev/null
else
  log "building the binaries (cached in $CARGO_TARGET_DIR)"
  hack/control-plane.sh build >/dev/null &
  k8s=$!
  cargo build --workspace --bins
  wait "$k8s"
fi
OLM_RS_NODE_SIM="$BIN/node-sim" hack/control-plane.sh up >/dev/null
eval "$(hack/control-plane.sh env)"   # KUBECONFIG, and our kubectl first on PATH
log "control plane up; KUBECONFIG=$KUBECONFIG"

# OLM_RS_CRDS=<dir> installs the CRDs of that folder instead of ours (OLM's own: `hack/olm-crds.sh` prints theirs).
CRDS="${OLM_RS_CRDS:-deploy/crds}"
log "installing the CRDs of $CRDS (server-side apply: the CSV CRD is too large for client-side apply's annotation)"
kubectl apply --server-side --force-conflicts -f "$CRDS" >/dev/null
kubectl wait --for=condition=Established -f "$CRDS" --timeout=60s >/dev/null

mkdir -p "$RUN"; stop_ours
start() { # name, then the command
  local name=$1; shift
  setsid "$@" >"$RUN/$name.log" 2>&1 < /dev/null & echo $! > "$RUN/$name.pid"
}
REGISTRY_ADDR=$(hack/registry.sh addr)
CATALOG_IMAGE="$REGISTRY_ADDR/olm-rs-samples/catalog:latest"
log "pushing the sample bundles and a catalog image referencing them by digest to $REGISTRY_ADDR"
"$BIN/olm-oci" push-tree "$REPO/deploy/samples/catalog" --package etcd --prefix "$REGISTRY_ADDR/olm-rs-samples" \
  --catalog "$CATALOG_IMAGE" >"$RUN/catalog-image.txt" 2>"$RUN/bundle-images.txt"
log "catalog image $(cat "$RUN/catalog-image.txt") ($(wc -l < "$RUN/bundle-images.txt") bundle images)"
# With hack/observe.sh up, both operators send their spans to its Phoenix (and Prometheus already scrapes the fixed
# ports below): one trace per Subscription change, across both.
if hack/observe.sh status 2>/dev/null | grep -q 'phoenix running'; then
  eval "$(hack/observe.sh env)"; export OTEL_EXPORTER_OTLP_ENDPOINT
  log "tracing to Phoenix ($OLM_RS_PHOENIX_URL); metrics in Prometheus ($OLM_RS_PROMETHEUS_URL)"
fi
kubectl create namespace olm --dry-run=client -o yaml | kubectl apply -f - >/dev/null
# Loopback only, so the metrics are open to local tools (hack/observe.sh's Prometheus scrapes them without a token).
start olm-operator "$BIN/olm-operator" run --http-addr "127.0.0.1:$OLM_PORT" --metrics-auth none --namespace olm
start catalog-operator "$BIN/catalog-operator" run --http-addr "127.0.0.1:$CATALOG_PORT" --metrics-auth none --namespace olm
for p in "$OLM_PORT" "$CATALOG_PORT"; do
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$p/healthz" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$p/healthz" >/dev/null || { log "operator on :$p did not start; logs in $RUN"; exit 1; }
done
log "operators running (logs in $RUN)"

# package-server behind the API server's aggregation layer, so `kubectl get packagemanifests` works: the API server
# reaches it through a Service whose Endpoints name this machine's address (Endpoints may not hold a loopback one).
HOST_IP=$(ip -4 route get 192.0.2.1 2>/dev/null | sed -nE 's/.* src ([0-9.]+).*/\1/p')
[ -n "$HOST_IP" ] || { log "no IPv4 address to serve package-server on (ip route get found none)"; exit 1; }
start package-server "$BIN/package-server" run --global-namespace olm --bind-address "$HOST_IP" \
  --secure-port "$PACKAGES_PORT" --service-name packageserver --service-namespace olm --tls-extra-names "$HOST_IP" \
  --http-addr "127.0.0.1:$PACKAGES_HTTP_PORT" --metrics-auth none
kubectl apply -f - >/dev/null 2>&1 <<YAML
apiVersion: v1
kind: Service
metadata: {name: packageserver, namespace: olm}
spec: {ports: [{port: 443, targetPort: $PACKAGES_PORT}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: packageserver, namespace: olm}
subsets: [{addresses: [{ip: "$HOST_IP"}], ports: [{port: $PACKAGES_PORT}]}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.packages.operators.coreos.com}
spec:
  group: packages.operators.coreos.com
  version: v1
  service: {name: packageserver, namespace: olm, port: 443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 2000
  versionPriority: 15
YAML
if ! kubectl wait apiservice/v1.packages.operators.coreos.com --for=condition=Available --timeout=60s >/dev/null; then
  log "package-server's APIService did not become Available; log in $RUN/package-server.log"; exit 1
fi
log "package-server serving packages.operators.coreos.com on $HOST_IP:$PACKAGES_PORT"

kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl apply -n "$NS" -f - >/dev/null <<YAML
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: etcd-demo}
spec: {targetNamespaces: [$NS]}
---
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: sample-catalog}
spec: {sourceType: grpc, image: "$CATALOG_IMAGE", displayName: "olm-rs sample catalog", publisher: olm-rs, updateStrategy: {registryPoll: {interval: 10m}}}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: etcd}
spec: {name: etcd, channel: singlenamespace-alpha, source: sample-catalog, sourceNamespace: $NS, installPlanApproval: Automatic}
YAML
log "subscribed to etcd (channel singlenamespace-alpha); waiting for the CSV at the channel head to succeed"
start_t=$(date +%s)
# The CSV does not exist yet when we start: wait for it to appear, then for its phase.
deadline=$(( start_t + ${QUICKSTART_TIMEOUT:-300} ))
until kubectl get csv -n "$NS" etcdoperator.v0.9.4 >/dev/null 2>&1; do
  [ "$(date +%s)" -lt "$deadline" ] || { log "no CSV etcdoperator.v0.9.4 in time"; kubectl get sub,installplan -n "$NS" -o wide || true; exit 1; }
  sleep 0.5
done
if ! kubectl wait -n "$NS" csv/etcdoperator.v0.9.4 --for=jsonpath='{.status.phase}'=Succeeded \
    --timeout="$(( deadline - $(date +%s) ))s" >/dev/null; then
  log "etcdoperator.v0.9.4 did not reach Succeeded in time"; kubectl get sub,installplan,csv,deploy -n "$NS" -o wide || true; exit 1
fi
log "installed the channel head (etcdoperator.v0.9.4) in $(( $(date +%s) - start_t )) s"
kubectl get catsrc,sub,installplan,csv,deploy -n "$NS"
log "the catalog's packages, as OLM users list them"
kubectl get packagemanifests -n "$NS"
log "everything keeps running; stop it with: hack/quickstart.sh down"
