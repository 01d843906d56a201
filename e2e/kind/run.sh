#!/usr/bin/env bash
# Runs the installed suites (jest.installed.config.cjs) against a kind cluster, installed as a user
# installs: `npm run release` builds every image and the chart and pushes them to a registry
# container beside the cluster, the node's containerd pulls from it, and the suites' global setup
# runs `helm install oci://…` (SANDBOX_SCALE_INSTALLED_CLUSTER names the cluster it installs into).
#
# Needs Linux with docker, kind (the cluster's Kubernetes 1.30 or newer), buildah and node 20+;
# kubectl and helm come from `npm run tools`. Run it as root: it routes the cluster's pod and
# Service networks through the node (the suites call pods and Services directly, as on the local
# node), and kube-apiserver writes the audit log the suites read as root.
#
#   e2e/kind/run.sh                                            # every installed suite
#   e2e/kind/run.sh e2e/test/helm-install.installed.test.ts    # some (jest's path patterns)
#   KEEP_CLUSTER=0 e2e/kind/run.sh                             # delete the cluster and registry afterwards
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/e2e/kind"
CLUSTER="${KIND_CLUSTER_NAME:-sandbox-scale}"
NODE="$CLUSTER-control-plane"
REGISTRY_CONTAINER="$CLUSTER-registry"
REGISTRY_PORT="${REGISTRY_PORT:-5001}"
# the name images are pushed and pulled by: this machine reaches it on loopback, the node through hosts.toml
REGISTRY="localhost:$REGISTRY_PORT"
KEEP_CLUSTER="${KEEP_CLUSTER:-1}"
# kept with the cluster: its kubeconfig, its CA, and the audit log kube-apiserver writes here
STATE="${KIND_STATE_DIR:-$ROOT/.kind/$CLUSTER}"
POD_SUBNET=10.244.0.0/16
SERVICE_SUBNET=10.96.0.0/16

log() { printf '\n==> %s\n' "$*"; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "run.sh needs $1 on PATH" >&2; exit 1; }; }
cleanup() {
  if [[ "$KEEP_CLUSTER" == "0" ]]; then
    kind delete cluster --name "$CLUSTER" || true
    docker rm -f "$REGISTRY_CONTAINER" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

for tool in docker kind buildah node npm npx ip; do need "$tool"; done
if [[ $EUID -ne 0 ]]; then
  echo "run.sh runs as root: it adds routes, and reads the audit log kube-apiserver writes as root" >&2
  exit 1
fi

log "tools (kubectl, helm)"
BIN="$(cd "$ROOT" && npm run --silent tools -- path | tail -n 1)"
export PATH="$BIN:$PATH"

log "registry $REGISTRY_CONTAINER on 127.0.0.1:$REGISTRY_PORT"
if [[ "$(docker inspect -f '{{.State.Running}}' "$REGISTRY_CONTAINER" 2>/dev/null || true)" != "true" ]]; then
  docker rm -f "$REGISTRY_CONTAINER" >/dev/null 2>&1 || true
  docker run -d --restart=always -p "127.0.0.1:$REGISTRY_PORT:5000" --name "$REGISTRY_CONTAINER" registry:2 >/dev/null
fi

log "cluster $CLUSTER"
mkdir -p "$STATE/audit" "$STATE/pki"
(cd "$ROOT" && npx tsx e2e/src/installed/audit-policy.ts "$STATE/audit")
if ! kind get clusters | grep -qx "$CLUSTER"; then
  sed "s|AUDIT_DIR|$STATE/audit|" "$HERE/kind-config.yaml" >"$STATE/kind-config.yaml"
  kind create cluster --name "$CLUSTER" --config "$STATE/kind-config.yaml" ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} --wait 180s
fi
kind get kubeconfig --name "$CLUSTER" >"$STATE/kubeconfig"
chmod 600 "$STATE/kubeconfig"
KUBECONFIG="$STATE/kubeconfig" kubectl get --raw /readyz >/dev/null
if [[ ! -s "$STATE/audit/audit.log" ]]; then
  echo "kube-apiserver of $CLUSTER writes no audit log to $STATE/audit: check the kubeadm patch of kind-config.yaml against your kind version" >&2
  exit 1
fi

log "the node pulls $REGISTRY/* from $REGISTRY_CONTAINER"
docker network connect kind "$REGISTRY_CONTAINER" >/dev/null 2>&1 || true
docker exec "$NODE" mkdir -p "/etc/containerd/certs.d/$REGISTRY"
printf '[host."http://%s:5000"]\n  capabilities = ["pull", "resolve"]\n' "$REGISTRY_CONTAINER" |
  docker exec -i "$NODE" sh -c "cat >/etc/containerd/certs.d/$REGISTRY/hosts.toml"

log "routes to $POD_SUBNET and $SERVICE_SUBNET through the node"
NODE_IP="$(docker inspect -f '{{.NetworkSettings.Networks.kind.IPAddress}}' "$NODE")"
for net in "$POD_SUBNET" "$SERVICE_SUBNET"; do ip route replace "$net" via "$NODE_IP"; done

log "the cluster's CA and front-proxy client"
for f in ca.crt ca.key front-proxy-client.crt front-proxy-client.key; do
  docker cp "$NODE:/etc/kubernetes/pki/$f" "$STATE/pki/$f"
done
chmod 600 "$STATE"/pki/*.key

cat >"$STATE/cluster.json" <<JSON
{
  "kubeconfig": "$STATE/kubeconfig",
  "pki": "$STATE/pki",
  "registry": "$REGISTRY",
  "nodeExec": ["docker", "exec", "-i"],
  "auditLog": "$STATE/audit/audit.log"
}
JSON

log "installed suites"
cd "$ROOT"
SANDBOX_SCALE_INSTALLED_CLUSTER="$STATE/cluster.json" npx jest -c jest.installed.config.cjs "$@"
