#!/usr/bin/env bash
# hack/observe.sh up|down|status|env|install: a real metrics server and a real trace backend with a web UI beside
# the light cluster and the operators.
#
#   Prometheus (Debian `prometheus`, 2.42)  http://127.0.0.1:9090  scrapes every target file in $STATE/targets
#       (file_sd: the cluster tests and the quick start write one per operator process they start) every 2 s and
#       evaluates the plain rule files of deploy/monitoring/rules/.
#   Phoenix (PyPI `arize-phoenix`, a venv)  http://127.0.0.1:6006  OTLP/gRPC on 127.0.0.1:4317; both operators
#       export their spans to it when OTEL_EXPORTER_OTLP_ENDPOINT names it (`eval "$(hack/observe.sh env)"`).
#
# Installs are cached outside the clone (Debian packages; the venv in ~/.cache/olm-rs/phoenix-venv); `up` is
# idempotent (what runs is reused); `down` stops exactly what `up` started and deletes its state (TSDB, Phoenix's
# database, target files): nothing is left behind but the cached installs. Ports: OLM_RS_PROMETHEUS_PORT,
# OLM_RS_PHOENIX_PORT, OLM_RS_PHOENIX_GRPC_PORT.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
CACHE="${OLM_RS_CACHE:-$HOME/.cache/olm-rs}"
STATE="${OLM_RS_OBSERVE_DIR:-$CACHE/observe}"
VENV="$CACHE/phoenix-venv"
PHOENIX_VERSION=20.26.1
PROM_PORT="${OLM_RS_PROMETHEUS_PORT:-9090}"
PHOENIX_PORT="${OLM_RS_PHOENIX_PORT:-6006}"
PHOENIX_GRPC_PORT="${OLM_RS_PHOENIX_GRPC_PORT:-4317}"
log() { echo "== observe: $*" >&2; }

running() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

install() {
  local missing=()
  command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
  command -v chromium >/dev/null || missing+=(chromium fonts-dejavu-core)
  command -v python3 >/dev/null || missing+=(python3 python3-venv)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing from Debian: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
  if ! "$VENV/bin/python" -c "import phoenix, importlib.metadata as m; assert m.version('arize-phoenix') == '$PHOENIX_VERSION'" \
      2>/dev/null; then
    log "installing arize-phoenix $PHOENIX_VERSION into $VENV (once; about 5 minutes, ~850 MB)"
    mkdir -p "$CACHE"
    exec 9>"$CACHE/phoenix-venv.lock"; flock 9
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q "arize-phoenix==$PHOENIX_VERSION"
    exec 9>&-
  fi
}

prometheus_config() {
  mkdir -p "$STATE/targets"
  # The quick start's operators listen on fixed ports; a target that is down is just shown down. The OCI registry
  # (hack/lib/registry.sh) serves its metrics on its port - 10000 (below the ephemeral port range 32768-60999, where a
  # loopback connection's source port once took the metrics port and killed the registry).
  local registry_metrics="127.0.0.1:$(( ${OLM_RS_REGISTRY_PORT:-25000} - 10000 ))"
  cat > "$STATE/targets/quickstart.json" <<JSON
[{"targets": ["127.0.0.1:18080"], "labels": {"job": "olm-operator", "source": "quickstart"}},
 {"targets": ["127.0.0.1:18081"], "labels": {"job": "catalog-operator", "source": "quickstart"}},
 {"targets": ["127.0.0.1:18082"], "labels": {"job": "package-server", "source": "quickstart"}},
 {"targets": ["$registry_metrics"], "labels": {"job": "oci-registry", "source": "control-plane"}}]
JSON
  cat > "$STATE/prometheus.yml" <<YAML
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
  - $REPO/deploy/monitoring/rules/*.yaml
scrape_configs:
  - job_name: olm-rs
    file_sd_configs:
      - files: ["$STATE/targets/*.json"]
        refresh_interval: 2s
YAML
  promtool check config "$STATE/prometheus.yml" >/dev/null
}

wait_http() { # url, what, seconds
  local i
  for i in $(seq 1 "$(( $3 * 5 ))"); do curl -sf -o /dev/null "$1" && return 0; sleep 0.2; done
  log "$2 did not answer on $1 within $3 s; its log: $STATE/$2.log"; tail -20 "$STATE/$2.log" >&2; return 1
}

up() {
  install
  mkdir -p "$STATE"
  prometheus_config
  if running prometheus; then
    curl -sf -X POST "http://127.0.0.1:$PROM_PORT/-/reload" >/dev/null || true
  else
    setsid prometheus --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/tsdb" \
      --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-lifecycle \
      >"$STATE/prometheus.log" 2>&1 < /dev/null & echo $! > "$STATE/prometheus.pid"
  fi
  if ! running phoenix; then
    mkdir -p "$STATE/phoenix"
    PHOENIX_WORKING_DIR="$STATE/phoenix" PHOENIX_HOST=127.0.0.1 PHOENIX_PORT="$PHOENIX_PORT" \
      PHOENIX_GRPC_PORT="$PHOENIX_GRPC_PORT" PHOENIX_TELEMETRY_ENABLED=false \
      setsid "$VENV/bin/phoenix" serve >"$STATE/phoenix.log" 2>&1 < /dev/null & echo $! > "$STATE/phoenix.pid"
  fi
  wait_http "http://127.0.0.1:$PROM_PORT/-/ready" prometheus 60
  # Phoenix migrates its database on the first start (up to ~90 s).
  wait_http "http://127.0.0.1:$PHOENIX_PORT/v1/projects" phoenix 180
  log "Prometheus http://127.0.0.1:$PROM_PORT  Phoenix http://127.0.0.1:$PHOENIX_PORT (OTLP gRPC :$PHOENIX_GRPC_PORT)"
  env_lines
}

down() {
  local p pid
  for p in prometheus phoenix; do
    if running "$p"; then
      pid=$(cat "$STATE/$p.pid")
      kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 -- "-$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$STATE"
  log "stopped; $STATE removed"
}

status() {
  local p
  for p in prometheus phoenix; do
    if running "$p"; then echo "$p running (pid $(cat "$STATE/$p.pid"))"; else echo "$p stopped"; fi
  done
}

env_lines() {
  echo "export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PHOENIX_GRPC_PORT"
  echo "export OLM_RS_PROMETHEUS_URL=http://127.0.0.1:$PROM_PORT"
  echo "export OLM_RS_PHOENIX_URL=http://127.0.0.1:$PHOENIX_PORT"
  echo "export OLM_RS_OBSERVE_TARGETS=$STATE/targets"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  status) status ;;
  env) env_lines ;;
  install) install ;;
  *) echo "usage: $0 up|down|status|env|install" >&2; exit 2 ;;
esac
