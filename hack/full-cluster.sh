#!/usr/bin/env bash
# olm-rs FULL local cluster: a real single-node Kubernetes (the release pinned in hack/versions.env) where olm-rs
# runs in-cluster as real pods. etcd + kube-apiserver + kube-controller-manager + kube-scheduler + a kubelet built
# from their Go modules (hack/lib/gomod.sh), containerd + runc + bridge CNI from Debian, then our images imported and
# deploy/ applied (through a generated overlay, see below). Needs root and overlayfs. The light mode
# (hack/control-plane.sh, node simulator) stays the default for fast tests; this one runs beside it on its own
# ports and state folder and never touches it.
#
#   hack/full-cluster.sh up       start (or reuse) the cluster and deploy olm-rs; prints the kubeconfig path last
#                                 (OLM_RS_CERT_VALIDITY_SECONDS=N: olm-operator issues N-second certificates; `up`
#                                 on a running cluster applies deploy/ again, so `up` without it restores OLM's;
#                                 OLM_RS_CRDS=<dir>: that folder's CRDs instead of deploy/crds, e.g. OLM's own)
#                                 (OLM_RS_FULL_BARE=1: the cluster and its OCI registry only, olm-rs not deployed; on
#                                 a running cluster, what is deployed stays: tests/tests/release_install.rs removes it)
#   hack/full-cluster.sh down     delete the pods, stop what `up` started, restore every host setting it changed
#   hack/full-cluster.sh status   say what runs
#   hack/full-cluster.sh build    only install packages, build the kubelet/scheduler and the images
#   hack/full-cluster.sh env      print `export KUBECONFIG=...`
#   hack/full-cluster.sh registry print this cluster's OCI registry (host:port; plain HTTP, pods reach it)
#   hack/full-cluster.sh check    can this machine run it? (root, overlayfs, cgroups); exit 1 with the reason if not
#   hack/full-cluster.sh measure  cold start of the last `up`, each olm pod's RSS (memory cgroup), image sizes
#   hack/full-cluster.sh import ARCHIVE...   import OCI archives into the node's containerd (e.g. a release's images)
#
# Host settings: `up` records the host's state first (the sysctls the kubelet and the bridge plugin write,
# iptables/ip6tables rules, network links, mounts, top-level cgroups, the few fixed paths the kubelet and
# containerd use); `down` undoes each change and then compares the host with that record, printing any difference
# and exiting 1 if one remains.
#
# Networking: pods use the bridge CNI (10.244.0.0/24 on kcbr0). There is no kube-proxy and no cluster DNS, so the
# generated overlay points the operators' in-cluster config at the apiserver's host address
# (KUBERNETES_SERVICE_HOST/PORT; the token and CA are the mounted service-account ones). One iptables DNAT rule
# stands in for kube-proxy for the `kubernetes` Service alone (10.0.0.1:443 → the apiserver), so manifests without
# that overlay (a release's olm-rs.yaml, the Helm chart) reach the API as in any cluster; other Services do not route.
#
# The default catalog is an image catalog, as real clusters have: `up` starts a second docker-registry (the first
# is the light cluster's, on loopback) on the host's address, where pods reach it as they reach the apiserver,
# pushes real community bundles as bundle images and a catalog image referencing them by digest (`olm-oci
# push-tree`), and the overlay points the default CatalogSource's `spec.image` at it; catalog-operator pulls it
# in-process over plain HTTP (OLM_INSECURE_REGISTRIES names this one registry). deploy/'s `registry serve`
# Deployment and Service are left out (nothing would dial them).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

