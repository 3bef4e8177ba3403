# A real OCI registry on loopback: Debian's `docker-registry` (the distribution project's reference
# implementation of the OCI distribution API), sourced by hack/control-plane.sh and hack/registry.sh (needs CACHE,
# log and apt_install). Its storage lives in $OLM_RS_REGISTRY_DIR (default ~/.cache/olm-rs/registry), outside the
# clone, so pushed images survive restarts like the Kubernetes binaries do. Address: 127.0.0.1:$OLM_RS_REGISTRY_PORT
# (default 25000), plain HTTP (loopback only).

REGISTRY_DIR="${OLM_RS_REGISTRY_DIR:-$CACHE/registry}"
REGISTRY_PORT="${OLM_RS_REGISTRY_PORT:-25000}"
REGISTRY_ADDR="127.0.0.1:$REGISTRY_PORT"
# Its Prometheus metrics (`registry_http_*`, `registry_storage_*`) on the debug listener, scraped by hack/observe.sh.
REGISTRY_METRICS_ADDR="127.0.0.1:$((REGISTRY_PORT - 10000))"

registry_alive() { [ -f "$REGISTRY_DIR/registry.pid" ] && kill -0 "$(cat "$REGISTRY_DIR/registry.pid")" 2>/dev/null; }

registry_up() {
  command -v docker-registry >/dev/null || apt_install docker-registry
  # The package enables a system service on :5000; ours is a separate process on its own port and folder.
  mkdir -p "$REGISTRY_DIR/data"
  if registry_alive; then return 0; fi
  cat > "$REGISTRY_DIR/config.yml" <<CFG
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: $REGISTRY_ADDR
  headers:
    X-Content-Type-Options: [nosniff]
  debug:
    addr: $REGISTRY_METRICS_ADDR
    prometheus:
      enabled: true
      path: /metrics
CFG
  setsid docker-registry serve "$REGISTRY_DIR/config.yml" >>"$REGISTRY_DIR/registry.log" 2>&1 < /dev/null &
  echo $! > "$REGISTRY_DIR/registry.pid"
  local deadline=$(( $(date +%s) + 20 ))
  until curl -sf "http://$REGISTRY_ADDR/v2/" >/dev/null 2>&1; do
    registry_alive || { log "docker-registry died"; tail -20 "$REGISTRY_DIR/registry.log" >&2; exit 1; }
    [ "$(date +%s)" -ge "$deadline" ] && { log "registry not ready after 20 s"; exit 1; }
    sleep 0.2
  done
  log "OCI registry http://$REGISTRY_ADDR (docker-registry, data in $REGISTRY_DIR)"
}

registry_down() {
  if registry_alive; then
    local pid; pid=$(cat "$REGISTRY_DIR/registry.pid"); kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$REGISTRY_DIR/registry.pid"
}
