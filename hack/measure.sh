#!/usr/bin/env bash
# Prints the foundation's figures: control-plane `up` time (cached binaries, fresh etcd), each operator binary's
# idle RSS against the control plane once its watches have listed, and the binaries' sizes.
#   hack/measure.sh [debug|release]     (default release; builds what is missing)
# The cold (first) `up` includes building Kubernetes: time `hack/control-plane.sh build` on a fresh cache for it.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE="${1:-release}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/olm-rs/target}"
flag=""; [ "$PROFILE" = release ] && flag="--release"
cargo build $flag -p olm-operator -p catalog-operator -p node-sim >&2
BIN="$CARGO_TARGET_DIR/$PROFILE"
OLM_RS_CLUSTER_DIR="${OLM_RS_CLUSTER_DIR:-$HOME/.cache/olm-rs/measure-cluster}"
export OLM_RS_CLUSTER_DIR OLM_RS_ETCD_PORT=24790 OLM_RS_ETCD_PEER_PORT=24800 OLM_RS_API_PORT=27443 OLM_RS_KCM_PORT=27257
hack/control-plane.sh build >/dev/null
hack/control-plane.sh down >/dev/null 2>&1 || true
t0=$(date +%s.%N)
KUBECONFIG=$(hack/control-plane.sh up | tail -1)
t1=$(date +%s.%N)
export KUBECONFIG
printf 'control-plane up (cached binaries, fresh etcd): %.1f s\n' "$(echo "$t1 - $t0" | bc)"
t0=$(date +%s.%N); hack/control-plane.sh up >/dev/null; t1=$(date +%s.%N)
printf 'control-plane up (already running, reused): %.2f s\n' "$(echo "$t1 - $t0" | bc)"
CRDS="${OLM_RS_CRDS:-deploy/crds}" # OLM_RS_CRDS=<dir>: another folder of CRDs (OLM's: hack/olm-crds.sh)
for f in "$CRDS"/*.yaml; do kubectl create -f "$f" >/dev/null 2>&1 || kubectl replace -f "$f" >/dev/null; done
kubectl wait --for=condition=Established -f "$CRDS" --timeout=60s >/dev/null
port=19380
for b in olm-operator catalog-operator; do
  port=$((port + 1))
  "$BIN/$b" run --http-addr "127.0.0.1:$port" >/dev/null 2>&1 & pid=$!
  for _ in $(seq 1 150); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  curl -sf "127.0.0.1:$port/readyz" >/dev/null || { echo "$b never became ready" >&2; kill $pid; exit 1; }
  # Sample RSS a few times after readiness and keep the largest (allocations settle after the first lists).
  max=0
  for _ in $(seq 1 10); do r=$(awk '/VmRSS/{print $2}' "/proc/$pid/status"); [ "$r" -gt "$max" ] && max=$r; sleep 0.3; done
  printf '%s idle RSS (%s, empty cluster): %.1f MiB; binary %.1f MiB\n' "$b" "$PROFILE" "$(echo "$max/1024" | bc -l)" "$(echo "$(stat -c %s "$BIN/$b")/1048576" | bc -l)"
  kill $pid
done
hack/control-plane.sh down >/dev/null