CACHE="${OLM_RS_CACHE:-$HOME/.cache/olm-rs}"
STATE="${OLM_RS_FULL_DIR:-$CACHE/full-cluster}"
export OLM_RS_IMAGE_PROFILE="${OLM_RS_IMAGE_PROFILE:-release}"   # debug: images of the debug build (hack/test.sh)
IMAGES="${OLM_RS_IMAGES:-$CACHE/images/$OLM_RS_IMAGE_PROFILE}"
ETCD_PORT="${OLM_RS_FULL_ETCD_PORT:-24790}"
ETCD_PEER_PORT="${OLM_RS_FULL_ETCD_PEER_PORT:-24800}"
API_PORT="${OLM_RS_FULL_API_PORT:-27443}"
KCM_PORT="${OLM_RS_FULL_KCM_PORT:-27257}"
SCHED_PORT="${OLM_RS_FULL_SCHEDULER_PORT:-27259}"
KUBELET_PORT="${OLM_RS_FULL_KUBELET_PORT:-27250}"
KUBELET_HEALTHZ_PORT="${OLM_RS_FULL_KUBELET_HEALTHZ_PORT:-27248}"
OCI_PORT="${OLM_RS_FULL_OCI_PORT:-27052}"
OCI_DIR="$STATE/oci-registry"
# The default catalog: these packages of the community bundles (../shared/catalogs, or $OLM_RS_SHARED/catalogs).
shared_catalogs() {
  if [ -n "${OLM_RS_SHARED:-}" ]; then echo "$OLM_RS_SHARED/catalogs"; return; fi
  local d; for d in "$REPO/../shared" "$REPO/../../shared"; do [ -d "$d/catalogs" ] && { echo "$d/catalogs"; return; }; done
  echo "$REPO/../shared/catalogs"
}
SHARED_CATALOGS=$(shared_catalogs)
DEFAULT_PACKAGES=(etcd odoo-operator apicurito)
TOKEN="${OLM_RS_FULL_ADMIN_TOKEN:-olm-rs-full-admin-token}"
NODE="olm-rs-full-node"
BRIDGE=kcbr0
POD_CIDR=10.244.0.0/24
# Sysctls the kubelet sets (overcommit, panic, keys) and the bridge plugin sets (ip_forward).
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv4.conf.all.route_localnet)
# Fixed host paths the kubelet, containerd and CNI use whatever their flags say.
FIXED_PATHS=(/var/lib/kubelet /var/log/pods /var/log/containers /run/containerd /run/netns /var/run/netns /var/lib/cni
  /opt/containerd /etc/cni /etc/kubernetes)
PROCS=(kubelet kube-scheduler kube-controller-manager kube-apiserver containerd etcd)
# What of the host's links, mounts and cgroups is ours to restore (others may change the rest meanwhile).
OUR_LINKS='^(kcbr0|veth.*|cni.*)$'
OUR_CGROUPS='/(kubepods|kubepods\.slice|k8s\.io|kubelet|kubelet\.slice|podruntime|systemreserved|kubereserved)$'
our_mounts_re() { echo "^($STATE|/run/containerd|/var/run/containerd|/run/netns|/var/run/netns|/var/lib/kubelet)(/|\$)"; }

log() { echo "full-cluster: $*" >&2; }
# shellcheck source=hack/lib/gomod.sh
. "$(dirname "$0")/lib/gomod.sh"
K8S_VERSION="${OLM_RS_K8S_VERSION:-$KUBERNETES_VERSION}"
BIN_CACHE=$(k8s_bin_dir "$K8S_VERSION")
ETCD_BIN="$(etcd_bin_dir "$ETCD_VERSION")/etcd"
PATH="$BIN_CACHE:$PATH"; export PATH   # our kubectl first

# shellcheck source=hack/lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
# shellcheck source=hack/lib/aggregation.sh
. "$(dirname "$0")/lib/aggregation.sh"

# Why this machine cannot run the full cluster, or nothing.
unsupported() {
  [ "$(id -u)" = 0 ] || { echo "not root (the kubelet, containerd and runc need root)"; return; }
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
  grep -qw overlay /proc/filesystems || { echo "no overlayfs in this kernel (containerd's snapshotter needs it)"; return; }
  [ -d /sys/fs/cgroup ] || { echo "no /sys/fs/cgroup"; return; }
}

host_ip() {
  local ip; ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i=1;i<NF;i++) if ($i=="src") {print $(i+1); exit}}')
  [ -n "$ip" ] || ip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^127\.' | grep -m1 '\.')
  echo "$ip"
}

alive() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

kc() { KUBECONFIG="$STATE/kubeconfig" kubectl "$@"; }

wait_for() { # seconds, what, command...
  local seconds=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + seconds ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then log "$what: not ready after $seconds s; logs in $STATE"; return 1; fi
    sleep 0.3
  done
}

# ---- host state: record before, restore and compare after ----------------------------------------------------

cgroup_roots() { awk '$9 ~ /^cgroup/ {print $5}' /proc/self/mountinfo | sort -u; }

fingerprint() {
  local -; set +e +o pipefail   # a section with no match is an empty section, not a failure
  echo "## sysctl"; for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s" 2>/dev/null || echo absent)"; done
  for t in filter nat mangle raw; do
    echo "## iptables $t"; (iptables-save -t "$t" 2>/dev/null || true) | grep -v '^#' | sed -E 's/\[[0-9]+:[0-9]+\]//' | sort
    echo "## ip6tables $t"; (ip6tables-save -t "$t" 2>/dev/null || true) | grep -v '^#' | sed -E 's/\[[0-9]+:[0-9]+\]//' | sort
  done
  echo "## links"; ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "$OUR_LINKS" | sort
  echo "## mounts"; awk '{print $5}' /proc/self/mountinfo | grep -E "$(our_mounts_re)" | sort
  echo "## cgroups"; for r in $(cgroup_roots); do find "$r" -mindepth 1 -maxdepth 1 -type d 2>/dev/null; done | grep -E "$OUR_CGROUPS" | sort
  echo "## paths"; for p in "${FIXED_PATHS[@]}"; do [ -e "$p" ] && echo "$p"; done; true
}

