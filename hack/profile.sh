#!/usr/bin/env bash
# CPU profile of both operators over the scale bench's workload (docs/performance.md#profiling).
#
#   hack/profile.sh [OUT_DIR]     default /tmp/olm-rs-profile
#
# Builds olm-operator and catalog-operator with the `profiling` profile (the release build with symbols and frame
# pointers) into $CARGO_TARGET_DIR-profiling, starts the scale bench's private control plane (audit log on),
# attaches `perf record -g` to each operator as the bench starts it, runs the bench sized by the OLM_RS_SCALE_*
# variables (defaults below: 1,000 namespaces, 1,000 own-namespace operators, 50 catalogs), stops the plane and
# prints each operator's hottest functions (inclusive). The bench's rows are in OUT_DIR/scale.log, the profiles in
# OUT_DIR/{olm-operator,catalog-operator}.perf (`perf report -i ...`).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${1:-/tmp/olm-rs-profile}"
mkdir -p "$OUT"
command -v perf >/dev/null || { echo "profile: perf is not installed (Debian: linux-perf)" >&2; exit 1; }

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/olm-rs/target}"
PROFILE_TARGET="$CARGO_TARGET_DIR-profiling"
CARGO_TARGET_DIR="$PROFILE_TARGET" RUSTFLAGS="-C force-frame-pointers=yes" \
  cargo build --profile profiling --locked -p olm-operator -p catalog-operator -p registry -p node-sim
BIN="$OUT/bin"
mkdir -p "$BIN"
for b in olm-operator catalog-operator registry node-sim; do cp "$PROFILE_TARGET/profiling/$b" "$BIN/"; done
cargo test --locked -p olm-tests --test scale_bench --no-run

# The scale bench's private plane (the header of tests/tests/scale_bench.rs).
export OLM_RS_CLUSTER_DIR="$HOME/.cache/olm-rs/cluster-scale" OLM_RS_ETCD_PORT=33792 OLM_RS_ETCD_PEER_PORT=33802 \
  OLM_RS_API_PORT=36445 OLM_RS_KCM_PORT=36259 OLM_RS_REGISTRY_PORT=25002 \
  OLM_RS_REGISTRY_DIR="$HOME/.cache/olm-rs/registry-scale" OLM_RS_AUDIT=1
export OLM_RS_KCM_FLAGS="--kube-api-qps=300 --kube-api-burst=600 --concurrent-serviceaccount-token-syncs=10"
export OLM_RS_BIN_DIR="$BIN"
export OLM_RS_SCALE_NS_COPIES="${OLM_RS_SCALE_NS_COPIES:-20}" OLM_RS_SCALE_NS="${OLM_RS_SCALE_NS:-1000}" \
  OLM_RS_SCALE_OWN="${OLM_RS_SCALE_OWN:-1000}" OLM_RS_SCALE_CATALOGS="${OLM_RS_SCALE_CATALOGS:-50}" \
  OLM_RS_SCALE_IDLE_SECS="${OLM_RS_SCALE_IDLE_SECS:-10}"
OLM_RS_NODE_SIM="$BIN/node-sim" hack/control-plane.sh up >/dev/null
trap 'hack/control-plane.sh down >/dev/null 2>&1 || true' EXIT

# perf follows each operator from the moment the bench starts it.
attach() {
  local name=$1 pid=""
  while [ -z "$pid" ]; do pid=$(pgrep -f "^$BIN/$name( |$)" | head -1 || true); [ -n "$pid" ] || sleep 0.2; done
  exec perf record -F 199 -g -p "$pid" -o "$OUT/$name.perf" 2>"$OUT/$name.perf.log"
}
attach olm-operator & attach catalog-operator &
cargo test --locked -p olm-tests --test scale_bench -- --ignored --nocapture 2>&1 | tee "$OUT/scale.log" | grep '^SCALE' || true
wait || true

for name in olm-operator catalog-operator; do
  echo "== $name: hottest functions (inclusive, % of its samples)"
  perf report -i "$OUT/$name.perf" --children --sort symbol --stdio -g none 2>/dev/null \
    | grep -E '^ +[0-9.]+%' | grep -v -E 'tokio::runtime|actix::|core::future|std::|__libc|main$|start_thread|clone3' \
    | head -25 | sed -E 's/ +/ /g' | cut -c1-160
done
