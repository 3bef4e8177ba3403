#!/usr/bin/env bash
# Kubernetes control-plane check (not an olm-rs test): a namespace deleted right before kube-apiserver is
# SIGKILLed and restarted (hack/control-plane.sh restart-apiserver) can vanish while objects in it are still
# listed. Usage, with the default plane up: hack/repro-namespace-leftovers.sh [TRIES] [SECONDS-BEFORE-RESTART]
# Each try: a namespace with 20 ConfigMaps and 20 Roles, deleted, then the restart; prints how many are still listed.
set -u
cd "$(dirname "$0")/.."
export KUBECONFIG="${OLM_RS_CLUSTER_DIR:-$HOME/.cache/olm-rs/cluster}/kubeconfig"
for i in $(seq 1 ${1:-5}); do
  ns=repro-$RANDOM
  kubectl create ns $ns >/dev/null
  for j in $(seq 1 20); do kubectl -n $ns create configmap c$j --from-literal=a=b >/dev/null; kubectl -n $ns create role r$j --verb=get --resource=pods >/dev/null; done
  kubectl delete ns $ns --wait=false >/dev/null
  sleep ${2:-0.5}
  hack/control-plane.sh restart-apiserver >/dev/null 2>&1
  for t in $(seq 1 60); do kubectl get ns $ns >/dev/null 2>&1 || break; sleep 1; done
  left=$(kubectl -n $ns get configmaps,roles --no-headers 2>/dev/null | wc -l)
  echo "$ns: namespace gone after ${t}s; objects still listed: $left"
done