record_host() {
  [ -f "$STATE/host.before" ] && return 0   # recorded by the first `up`; a second `up` must not overwrite it
  mkdir -p "$STATE"
  local s; for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s" 2>/dev/null || echo absent)"; done > "$STATE/sysctl.before"
  fingerprint > "$STATE/host.before.tmp" && mv "$STATE/host.before.tmp" "$STATE/host.before"
}

restore_host() {
  [ -f "$STATE/host.before" ] || return 0
  local -; set +e +o pipefail   # best effort per item; the comparison at the end is the verdict
  # Sysctls.
  if [ -f "$STATE/sysctl.before" ]; then
    while IFS='=' read -r key value; do
      [ "$value" = absent ] && continue
      [ "$(sysctl -n "$key" 2>/dev/null)" = "$value" ] || sysctl -qw "$key=$value" >/dev/null 2>&1 || log "cannot restore $key=$value"
    done < "$STATE/sysctl.before"
  fi
  # iptables: remove every rule and chain that is not in the record (the kubelet's KUBE-* chains and jumps).
  local tool t
  for tool in iptables ip6tables; do
    command -v "$tool-save" >/dev/null || continue
    for t in filter nat mangle raw; do
      local before; before=$(sed -n "/^## $tool $t\$/,/^## /p" "$STATE/host.before" | grep -v '^## ')
      "$tool-save" -t "$t" 2>/dev/null | grep '^-A ' | while read -r rule; do
        grep -qxF -- "$rule" <<<"$before" || eval "$tool -t $t ${rule/-A /-D }" 2>/dev/null || true
      done
      "$tool-save" -t "$t" 2>/dev/null | sed -nE 's/^:([^ ]+) .*/\1/p' | while read -r chain; do
        grep -q "^:$chain " <<<"$before" && continue
        "$tool" -t "$t" -F "$chain" 2>/dev/null || true
        "$tool" -t "$t" -X "$chain" 2>/dev/null || true
      done
    done
  done
  # Network links we created (the bridge; pod veths went with their namespaces).
  local link
  for link in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "$OUR_LINKS"); do
    grep -qx "$link" <(sed -n '/^## links$/,/^## /p' "$STATE/host.before") || ip link delete "$link" 2>/dev/null || true
  done
  # Mounts we created, deepest first (kubelet root-dir bind mount, pod volumes, netns, shm, overlay rootfs).
  local m
  for m in $(awk '{print $5}' /proc/self/mountinfo | grep -E "$(our_mounts_re)" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-); do
    grep -qxF "$m" <(sed -n '/^## mounts$/,/^## /p' "$STATE/host.before") && continue
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  # Top-level cgroups we created (kubepods, k8s.io, ...), children first.
  local r d
  for r in $(cgroup_roots); do
    for d in $(find "$r" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | grep -E "$OUR_CGROUPS"); do
      grep -qxF "$d" <(sed -n '/^## cgroups$/,/^## /p' "$STATE/host.before") && continue
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
  done
  # Fixed paths that did not exist before.
  local p
  for p in "${FIXED_PATHS[@]}"; do
    grep -qxF "$p" <(sed -n '/^## paths$/,$p' "$STATE/host.before") && continue
    [ -e "$p" ] && rm -rf "$p"
  done
  # Compare.
  fingerprint > "$STATE/host.after"
  if diff -u "$STATE/host.before" "$STATE/host.after" > "$STATE/host.diff"; then
    log "host restored: sysctls, iptables, links, mounts, cgroups and paths match the record taken before up"
    rm -f "$STATE/host.before" "$STATE/host.after" "$STATE/host.diff" "$STATE/sysctl.before"
  else
    log "host NOT fully restored; differences from the record (kept in $STATE/host.diff):"
    cat "$STATE/host.diff" >&2
    return 1
  fi
}

# ---- binaries and images ---------------------------------------------------------------------------------------

