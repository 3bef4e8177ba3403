#!/usr/bin/env bash
# OLM v0 and olm-rs side by side (docs/performance.md): builds olm-rs's release binaries and OLM v0's commands
# (hack/peers.sh, the pinned release), starts a private light control plane with the audit log on and OLM's
# published CRDs (hack/olm-crds.sh), runs tests/tests/side_by_side.rs (the same workload on each OLM, one after
# the other; the harness is a debug build, the operators are release builds) and stops the plane. Prints the
# markdown table last.
#   hack/side-by-side.sh          OLM_RS_SBS_INSTALLS (20) and OLM_RS_SBS_NAMESPACES (200) size the workload
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/olm-rs/target}"
cargo build --release -p olm-operator -p catalog-operator -p registry -p node-sim >&2
bash hack/peers.sh build olm-v0 >&2
# shellcheck source=hack/versions.env
. hack/versions.env
export OLM_V0_VERSION
export OLM_RS_CLUSTER_DIR="$HOME/.cache/olm-rs/cluster-sbs" OLM_RS_ETCD_PORT=34792 OLM_RS_ETCD_PEER_PORT=34802 \
  OLM_RS_API_PORT=37445 OLM_RS_KCM_PORT=37259 OLM_RS_AUDIT=1
OLM_RS_CRDS=$(bash hack/olm-crds.sh)
export OLM_RS_CRDS OLM_RS_AUDIT_LOG="$OLM_RS_CLUSTER_DIR/audit.log" OLM_RS_BIN_DIR="$CARGO_TARGET_DIR/release"
# 200 new namespaces at once: kube-controller-manager's default 20 requests/s would hold their service accounts
export OLM_RS_KCM_FLAGS="${OLM_RS_KCM_FLAGS:---kube-api-qps=300 --kube-api-burst=600}"
trap 'bash hack/control-plane.sh down >/dev/null 2>&1 || true' EXIT
OLM_RS_NODE_SIM="$OLM_RS_BIN_DIR/node-sim" bash hack/control-plane.sh up >&2
cargo test -p olm-tests --test side_by_side -- --ignored --nocapture
