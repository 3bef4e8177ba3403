#!/usr/bin/env bash
# olm-rs local control plane: a REAL etcd + kube-apiserver + kube-controller-manager on loopback.
#
#   hack/control-plane.sh up      start (or reuse) the control plane; prints the kubeconfig path last
#   hack/control-plane.sh down    stop exactly the processes `up` started
#   hack/control-plane.sh status  say what runs
#   hack/control-plane.sh build   only install packages and build/cache the binaries
#   hack/control-plane.sh env     print `export KUBECONFIG=...`
#   hack/control-plane.sh restart-apiserver   SIGKILL kube-apiserver and start it again (chaos runs; never on the
#   hack/control-plane.sh restart-etcd        shared plane); restart-etcd likewise etcd, keeping its data
#
# `up` also starts a real OCI registry on 127.0.0.1:25000 (Debian's docker-registry, hack/lib/registry.sh) for
# bundle and catalog images; `down` stops it.
#
# With OLM_RS_NODE_SIM=<path of the node-sim binary>, `up` also runs our node simulator (dev/test support that
# plays the kubelet, see node-sim/), so Deployments become Available; `down` stops it too.
#
# Binaries: built from their Go modules at the versions pinned in hack/versions.env (hack/lib/gomod.sh), once,
# into $OLM_RS_CACHE (default ~/.cache/olm-rs), outside the repo; OLM_RS_K8S_VERSION builds and runs another
# release (hack/compat.sh). With $KUBEBUILDER_ASSETS set (a folder with etcd and kube-apiserver, as envtest lays
# out), every binary comes from there; a kube-controller-manager or kubectl it lacks is built from the modules at
# the version its kube-apiserver reports, so the plane never mixes versions.
set -euo pipefail

CACHE="${OLM_RS_CACHE:-$HOME/.cache/olm-rs}"
STATE="${OLM_RS_CLUSTER_DIR:-$CACHE/cluster}"
ETCD_PORT="${OLM_RS_ETCD_PORT:-23790}"
ETCD_PEER_PORT="${OLM_RS_ETCD_PEER_PORT:-23800}"
API_PORT="${OLM_RS_API_PORT:-26443}"
KCM_PORT="${OLM_RS_KCM_PORT:-26257}"
TOKEN="${OLM_RS_ADMIN_TOKEN:-olm-rs-admin-token}"

log() { echo "control-plane: $*" >&2; }
# shellcheck source=hack/lib/gomod.sh
. "$(dirname "$0")/lib/gomod.sh"
K8S_VERSION="${OLM_RS_K8S_VERSION:-$KUBERNETES_VERSION}"

# shellcheck source=hack/lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
# shellcheck source=hack/lib/aggregation.sh
. "$(dirname "$0")/lib/aggregation.sh"
# shellcheck source=hack/lib/registry.sh
. "$(dirname "$0")/lib/registry.sh"