build() {
  [ -z "$(unsupported)" ] || { log "cannot run here: $(unsupported)"; exit 1; }
  apt_install curl openssl runc containerd containernetworking-plugins iptables busybox-static gcc libc6-dev iproute2
  etcd_build "$ETCD_VERSION"
  k8s_build "$K8S_VERSION"
  command -v docker-registry >/dev/null || apt_install docker-registry
  # olm-oci (builds and pushes the default catalog's images): a debug build is quick and enough.
  cargo build --locked --workspace --bins >&2   # the workspace's feature set, as hack/test.sh builds it
  OLM_RS_IMAGES="$IMAGES" hack/images.sh build >&2   # keeps archives newer than their inputs
}

# ---- up --------------------------------------------------------------------------------------------------------

containerd_config() {
  containerd config default | python3 -c '
import re, sys
state, sock = sys.argv[1], sys.argv[2]
text = sys.stdin.read()
def setkey(section, key, value):
    """Set `key` in the TOML table `section` ("" for the top level)."""
    global text
    start = 0
    if section:
        header = re.search(r"^\s*\[" + re.escape(section) + r"\]\s*$", text, re.M)
        if not header:
            sys.exit("containerd config: no section " + section)
        start = header.end()
    pattern = re.compile(r"^(\s*)" + re.escape(key) + r" = .*$", re.M)
    m = pattern.search(text, start)
    if not m:
        sys.exit("containerd config: no key " + key + " in " + section)
    text = text[:m.start()] + m.group(1) + key + " = " + value + text[m.end():]
setkey("", "root", "\"%s/containerd/root\"" % state)
setkey("", "state", "\"%s/containerd/state\"" % state)
setkey("grpc", "address", "\"%s\"" % sock)
setkey("ttrpc", "address", "\"%s.ttrpc\"" % sock)
setkey("plugins.\"io.containerd.grpc.v1.cri\"", "sandbox_image", "\"localhost/olm-rs/pause:dev\"")
setkey("plugins.\"io.containerd.grpc.v1.cri\"", "restrict_oom_score_adj", "true")
setkey("plugins.\"io.containerd.grpc.v1.cri\".cni", "bin_dir", "\"%s/cni/bin\"" % state)
setkey("plugins.\"io.containerd.grpc.v1.cri\".cni", "conf_dir", "\"%s/cni/conf\"" % state)
setkey("plugins.\"io.containerd.internal.v1.opt\"", "path", "\"%s/containerd/opt\"" % state)
setkey("plugins.\"io.containerd.grpc.v1.cri\".registry", "config_path", "\"%s/containerd/certs.d\"" % state)
print(text)
' "$STATE" "$STATE/containerd.sock"
}

cni_config() {
  mkdir -p "$STATE/cni/bin" "$STATE/cni/conf" "$STATE/cni/ipam"
  local p; for p in bridge host-local loopback; do ln -sfn "/usr/lib/cni/$p" "$STATE/cni/bin/$p"; done
  cat > "$STATE/cni/conf/10-olm-rs.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "olm-rs", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "subnet": "$POD_CIDR", "dataDir": "$STATE/cni/ipam", "routes": [{"dst": "0.0.0.0/0"}]}}]}
CNI
}

# Close every descriptor but stdin/out/err in this (sub)shell: under `flock /tmp/olm-rs-full-cluster.lock
# hack/full-cluster.sh up` the lock's descriptor is inherited, and a daemon keeping it would hold the lock after
# `up` returned (a later `flock ... down` waited forever). Bash's own script descriptor (255) is close-on-exec.
close_inherited_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] && [ "$fd" != 255 ]; then eval "exec $fd>&-"; fi
  done
}

start_proc() { # name, command...
  local name=$1; shift
  ( close_inherited_fds; exec setsid "$@" ) > "$STATE/$name.log" 2>&1 < /dev/null & echo $! > "$STATE/$name.pid"
}

# The `kubernetes` Service's address DNATed to the apiserver (kube-proxy's job, for this one Service); `down`
# removes the rule with every other iptables change.
service_dnat() { # HOST_IP
  local rule=(PREROUTING -d 10.0.0.1/32 -p tcp --dport 443 -j DNAT --to-destination "$1:$API_PORT")
  iptables -t nat -C "${rule[@]}" 2>/dev/null || iptables -t nat -A "${rule[@]}"
}

import_images() {
  local img
  for img in olm-operator catalog-operator package-server registry test-operator test-webhook pause; do
    ctr -a "$STATE/containerd.sock" -n k8s.io images import "$IMAGES/$img.oci.tar" >/dev/null
  done
}

