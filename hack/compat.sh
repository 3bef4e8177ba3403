#!/usr/bin/env bash
# Bench: the cluster suite on each supported Kubernetes release, and the compatibility table in
# docs/kubernetes-versions.md rewritten from what it measured.
#
#   hack/compat.sh [VERSION...]   default: the oldest and the newest supported release (hack/versions.env)
#
# Each release gets its control plane built from the Go modules (hack/lib/gomod.sh, cached by version) and a
# private plane of its own (state in ~/.cache/olm-rs/compat-VERSION, ports apart from the tests' and the quick
# start's), then every cluster test target of crate olm-tests but the full cluster's and the benches runs on it.
# The table row says the release, the server's /version, tests passed/failed/ignored and the wall time; a
# failing release stays in the table as failing (its log is kept in the cache folder).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${OLM_RS_CACHE:-$HOME/.cache/olm-rs}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/target}"
log() { echo "== compat: $*" >&2; }
# shellcheck source=hack/lib/gomod.sh
. hack/lib/gomod.sh

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("$KUBERNETES_OLDEST_VERSION" "$KUBERNETES_VERSION")

cargo build --workspace --all-targets --locked >&2
targets=()
for f in tests/tests/*.rs; do
  n=$(basename "$f" .rs)
  case "$n" in full_cluster*|observe_tools) ;; *) targets+=(--test "$n") ;; esac
done

rows=()
for v in "${versions[@]}"; do
  dir="$CACHE/compat-$v"; mkdir -p "$dir"
  export OLM_RS_K8S_VERSION="$v" OLM_RS_CLUSTER_DIR="$dir/plane" OLM_RS_ETCD_PORT=24490 OLM_RS_ETCD_PEER_PORT=24500
  export OLM_RS_API_PORT=27143 OLM_RS_KCM_PORT=26957 OLM_RS_REGISTRY_PORT=25700 OLM_RS_REGISTRY_DIR="$dir/registry"
  t0=$(date +%s)
  k8s_build "$v"
  build_s=$(( $(date +%s) - t0 ))
  OLM_RS_NODE_SIM="$CARGO_TARGET_DIR/debug/node-sim" hack/control-plane.sh up >/dev/null
  eval "$(hack/control-plane.sh env)"
  server=$(kubectl version -o json | sed -nE '/serverVersion/,$ s/.*"gitVersion": "([^"]+)".*/\1/p' | head -1)
  log "Kubernetes $v (server $server): running the cluster suite; log in $dir/suite.log"
  t1=$(date +%s); status=0
  cargo test --workspace --locked --no-fail-fast "${targets[@]}" -- --test-threads=2 > "$dir/suite.log" 2>&1 || status=$?
  wall=$(( $(date +%s) - t1 ))
  hack/control-plane.sh down >/dev/null 2>&1 || true
  unset KUBECONFIG
  sum() { grep -E '^test result:' "$dir/suite.log" | sed -nE "s/.* ([0-9]+) $1.*/\1/p" | awk '{s += $1} END {print s + 0}'; }
  passed=$(sum passed); failed=$(sum failed); ignored=$(sum ignored)
  verdict=pass; [ "$status" = 0 ] || verdict=FAIL
  failing=$(grep -E '^    [a-z_:0-9]+$' "$dir/suite.log" | sed 's/^ *//' | sort -u | head -5 | paste -sd, - || true)
  rows+=("| $v | $server | $verdict | $passed | $failed | $ignored | $(( wall / 60 )) min | ${build_s} s | ${failing:--} |")
  log "Kubernetes $v: $verdict ($passed passed, $failed failed, $ignored ignored, $wall s)"
done

doc=docs/kubernetes-versions.md
# Rows of the releases measured now replace theirs; rows of releases not run this time stay.
python3 - "$doc" "$(date -u +%Y-%m-%d)" "${rows[@]}" <<'PY'
import re, sys
path, day, new_rows = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(path).read()
begin, end = "<!-- compat-table:begin -->", "<!-- compat-table:end -->"
old = re.search(re.escape(begin) + "(.*?)" + re.escape(end), text, flags=re.S).group(1)
release = lambda row: row.split("|")[1].strip()
rows = {release(r): r for r in old.splitlines() if re.match(r"^\| \d", r)}
rows.update({release(r): r for r in new_rows})
ordered = sorted(rows.values(), key=lambda r: [int(x) for x in release(r).split(".")])
head = ("| release | server /version | suite | passed | failed | ignored | suite time | build (cached: 0 s) | failing tests |\n"
        "|---|---|---|---|---|---|---|---|---|")
block = (f"{begin}\nMeasured by `hack/compat.sh` (debug build, light cluster, 2 cores; last run {day}):\n\n"
         + head + "\n" + "\n".join(ordered) + f"\n{end}")
text = text.replace(begin + old + end, block)
open(path, "w").write(text)
PY
log "table written to $doc"
sed -n '/compat-table:begin/,/compat-table:end/p' "$doc"