# Resolve binaries into ETCD_BIN / APISERVER_BIN / KCM_BIN / KUBECTL_BIN (and put kubectl first on PATH).
resolve_binaries() {
  local bin
  if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
    ETCD_BIN="$KUBEBUILDER_ASSETS/etcd"
    APISERVER_BIN="$KUBEBUILDER_ASSETS/kube-apiserver"
    [ -x "$ETCD_BIN" ] && [ -x "$APISERVER_BIN" ] || { log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks etcd or kube-apiserver"; exit 1; }
    local v; v=$(k8s_binary_version "$APISERVER_BIN")
    [ -n "$v" ] || { log "$APISERVER_BIN --version names no Kubernetes release"; exit 1; }
    bin=$(k8s_bin_dir "$v")
    local missing=() c
    for c in kube-controller-manager kubectl; do [ -x "$KUBEBUILDER_ASSETS/$c" ] || missing+=("$c"); done
    if [ ${#missing[@]} -gt 0 ]; then
      log "KUBEBUILDER_ASSETS lacks ${missing[*]}: building them at its kube-apiserver's version $v"
      k8s_build "$v" "${missing[@]}"
    fi
    KCM_BIN="$KUBEBUILDER_ASSETS/kube-controller-manager"; [ -x "$KCM_BIN" ] || KCM_BIN="$bin/kube-controller-manager"
    KUBECTL_BIN="$KUBEBUILDER_ASSETS/kubectl"; [ -x "$KUBECTL_BIN" ] || KUBECTL_BIN="$bin/kubectl"
  else
    command -v openssl >/dev/null || apt_install openssl
    etcd_build "$ETCD_VERSION" & local etcd_job=$!
    k8s_build "$K8S_VERSION"
    wait "$etcd_job" || { log "etcd build failed"; exit 1; }
    ETCD_BIN="$(etcd_bin_dir "$ETCD_VERSION")/etcd"
    bin=$(k8s_bin_dir "$K8S_VERSION")
    APISERVER_BIN="$bin/kube-apiserver"; KCM_BIN="$bin/kube-controller-manager"; KUBECTL_BIN="$bin/kubectl"
  fi
  PATH="$(dirname "$KUBECTL_BIN"):$PATH"; export PATH
}

alive() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

wait_ready() { # url, what, seconds
  local deadline=$(( $(date +%s) + $3 ))
  until curl -ksf -H "Authorization: Bearer $TOKEN" "$1" >/dev/null 2>&1; do
    alive "$2" || { log "$2 exited; its log ($STATE/$2.log) ends:"; tail -5 "$STATE/$2.log" >&2 || true; exit 1; }
    if [ "$(date +%s)" -ge "$deadline" ]; then log "$2 not ready after $3 s; logs in $STATE"; tail -20 "$STATE/$2.log" >&2 || true; exit 1; fi
    sleep 0.3
  done
}

start_etcd() {
  setsid "$ETCD_BIN" --data-dir "$STATE/etcd-data" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync >>"$STATE/etcd.log" 2>&1 < /dev/null & echo $! > "$STATE/etcd.pid"
}

start_apiserver() {
  local agg_flags; mapfile -t agg_flags < <(aggregation_flags "$STATE/certs")
  # OLM_RS_AUDIT=1: an audit log of every request (Metadata level: verb, resource, user agent), e.g. for the scale
  # bench's request counts per operator. Off by default (it costs disk and CPU).
  local audit_flags=()
  if [ "${OLM_RS_AUDIT:-}" = 1 ]; then
    printf '%s\n' 'apiVersion: audit.k8s.io/v1' 'kind: Policy' 'omitStages: [RequestReceived]' 'rules:' '  - level: Metadata' \
      > "$STATE/audit-policy.yaml"
    audit_flags=(--audit-policy-file "$STATE/audit-policy.yaml" --audit-log-path "$STATE/audit.log" --audit-log-maxbackup 1
      --audit-log-maxsize 2000)
  fi
  setsid "$APISERVER_BIN" --etcd-servers "http://127.0.0.1:$ETCD_PORT" --secure-port "$API_PORT" --bind-address 127.0.0.1 \
    --advertise-address 127.0.0.1 --endpoint-reconciler-type none --cert-dir "$STATE/certs" --token-auth-file "$STATE/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$STATE/certs/sa.pub" \
    --service-account-signing-key-file "$STATE/certs/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
    --allow-privileged=true "${agg_flags[@]}" "${audit_flags[@]}" >>"$STATE/kube-apiserver.log" 2>&1 < /dev/null & echo $! > "$STATE/kube-apiserver.pid"
}

# restart-apiserver / restart-etcd: a process fault for the chaos runs. SIGKILL (no clean shutdown), start it
# again with the same flags and data, wait until it answers. Refuses when the plane is not up.
restart() { # etcd | kube-apiserver
  resolve_binaries
  alive etcd && alive kube-apiserver || { log "not running: nothing to restart"; exit 1; }
  local pid; pid=$(cat "$STATE/$1.pid")
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  case "$1" in
    etcd) start_etcd; wait_ready "http://127.0.0.1:$ETCD_PORT/health" etcd 30 ;;
    kube-apiserver) start_apiserver; wait_ready "https://127.0.0.1:$API_PORT/readyz" kube-apiserver 90 ;;
  esac
  log "$1 restarted (pid $(cat "$STATE/$1.pid"))"
}

up() {
  command -v curl >/dev/null || apt_install curl
  resolve_binaries
  mkdir -p "$STATE"
  # The binaries this `up` resolved; a plane started from others (another release) is not reused.
  local binaries="$APISERVER_BIN $KCM_BIN $ETCD_BIN"
  if alive etcd && alive kube-apiserver && alive kube-controller-manager; then
    if [ "$(cat "$STATE/binaries" 2>/dev/null)" = "$binaries" ]; then
      log "already running (reusing)"; ensure_node_sim; registry_up; echo "$STATE/kubeconfig"; return
    fi
    log "running from other binaries ($(cat "$STATE/binaries" 2>/dev/null || echo unknown)): starting it again"
  fi
  # Partially up, or from other binaries: stop what we started, then start fresh.
  down_quiet
  echo "$binaries" > "$STATE/binaries"
  rm -rf "$STATE/etcd-data"; mkdir -p "$STATE/certs"
  if [ ! -f "$STATE/certs/sa.key" ]; then
    openssl genrsa -out "$STATE/certs/sa.key" 2048 2>/dev/null
    openssl rsa -in "$STATE/certs/sa.key" -pubout -out "$STATE/certs/sa.pub" 2>/dev/null
  fi
  echo "$TOKEN,olm-rs-admin,olm-rs-admin,system:masters" > "$STATE/tokens.csv"
  aggregation_certs "$STATE/certs"
  : >"$STATE/etcd.log"; : >"$STATE/kube-apiserver.log"
  start_etcd
  wait_ready "http://127.0.0.1:$ETCD_PORT/health" etcd 30
  start_apiserver
  wait_ready "https://127.0.0.1:$API_PORT/readyz" kube-apiserver 90
  cat > "$STATE/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: olm-rs
  cluster:
    server: https://127.0.0.1:$API_PORT
    insecure-skip-tls-verify: true
users:
- name: olm-rs-admin
  user:
    token: $TOKEN
contexts:
- name: olm-rs
  context: {cluster: olm-rs, user: olm-rs-admin}
current-context: olm-rs
KC
  # OLM_RS_KCM_FLAGS: extra flags, e.g. for the scale bench a higher client rate than the default 20 requests/s
  # (with thousands of new namespaces the token controller's backlog otherwise holds every new pod for minutes).
  local kcm_flags=()
  read -r -a kcm_flags <<< "${OLM_RS_KCM_FLAGS:-}"
  setsid "$KCM_BIN" --kubeconfig "$STATE/kubeconfig" --leader-elect=false --service-account-private-key-file "$STATE/certs/sa.key" \
    --root-ca-file "$STATE/certs/apiserver.crt" --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --controllers '*' --use-service-account-credentials=false "${kcm_flags[@]}" >"$STATE/kube-controller-manager.log" 2>&1 < /dev/null &
  echo $! > "$STATE/kube-controller-manager.pid"
  # The controller manager is up when it has created the default service account of `default`.
  local deadline=$(( $(date +%s) + 60 ))
  until KUBECONFIG="$STATE/kubeconfig" kubectl get serviceaccount default -n default >/dev/null 2>&1; do
    alive kube-controller-manager || { log "kube-controller-manager died"; tail -20 "$STATE/kube-controller-manager.log" >&2; exit 1; }
    [ "$(date +%s)" -ge "$deadline" ] && { log "controller-manager not ready after 60 s"; exit 1; }
    sleep 0.3
  done
  ensure_node_sim
  registry_up
  log "up: etcd :$ETCD_PORT, kube-apiserver https://127.0.0.1:$API_PORT, kube-controller-manager; logs in $STATE"
  echo "$STATE/kubeconfig"
}

ensure_node_sim() {
  [ -n "${OLM_RS_NODE_SIM:-}" ] || return 0
  alive node-sim && return 0
  [ -x "$OLM_RS_NODE_SIM" ] || { log "OLM_RS_NODE_SIM=$OLM_RS_NODE_SIM is not an executable"; exit 1; }
  KUBECONFIG="$STATE/kubeconfig" setsid "$OLM_RS_NODE_SIM" >"$STATE/node-sim.log" 2>&1 < /dev/null & echo $! > "$STATE/node-sim.pid"
  local deadline=$(( $(date +%s) + 30 ))
  until KUBECONFIG="$STATE/kubeconfig" kubectl get node olm-rs-sim-node >/dev/null 2>&1; do
    alive node-sim || { log "node-sim died"; tail -20 "$STATE/node-sim.log" >&2; exit 1; }
    [ "$(date +%s)" -ge "$deadline" ] && { log "node-sim registered no node after 30 s"; exit 1; }
    sleep 0.2
  done
  log "node simulator running (pid $(cat "$STATE/node-sim.pid"))"
}

down_quiet() {
  for p in node-sim kube-controller-manager kube-apiserver etcd; do
    if alive "$p"; then
      local pid; pid=$(cat "$STATE/$p.pid"); kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$STATE/$p.pid"
  done
}

case "${1:-up}" in
  up) up ;;
  down) down_quiet; registry_down; log "down" ;;
  build) resolve_binaries; dirname "$KUBECTL_BIN" ;;
  status) for p in etcd kube-apiserver kube-controller-manager node-sim; do if alive $p; then echo "$p running (pid $(cat "$STATE/$p.pid"))"; else echo "$p stopped"; fi; done
          if registry_alive; then echo "registry running at $REGISTRY_ADDR"; else echo "registry stopped"; fi ;;
  env) resolve_binaries >/dev/null; echo "export KUBECONFIG=$STATE/kubeconfig"; echo "export PATH=$(dirname "$KUBECTL_BIN"):\$PATH" ;;
  restart-apiserver) restart kube-apiserver ;;
  restart-etcd) restart etcd ;;
  *) echo "usage: $0 up|down|status|build|env|restart-apiserver|restart-etcd" >&2; exit 2 ;;
esac
