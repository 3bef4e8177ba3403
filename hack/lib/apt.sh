# Debian packages for the cluster scripts (sourced by hack/control-plane.sh and hack/full-cluster.sh; needs CACHE
# and log): install what is missing (apt-get update at most every 12 hours).

apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  if [ ! -f "$CACHE/.apt-updated" ] || [ -n "$(find "$CACHE/.apt-updated" -mmin +720 2>/dev/null)" ]; then
    apt-get update -qq >&2; mkdir -p "$CACHE"; touch "$CACHE/.apt-updated"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}
