#!/usr/bin/env bash
# Run every test of olm-rs on a fresh Debian machine: unit and table tests, corpus tests over ../shared/catalogs,
# the Python grpcio wire-compatibility test of the registry, and the cluster tests against a real local control
# plane (etcd + kube-apiserver + kube-controller-manager + our node simulator) started here. Where the machine
# allows (root, overlayfs), also the full-cluster test: olm-rs deployed from deploy/ as real pods on a kubelet
# (hack/full-cluster.sh, images of the debug build); elsewhere it is skipped and this log says why.
#
# Build outputs are cached outside the clone ($CARGO_TARGET_DIR, default ~/.cache/olm-rs/target); Kubernetes and
# etcd are built once from their Go modules into ~/.cache/olm-rs (hack/versions.env; or taken from
# $KUBEBUILDER_ASSETS), and so are the test peers (hack/peers.sh). The tests' control plane is not the quick
# start's (hack/quickstart.sh has its own).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/olm-rs/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
log() { echo "== test: $*" >&2; }

command -v cargo >/dev/null || { echo "cargo (rustup) is required" >&2; exit 1; }
if ! command -v python3 >/dev/null; then apt-get update -qq && apt-get install -y -qq python3 python3-venv; fi

# The documentation first: a broken link or a command naming a missing script or test target fails the run here,
# before the build (hack/check-docs.sh needs python3 and the files only).
log "checking the documentation's links and commands"
hack/check-docs.sh

# The Kubernetes and etcd build from Go modules (one time) runs beside the Rust build.
log "preparing control-plane binaries in the background"
hack/control-plane.sh build > "${TMPDIR:-/tmp}/olm-rs-k8s-build.log" 2>&1 &
k8s_build=$!
# The ecosystem's tools the peer tests run (hack/peers.sh: opm, kubectl-operator, helm, OLM v0 and its image),
# likewise once.
log "preparing the test peers in the background"
{ hack/peers.sh build && hack/peers.sh image olm-v0; } > "${TMPDIR:-/tmp}/olm-rs-peers-build.log" 2>&1 &
peers_build=$!

# Prometheus, Phoenix and headless Chromium for the observe_tools test (hack/observe.sh; the first install takes
# about 5 minutes, beside the build; later starts ~1 minute for Phoenix's migrations).
started_observe=0
case "$(hack/observe.sh status || true)" in *'phoenix running'*) ;; *) started_observe=1 ;; esac
log "starting Prometheus and Phoenix in the background"
hack/observe.sh up > "${TMPDIR:-/tmp}/olm-rs-observe.log" 2>&1 &
observe_up=$!

started_cluster=0
started_full=0
# The chaos tests start a private plane of their own (tests/src/chaos_plane.rs, the first of hack/chaos.sh's);
# stopped at the end when this run started it.
chaos_plane=(OLM_RS_CLUSTER_DIR="$HOME/.cache/olm-rs/cluster-chaos" OLM_RS_ETCD_PORT=23891
  OLM_RS_ETCD_PEER_PORT=23901 OLM_RS_API_PORT=26644 OLM_RS_KCM_PORT=26358 OLM_RS_REGISTRY_PORT=25001
  OLM_RS_REGISTRY_DIR="$HOME/.cache/olm-rs/registry-chaos")
started_chaos=1
case "$(env "${chaos_plane[@]}" hack/control-plane.sh status || true)" in *'kube-apiserver running'*) started_chaos=0 ;; esac
cleanup() {
  if [ "$started_chaos" = 1 ] && [ -z "${OLM_RS_KEEP_CLUSTER:-}" ]; then
    env "${chaos_plane[@]}" hack/control-plane.sh down >/dev/null 2>&1 || true
  fi
  if [ "$started_observe" = 1 ] && [ -z "${OLM_RS_KEEP_CLUSTER:-}" ]; then hack/observe.sh down || true; fi
  if [ "$started_full" = 1 ] && [ -z "${OLM_RS_KEEP_CLUSTER:-}" ]; then
    case "$(hack/full-cluster.sh status || true)" in *' running'*) hack/full-cluster.sh down || true ;; esac
  fi
  if [ "$started_cluster" = 1 ] && [ -z "${OLM_RS_KEEP_CLUSTER:-}" ]; then hack/control-plane.sh down || true; fi
}
trap cleanup EXIT

log "building the workspace"
start=$(date +%s)
cargo build --workspace --all-targets --locked
log "workspace built in $(( $(date +%s) - start )) s"

if ! wait "$k8s_build"; then
  echo "control-plane binaries failed to build; log:" >&2; tail -50 "${TMPDIR:-/tmp}/olm-rs-k8s-build.log" >&2; exit 1
fi
if ! wait "$peers_build"; then
  echo "test peers failed to build; log:" >&2; tail -50 "${TMPDIR:-/tmp}/olm-rs-peers-build.log" >&2; exit 1