overlay() { # the kustomization applying deploy/ to this cluster
  local ip=$1 dir="$STATE/deploy"
  mkdir -p "$dir"
  local rel; rel=$(realpath --relative-to="$dir" "$REPO/deploy")
  cat > "$dir/kustomization.yaml" <<KUST
# Generated by hack/full-cluster.sh: deploy/ as is, plus what this cluster lacks (no kube-proxy, no DNS).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $rel
patches:
  # The in-cluster config with the apiserver's host address instead of the unroutable Service IP.
  - target: {kind: Deployment, name: "olm-operator|catalog-operator|package-server"}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: KUBERNETES_SERVICE_HOST, value: "$ip"}
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: KUBERNETES_SERVICE_PORT, value: "$API_PORT"}
  # The default catalog is the catalog image in this cluster's OCI registry, pulled by catalog-operator (and by
  # package-server, to list it) over plain HTTP (that registry only); deploy/'s registry Deployment and Service
  # are not needed.
  - target: {kind: Deployment, name: "catalog-operator|package-server"}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: OLM_INSECURE_REGISTRIES, value: "$ip:$OCI_PORT"}
  # No DNS here to reach catalog-operator's catalog Service: package-server pulls image catalogs itself.
  - target: {kind: Deployment, name: package-server}
    patch: |-
      - op: test
        path: /spec/template/spec/containers/0/args/7
        value: --image-catalogs-address=catalog-operator-catalogs:50052
      - op: remove
        path: /spec/template/spec/containers/0/args/7
  - target: {kind: CatalogSource, name: olm-rs-catalog}
    patch: |-
      - op: remove
        path: /spec/address
      - op: add
        path: /spec/image
        value: "$(default_catalog_ref "$ip")"
      - op: replace
        path: /spec/displayName
        value: olm-rs community catalog (image)
  - patch: |-
      \$patch: delete
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: olm-rs-catalog, namespace: olm}
  - patch: |-
      \$patch: delete
      apiVersion: v1
      kind: Service
      metadata: {name: olm-rs-catalog, namespace: olm}
KUST
  if [ -n "${OLM_RS_CRDS:-}" ]; then
    # Another folder's CRDs (OLM's own: hack/olm-crds.sh), applied by deploy_olm: leave deploy/'s out.
    cat >> "$dir/kustomization.yaml" <<KUST
  - target: {kind: CustomResourceDefinition}
    patch: |-
      \$patch: delete
      apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      metadata: {name: any}
KUST
  fi
  if [ -n "${OLM_RS_CERT_VALIDITY_SECONDS:-}" ]; then
    # Short-lived webhook/API-service certificates, to watch a rotation (tests/tests/full_cluster_rotation.rs).
    cat >> "$dir/kustomization.yaml" <<KUST
  - target: {kind: Deployment, name: olm-operator}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: OLM_RS_CERT_VALIDITY_SECONDS, value: "$OLM_RS_CERT_VALIDITY_SECONDS"}
KUST
  fi
  echo "$dir"
}

