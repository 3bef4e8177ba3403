#!/usr/bin/env bash
# Remove olm-rs from the cluster kubectl points at: the APIService, the Deployments, Services, RBAC,
# NetworkPolicies, PodDisruptionBudgets, the default catalog and OperatorGroup (every object of olm-rs.yaml), the
# Roles, ClusterRoles and their bindings the operators granted themselves (labels olm-rs.io/catalog-operator-grant,
# olm-rs.io/olm-operator-grant and olm-rs.io/impersonation-grant), the ClusterRoles
# olm-operator made for the olm-operators OperatorGroup (label olm.owner=olm-operators), and the `olm`
# namespace with its Leases and serving Secret, unless operators are installed in it (then it stays, and says so).
# Operators olm-rs installed elsewhere keep running, with their CSVs, Subscriptions and other custom resources.
#
#   uninstall.sh [--delete-crds]
#
# --delete-crds also deletes the operators.coreos.com CRDs, and with them every CSV, Subscription, InstallPlan,
# CatalogSource, OperatorGroup and OperatorCondition in the cluster (the CSVs' finalizers dropped first: olm-operator
# no longer runs to remove them); the operators' Deployments, owned by their CSVs, are then garbage-collected. The manifests are those of the installed release, read from the folder of
# this script (or $OLM_RS_RELEASE_BASE/VERSION with VERSION as a second argument: uninstall.sh --delete-crds 1.2.0).
# KUBECTL names the kubectl to use.
set -euo pipefail
DELETE_CRDS=0
VERSION=""
for a in "$@"; do
  case "$a" in
    --delete-crds) DELETE_CRDS=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "uninstall.sh: unknown flag $a" >&2; exit 2 ;;
    *) VERSION=$a ;;
  esac
done
HERE=$(cd "$(dirname "$0")" && pwd)
KUBECTL=${KUBECTL:-kubectl}
NS=olm
GRANT_LABELS=(olm-rs.io/catalog-operator-grant olm-rs.io/olm-operator-grant olm-rs.io/impersonation-grant)
OG_ROLES=olm.owner=olm-operators,olm.owner.kind=OperatorGroup,olm.owner.namespace=$NS
log() { echo "uninstall.sh: $*" >&2; }

assets=$HERE
if [ -n "$VERSION" ]; then
  BASE=${OLM_RS_RELEASE_BASE:-$(dirname "$HERE")}
  assets=$(mktemp -d); trap 'rm -rf "$assets"' EXIT
  for f in crds.yaml olm-rs.yaml; do
    case "$BASE" in
      http://*|https://*) curl -fsSL "$BASE/$VERSION/$f" -o "$assets/$f" ;;
      *) cp "$BASE/$VERSION/$f" "$assets/$f" ;;
    esac
  done
fi

# The aggregated API first (discovery of a missing backend slows every client), then the Deployments, so nothing
# recreates what follows, then the rest of olm-rs.yaml except the namespace.
"$KUBECTL" delete apiservice v1.packages.operators.coreos.com --ignore-not-found >/dev/null
"$KUBECTL" -n "$NS" delete deployment olm-operator catalog-operator package-server olm-rs-catalog \
  --ignore-not-found --wait=true >/dev/null
# kubectl reports kinds it cannot map (no CRDs) and goes on with the others.
mapfile -t objects < <("$KUBECTL" get -f "$assets/olm-rs.yaml" -o name --ignore-not-found 2>/dev/null | grep -vx "namespace/$NS" || true)
[ ${#objects[@]} -eq 0 ] || "$KUBECTL" -n "$NS" delete "${objects[@]}" --ignore-not-found --wait=true >/dev/null
for label in "${GRANT_LABELS[@]}"; do
  "$KUBECTL" delete role,rolebinding -A -l "$label" --ignore-not-found >/dev/null
  "$KUBECTL" delete clusterrole,clusterrolebinding -l "$label" --ignore-not-found >/dev/null
done
# The admin/edit/view ClusterRoles olm-operator made for the olm-operators OperatorGroup (deleted above, while
# olm-operator no longer runs to clean them up).
"$KUBECTL" delete clusterrole -l "$OG_ROLES" --ignore-not-found >/dev/null

if [ "$DELETE_CRDS" = 1 ]; then
  log "deleting the CRDs and every olm custom resource"
  # CSVs carry the operators.coreos.com/csv-cleanup finalizer, which olm-operator (stopped above) removes: drop it,
  # or deleting the CRD waits on those CSVs for good.
  { "$KUBECTL" get csv -A -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}' \
    2>/dev/null || true; } | while read -r ns name; do
    [ -n "$name" ] || continue
    "$KUBECTL" -n "$ns" patch csv "$name" --type=json \
      -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null 2>&1 || true
  done
  "$KUBECTL" delete -f "$assets/crds.yaml" --ignore-not-found --wait=true >/dev/null
fi

csvs=""
if "$KUBECTL" get crd clusterserviceversions.operators.coreos.com >/dev/null 2>&1; then
  csvs=$("$KUBECTL" -n "$NS" get csv -o name 2>/dev/null || true)
fi
if [ -n "$csvs" ]; then
  log "namespace $NS kept: operators are installed in it ($(echo "$csvs" | tr '\n' ' '))"
else
  "$KUBECTL" delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
fi
log "olm-rs removed$([ "$DELETE_CRDS" = 1 ] && echo ", CRDs included" || echo "; CRDs and custom resources kept (--delete-crds removes them)")"