fi
# (Read the status whole: with pipefail, `status | grep -q` fails when grep exits before status has written all.)
# Our kubectl first on PATH (tests run it).
k8s_bin=$(hack/control-plane.sh build 2>/dev/null | tail -1); export PATH="$k8s_bin:$PATH"
log "Kubernetes $(kubectl version --client -o json | sed -nE 's/.*"gitVersion": "([^"]+)".*/\1/p' | head -1) from $k8s_bin"
cluster_status=$(hack/control-plane.sh status || true)
case "$cluster_status" in *'kube-apiserver running'*) ;; *) started_cluster=1 ;; esac
OLM_RS_NODE_SIM="$CARGO_TARGET_DIR/debug/node-sim" hack/control-plane.sh up >/dev/null

# The full cluster (real pods): the test starts it (hack/full-cluster.sh up) from images of this debug build.
export OLM_RS_IMAGE_PROFILE="${OLM_RS_IMAGE_PROFILE:-debug}"
if why=$(hack/full-cluster.sh check); then
  case "$(hack/full-cluster.sh status || true)" in *'kubelet running'*) ;; *) started_full=1 ;; esac
  log "full-cluster test: will run (real pods; hack/full-cluster.sh up)"
else
  # Not run here (they fail on such a machine, never pass unseen): left out of the cargo invocation below.
  full_cluster_out=1
  log "full-cluster tests (full_cluster, full_cluster_webhooks) NOT RUN on this machine: $why"
fi

if ! wait "$observe_up"; then
  echo "hack/observe.sh up failed; log:" >&2; tail -30 "${TMPDIR:-/tmp}/olm-rs-observe.log" >&2; exit 1
fi
eval "$(hack/observe.sh env | grep -v OTEL_)"   # the tools' addresses; only observe_tools exports spans
# anyhow errors of failing tests print their message, not a backtrace that pushes it out of a short log.
export RUST_LIB_BACKTRACE="${RUST_LIB_BACKTRACE:-0}"

# observe_tools first among the cluster tests, right after checking the tools still run: a tool that died since
# `up` is named with its log, and started again.
observe_check() {
  local s; s=$(hack/observe.sh status || true)
  case "$s" in *'prometheus running'*'phoenix running'*) return 0 ;; esac
  log "an observe tool is not running: $(echo "$s" | tr '\n' ' ')"
  local f; for f in prometheus phoenix; do
    [ -f "$HOME/.cache/olm-rs/observe/$f.log" ] && { echo "--- $f.log (tail)" >&2; tail -20 "$HOME/.cache/olm-rs/observe/$f.log" >&2; }
  done
  hack/observe.sh up >/dev/null
}

log "running all tests"
# Every cargo command here selects the whole workspace (`--workspace`, narrowed by target): cargo unifies the
# features of dependencies over the packages selected, so a `-p` selection would rebuild about 60 crates with
# another feature set. Unit, table and corpus tests first (4 at a time), then the cluster tests (crate olm-tests,
# each test starts operators against the one control plane: 2 at a time on 2 cores).
status=0
unit_targets=(--lib --bins)
for n in $(for f in */tests/*.rs; do case "$f" in tests/tests/*) ;; *) basename "$f" .rs ;; esac; done | sort -u); do
  unit_targets+=(--test "$n")
done
cargo test --workspace --locked --no-fail-fast "${unit_targets[@]}" -- --test-threads="${OLM_RS_TEST_THREADS:-4}" || status=$?
cargo test --workspace --locked --no-fail-fast --doc || status=$?
# Every cluster test target but observe_tools (run on its own first), and the full-cluster ones only where they run.
cluster_targets=()
for f in tests/tests/*.rs; do
  n=$(basename "$f" .rs)
  case "$n" in
    observe_tools) ;;
    full_cluster*) [ "${full_cluster_out:-}" = 1 ] || cluster_targets+=(--test "$n") ;;
    *) cluster_targets+=(--test "$n") ;;
  esac
done
observe_check
cargo test --workspace --locked --no-fail-fast --test observe_tools || status=$?
cargo test --workspace --locked --no-fail-fast "${cluster_targets[@]}" -- --test-threads="${OLM_RS_CLUSTER_TEST_THREADS:-2}" || status=$?
if [ "$started_full" = 1 ] && [ -z "${OLM_RS_KEEP_CLUSTER:-}" ]; then
  log "stopping the full cluster and restoring the host"
  hack/full-cluster.sh down || status=$?
fi

# The corpus counts (printed by passing tests, which cargo captures): show them in the log.
# Older builds of the test binaries this run rebuilt: deleted, so the cache does not grow by gigabytes a day.
python3 hack/lib/prune-target.py "$CARGO_TARGET_DIR" >&2 || true

log "corpus counts"
cargo test --workspace --test corpus_roundtrip --locked -- --nocapture 2>&1 | grep -E '^corpus|^test result' || true
cargo test --workspace --test bundle_corpus --locked -- --nocapture 2>&1 | grep -E "^bundle corpus|^  refused|^test result" || true
exit "$status"