up() {
  local why; why=$(unsupported)
  [ -z "$why" ] || { log "cannot run here: $why"; exit 1; }
  build
  local t0; t0=$(date +%s.%N)
  mkdir -p "$STATE"
  local all=1 p
  for p in "${PROCS[@]}"; do alive "$p" || all=0; done
  # A cluster started from other binaries (another release) is not reused.
  if [ "$all" = 1 ] && [ "$(cat "$STATE/binaries" 2>/dev/null)" != "$BIN_CACHE $ETCD_BIN" ]; then
    log "running from other binaries ($(cat "$STATE/binaries" 2>/dev/null || echo unknown)): taking it down first"
    down
    all=0
  fi
  if [ "$all" = 1 ]; then
    log "already running (reusing); importing the images and applying deploy/ again"
    import_images   # a rebuilt image replaces its tag; pods started from now on run it
    service_dnat "$(cat "$STATE/host-ip")"
    if [ -n "${OLM_RS_FULL_BARE:-}" ]; then oci_registry up "$(cat "$STATE/host-ip")"
    else deploy_olm "$(cat "$STATE/host-ip")" ""; fi
    echo "$STATE/kubeconfig"; return
  fi
  stop_procs
  echo "$BIN_CACHE $ETCD_BIN" > "$STATE/binaries"
  record_host
  local ip; ip=$(host_ip); [ -n "$ip" ] || { log "no host IPv4 address"; exit 1; }
  echo "$ip" > "$STATE/host-ip"
  rm -rf "$STATE/etcd-data"; mkdir -p "$STATE/certs" "$STATE/kubelet" "$STATE/containerd"

  # containerd + images. Pods pull from the cluster's own OCI registry (plain HTTP on the host's address), as a
  # cluster pulls from its registry: bundle images OLM v0 unpacks in a Job, for one.
  containerd_config > "$STATE/containerd.toml"
  mkdir -p "$STATE/containerd/certs.d/$ip:$OCI_PORT"
  printf '%s\n' "server = \"http://$ip:$OCI_PORT\"" "" "[host.\"http://$ip:$OCI_PORT\"]" \
    '  capabilities = ["pull", "resolve"]' > "$STATE/containerd/certs.d/$ip:$OCI_PORT/hosts.toml"
  cni_config
  start_proc containerd containerd --config "$STATE/containerd.toml"
  wait_for 30 containerd ctr -a "$STATE/containerd.sock" version
  import_images
  log "containerd up, images imported ($(awk -v t0="$t0" -v t="$(date +%s.%N)" 'BEGIN{printf "%.1f", t-t0}') s)"

  # Control plane.
  if [ ! -f "$STATE/certs/sa.key" ]; then
    openssl genrsa -out "$STATE/certs/sa.key" 2048 2>/dev/null
    openssl rsa -in "$STATE/certs/sa.key" -pubout -out "$STATE/certs/sa.pub" 2>/dev/null
  fi
  echo "$TOKEN,olm-rs-admin,olm-rs-admin,system:masters" > "$STATE/tokens.csv"
  aggregation_certs "$STATE/certs"
  local agg_flags; mapfile -t agg_flags < <(aggregation_flags "$STATE/certs")
  start_proc etcd "$ETCD_BIN" --data-dir "$STATE/etcd-data" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync
  wait_for 30 etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"
  # Bound to all addresses: pods on the bridge reach it at the host address (the Service IP has no kube-proxy). Its
  # self-signed serving certificate names the advertised host address and the Service IP (not 127.0.0.1), so
  # every client, the kubeconfig's included, uses the host address.
  start_proc kube-apiserver "$BIN_CACHE/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --secure-port "$API_PORT" --bind-address 0.0.0.0 --advertise-address "$ip" --cert-dir "$STATE/certs" \
    --token-auth-file "$STATE/tokens.csv" --authorization-mode Node,RBAC --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$STATE/certs/sa.pub" --service-account-signing-key-file "$STATE/certs/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true --kubelet-preferred-address-types InternalIP,Hostname \
    "${agg_flags[@]}"
  wait_for 90 kube-apiserver curl -ksf -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$API_PORT/readyz"
  cat > "$STATE/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: olm-rs-full
  cluster:
    server: https://$ip:$API_PORT
    certificate-authority: $STATE/certs/apiserver.crt
users:
- name: olm-rs-admin
  user:
    token: $TOKEN
contexts:
- name: olm-rs-full
  context: {cluster: olm-rs-full, user: olm-rs-admin}
current-context: olm-rs-full
KC
  start_proc kube-controller-manager "$BIN_CACHE/kube-controller-manager" --kubeconfig "$STATE/kubeconfig" --leader-elect=false \
    --service-account-private-key-file "$STATE/certs/sa.key" --root-ca-file "$STATE/certs/apiserver.crt" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --controllers '*' --use-service-account-credentials=false
  start_proc kube-scheduler "$BIN_CACHE/kube-scheduler" --kubeconfig "$STATE/kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT"
  log "control plane up ($(awk -v t0="$t0" -v t="$(date +%s.%N)" 'BEGIN{printf "%.1f", t-t0}') s)"

  # The kubelet.
  # The sandbox (pause) image is containerd's setting (containerd_config). --fail-cgroupv1=false: kubelets from
  # 1.35 on refuse cgroup v1 hosts unless told otherwise, and this machine kind mounts cgroup v1.
  start_proc kubelet "$BIN_CACHE/kubelet" --kubeconfig "$STATE/kubeconfig" \
    --container-runtime-endpoint="unix://$STATE/containerd.sock" \
    --cgroup-driver=cgroupfs --fail-swap-on=false --fail-cgroupv1=false \
    --root-dir "$STATE/kubelet" --cert-dir "$STATE/kubelet/pki" --volume-plugin-dir "$STATE/kubelet/volume-plugins" \
    --register-node --hostname-override="$NODE" --node-ip="$ip" --address="$ip" --port "$KUBELET_PORT" \
    --read-only-port=0 --healthz-bind-address=127.0.0.1 --healthz-port "$KUBELET_HEALTHZ_PORT" \
    --image-gc-high-threshold=100 --image-gc-low-threshold=99 --node-status-update-frequency=4s \
    --eviction-hard='memory.available<100Mi,nodefs.available<1Gi,imagefs.available<1Gi,nodefs.inodesFree<1%' 
  service_dnat "$ip"
  wait_for 120 "node $NODE Ready" bash -c "KUBECONFIG='$STATE/kubeconfig' kubectl get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  log "node Ready ($(awk -v t0="$t0" -v t="$(date +%s.%N)" 'BEGIN{printf "%.1f", t-t0}') s)"

  if [ -n "${OLM_RS_FULL_BARE:-}" ]; then oci_registry up "$ip"; log "bare: olm-rs not deployed"
  else deploy_olm "$ip" "$t0"; fi
  log "up: kube-apiserver https://$ip:$API_PORT; logs in $STATE"
  echo "$STATE/kubeconfig"
}

