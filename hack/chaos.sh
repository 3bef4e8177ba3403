#!/usr/bin/env bash
# hack/chaos.sh [SEEDS]: the long chaos run (a bench, not a test: hack/test.sh runs the short one) on the chaos
# tests' private control plane, then stops that plane. A fault-free baseline, then SEEDS (default 100) runs of the
# workload (tests/src/chaos_harness/workload.rs: a four-CSV chain + a Manual gRPC-catalog Subscription; a
# dependency across catalogs in a second namespace; a global operator's copies, its group narrowed mid-run; a
# namespace created and deleted mid-run), each with both operators as two leader-elected replicas running as their
# deploy/rbac ServiceAccounts behind the API fault proxy, under OLM_RS_CHAOS=seed=S,all=0.04,max_delay_ms=400, every
# API fault (lost answers after applied writes included) and, once each at seeded moments, a leader kill per
# operator, an apiserver and an etcd restart, a killed and a slowed registry; the faults stay on while the
# namespaces must converge to the baseline's end state. Then seed 1 again, its journal compared with the first
# run's. The table (seed | faults by kind | converged | time to converge | replica exits | set apart) is printed and
# kept in $OLM_RS_CHAOS_LOG (default ${TMPDIR:-/tmp}/olm-rs-chaos.log). Exit status: the test's.
# The private plane (ports 23891/26644, ~/.cache/olm-rs/cluster-chaos) never touches the shared one.
# OLM_RS_CHAOS_PLANE=2 selects a second private plane (etcd 23893/23903, apiserver 26646, controller manager 26360,
# registry 25003, ~/.cache/olm-rs/cluster-chaos2 and registry-chaos2; tests/src/chaos_plane.rs), e.g. for a long run
# beside CI's short run on the first; the test gets the same variable, and the plane stopped after is that one.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/olm-rs/target}"
seeds="${1:-100}"
log="${OLM_RS_CHAOS_LOG:-${TMPDIR:-/tmp}/olm-rs-chaos.log}"
export OLM_RS_CHAOS_PLANE="${OLM_RS_CHAOS_PLANE:-1}"
case "$OLM_RS_CHAOS_PLANE" in
  1) plane=(OLM_RS_CLUSTER_DIR="$HOME/.cache/olm-rs/cluster-chaos" OLM_RS_ETCD_PORT=23891 OLM_RS_ETCD_PEER_PORT=23901
            OLM_RS_API_PORT=26644 OLM_RS_KCM_PORT=26358 OLM_RS_REGISTRY_PORT=25001
            OLM_RS_REGISTRY_DIR="$HOME/.cache/olm-rs/registry-chaos") ;;
  2) plane=(OLM_RS_CLUSTER_DIR="$HOME/.cache/olm-rs/cluster-chaos2" OLM_RS_ETCD_PORT=23893 OLM_RS_ETCD_PEER_PORT=23903
            OLM_RS_API_PORT=26646 OLM_RS_KCM_PORT=26360 OLM_RS_REGISTRY_PORT=25003
            OLM_RS_REGISTRY_DIR="$HOME/.cache/olm-rs/registry-chaos2") ;;
  *) echo "OLM_RS_CHAOS_PLANE=$OLM_RS_CHAOS_PLANE: only 1 or 2" >&2; exit 2 ;;
esac
stop_plane() { env "${plane[@]}" hack/control-plane.sh down >/dev/null 2>&1 || true; }
trap stop_plane EXIT
echo "== chaos: $seeds seeds on chaos plane $OLM_RS_CHAOS_PLANE; log $log" >&2
cargo build --locked -p olm-operator -p catalog-operator -p node-sim -p registry >&2
status=0
OLM_RS_CHAOS_SEEDS="$seeds" cargo test --locked -p olm-tests --test chaos many_seeds -- --ignored --nocapture \
  2>&1 | tee "$log" || status=$?
exit "$status"