# ---- the OCI registry and the default catalog image ----------------------------------------------------------

default_catalog_ref() { echo "$1:$OCI_PORT/olm-rs/catalog:dev"; }

# hack/lib/registry.sh with this cluster's address and folder (in a subshell: its variables stay there).
oci_registry() { # up|down HOST_IP
  ( close_inherited_fds   # the registry daemon must not keep the caller's flock descriptor either
    OLM_RS_REGISTRY_DIR="$OCI_DIR"
    # shellcheck source=hack/lib/registry.sh
    . "$REPO/hack/lib/registry.sh"
    REGISTRY_ADDR="$2:$OCI_PORT"; REGISTRY_METRICS_ADDR="127.0.0.1:$((OCI_PORT - 10000))"
    "registry_$1" )
}

olm_oci() {
  local bin="${CARGO_TARGET_DIR:-$CACHE/target}/debug/olm-oci"
  [ -x "$bin" ] || bin=$(command -v olm-oci || true)
  [ -n "$bin" ] || { log "olm-oci not built (hack/full-cluster.sh build)"; exit 1; }
  "$bin" "$@"
}

# Real community bundles as bundle images, and the catalog image listing them by digest (no inline objects).
push_default_catalog() { # HOST_IP
  local ip=$1 args=() p
  [ -d "$SHARED_CATALOGS/community-operators-prod-bundles/operators" ] ||
    { log "no $SHARED_CATALOGS/community-operators-prod-bundles: the default catalog is built from it"; exit 1; }
  for p in "${DEFAULT_PACKAGES[@]}"; do args+=(--package "$p"); done
  olm_oci --insecure "$ip:$OCI_PORT" push-tree "$SHARED_CATALOGS/community-operators-prod-bundles/operators" \
    --prefix "$ip:$OCI_PORT/olm-rs-community" --catalog "$(default_catalog_ref "$ip")" "${args[@]}" >&2
  log "default catalog image $(default_catalog_ref "$ip"): ${DEFAULT_PACKAGES[*]}"
}

# deploy_olm HOST_IP START: apply deploy/ through the generated overlay and wait for both operators' pods.
deploy_olm() {
  local ip=$1 t0=$2
  oci_registry up "$ip"
  push_default_catalog "$ip"
  wait_for 60 "default service account" kc get serviceaccount default -n default
  local dir; dir=$(overlay "$ip")
  # The CRDs first: the OperatorGroup and CatalogSource of deploy/ need them served. OLM_RS_CRDS=<dir>: that
  # folder's instead of ours (OLM's own: hack/olm-crds.sh).
  kc apply --server-side --force-conflicts -f "${OLM_RS_CRDS:-$REPO/deploy/crds}" >/dev/null
  kc wait --for=condition=Established crd --all --timeout=60s >/dev/null
  kc apply --server-side --force-conflicts -k "$dir" >/dev/null
  if ! kc -n olm rollout status deployment/olm-operator deployment/catalog-operator --timeout=180s >&2; then
    log "operators not Ready"; kc -n olm get pods -o wide >&2 || true; exit 1
  fi
  [ -n "$t0" ] || { log "olm-operator and catalog-operator pods Ready"; return; }
  local ready; ready=$(awk -v t0="$t0" -v t="$(date +%s.%N)" 'BEGIN{printf "%.1f", t-t0}')
  echo "$ready" > "$STATE/cold-start-seconds"
  log "cold start: olm-operator and catalog-operator pods Ready ${ready} s after start (containerd, images, control plane, kubelet, deploy/)"
}

# ---- down ------------------------------------------------------------------------------------------------------

stop_pid() { # name
  alive "$1" || { rm -f "$STATE/$1.pid"; return 0; }
  local pid; pid=$(cat "$STATE/$1.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$STATE/$1.pid"
}

stop_procs() {
  local p; for p in "${PROCS[@]}"; do stop_pid "$p"; done
}

down() {
  # Nothing may recreate pods now; then delete them through the kubelet (it unmounts volumes, tears down
  # sandboxes, releases IPs) and wait for it to confirm.
  stop_pid kube-controller-manager
  stop_pid kube-scheduler
  if alive kube-apiserver && alive kubelet; then
    kc delete pods --all -A --grace-period=5 --timeout=90s >/dev/null 2>&1 || log "pods not all deleted in 90 s; forcing"
  fi
  stop_pid kubelet
  # Whatever the kubelet left: stop every task and sandbox containerd still runs.
  if alive containerd; then
    local c
    for c in $(ctr -a "$STATE/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$STATE/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true
    done
    for c in $(ctr -a "$STATE/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$STATE/containerd.sock" -n k8s.io tasks delete -f "$c" >/dev/null 2>&1 || true
    done
    for c in $(ctr -a "$STATE/containerd.sock" -n k8s.io containers ls -q 2>/dev/null); do
      ctr -a "$STATE/containerd.sock" -n k8s.io containers delete "$c" >/dev/null 2>&1 || true
    done
  fi
  stop_procs
  oci_registry down "$(cat "$STATE/host-ip" 2>/dev/null || echo 127.0.0.1)"
  # containerd-shim processes of our containerd (their command line names our state folder's socket).
  local pid
  for pid in $(pgrep -f "containerd-shim.*-address $STATE/containerd.sock" || true); do kill -9 "$pid" 2>/dev/null || true; done
  restore_host
}

# ---- measure ---------------------------------------------------------------------------------------------------

# The cold start of the last `up`, each olm pod's container memory: the memory cgroup's anonymous RSS (cgroup v1
# `total_rss`; `anon` under v2) and the processes' VmRSS (which adds file-backed pages, e.g. the binary), its
# role, and the image sizes.
measure() {
  [ -f "$STATE/cold-start-seconds" ] && echo "cold start to Ready operator pods: $(cat "$STATE/cold-start-seconds") s"
  local mem; mem=$(awk '$9 == "cgroup" && $NF ~ /memory/ {print $5; exit}' /proc/self/mountinfo)
  [ -n "$mem" ] || mem=/sys/fs/cgroup
  local line pod uid cid
  kc -n olm get pods -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.status.containerStatuses[0].containerID}{"\n"}{end}' |
  while read -r pod uid cid; do
    cid=${cid#containerd://}
    local dir; dir=$(find "$mem" -maxdepth 4 -type d -name "pod$uid" 2>/dev/null | head -1)
    local stat="$dir/$cid/memory.stat"
    local rss="?" vmrss="?"
    if [ -f "$stat" ]; then
      rss=$(awk '$1 == "total_rss" || $1 == "anon" {printf "%.1f MiB", $2/1048576; exit}' "$stat")
      # VmRSS of the container's processes (anonymous + file-backed pages such as the binary's text).
      vmrss=$(for p in $(cat "$dir/$cid/cgroup.procs" 2>/dev/null); do awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null; done |
        awk '{s += $1} END {printf "%.1f MiB", s/1024}')
    fi
    local role=""
    case "$pod" in
      olm-operator-*|catalog-operator-*)
        local lease=${pod%-*-*}
        if [ "$(kc -n olm get lease "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" = "$pod" ]; then role=leader; else role=standby; fi ;;
    esac
    printf '%-36s cgroup rss %10s   VmRSS %10s   %s\n' "$pod" "$rss" "$vmrss" "$role"
  done
  OLM_RS_IMAGES="$IMAGES" hack/images.sh sizes
}

case "${1:-up}" in
  up) up ;;
  down) down; log "down" ;;
  build) build ;;
  check) why=$(unsupported); if [ -n "$why" ]; then echo "$why"; exit 1; fi; echo "ok" ;;
  status) for p in "${PROCS[@]}"; do if alive "$p"; then echo "$p running (pid $(cat "$STATE/$p.pid"))"; else echo "$p stopped"; fi; done
    if [ -f "$OCI_DIR/registry.pid" ] && kill -0 "$(cat "$OCI_DIR/registry.pid")" 2>/dev/null; then
      echo "oci-registry running (pid $(cat "$OCI_DIR/registry.pid"))"; else echo "oci-registry stopped"; fi ;;
  env) echo "export KUBECONFIG=$STATE/kubeconfig" ;;
  registry) echo "$(cat "$STATE/host-ip"):$OCI_PORT" ;;
  measure) measure ;;
  import) shift; for a in "$@"; do ctr -a "$STATE/containerd.sock" -n k8s.io images import "$a" >&2; done ;;
  *) echo "usage: $0 up|down|status|build|env|registry|check|measure|import ARCHIVE..." >&2; exit 2 ;;
esac
