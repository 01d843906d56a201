#!/usr/bin/env bash
# Builds the images, loads them into a kind cluster, installs the chart with a simulated
# sandboxd on every worker, and runs the end-to-end suite against that cluster.
# Needs docker (with BuildKit), kind, kubectl, helm 3 and node 20+ on PATH.
#
#   e2e/kind/run.sh              # create (or reuse) the cluster, build, install, test
#   KEEP_CLUSTER=0 e2e/kind/run.sh   # delete the cluster afterwards
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/e2e/kind"
CLUSTER="${KIND_CLUSTER_NAME:-sandbox-scale}"
REGISTRY="${IMAGE_REGISTRY:-localhost/sandbox-scale}"
TAG="${IMAGE_TAG:-dev}"
NAMESPACE="${NAMESPACE:-sandbox-system}"
RELEASE="${RELEASE:-sandbox-scale}"
KEEP_CLUSTER="${KEEP_CLUSTER:-1}"
APPS=(claim-controller warmpool-driver inventory-publisher sandbox-apiserver sandboxd-sim)
WORK="$(mktemp -d)"
KUBECONFIG_FILE="$WORK/kubeconfig"

log() { printf '\n==> %s\n' "$*"; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "run.sh needs $1 on PATH" >&2; exit 1; }; }
cleanup() {
  rm -rf "$WORK"
  if [[ "$KEEP_CLUSTER" == "0" ]]; then kind delete cluster --name "$CLUSTER" || true; fi
}
trap cleanup EXIT

for tool in docker kind kubectl helm node npx; do need "$tool"; done

log "cluster $CLUSTER"
if ! kind get clusters | grep -qx "$CLUSTER"; then
  kind create cluster --name "$CLUSTER" --config "$HERE/kind-config.yaml" --wait 120s
fi
kind get kubeconfig --name "$CLUSTER" > "$KUBECONFIG_FILE"
export KUBECONFIG="$KUBECONFIG_FILE"

log "images ($REGISTRY/*:$TAG)"
for app in "${APPS[@]}"; do
  DOCKER_BUILDKIT=1 docker build --build-arg APP="$app" -f "$ROOT/Dockerfile" -t "$REGISTRY/$app:$TAG" "$ROOT"
  kind load docker-image --name "$CLUSTER" "$REGISTRY/$app:$TAG"
done

log "namespace $NAMESPACE and the fleet token"
kubectl create namespace "$NAMESPACE" --dry-run=client -o yaml | kubectl apply -f -
if ! kubectl -n "$NAMESPACE" get secret sandbox-scale-fleet-token >/dev/null 2>&1; then
  kubectl -n "$NAMESPACE" create secret generic sandbox-scale-fleet-token \
    --from-literal=token="$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("hex"))')"
fi

log "simulated sandboxd on every worker"
sed "s|SIM_IMAGE|$REGISTRY/sandboxd-sim:$TAG|" "$HERE/sandboxd-sim.yaml" | kubectl apply -f -
kubectl -n "$NAMESPACE" rollout status daemonset/sandboxd-sim --timeout=180s

log "helm upgrade --install $RELEASE"
helm upgrade --install "$RELEASE" "$ROOT/charts/sandbox-scale" \
  --namespace "$NAMESPACE" \
  --set image.registry="$REGISTRY" \
  --set image.tag="$TAG" \
  --set image.pullPolicy=Never \
  --wait --timeout 5m
kubectl wait --for=condition=Available apiservice/v1beta1.agents.x-k8s.io --timeout=120s
kubectl get sandboxes -A >/dev/null

log "end-to-end suite"
# The suite's global setup uses an existing cluster when these are set, instead of starting
# its own control plane; the bin dir holds the kubectl and helm it drives.
BIN="$WORK/bin"
mkdir -p "$BIN"
ln -s "$(command -v kubectl)" "$BIN/kubectl"
ln -s "$(command -v helm)" "$BIN/helm"
cd "$ROOT"
SANDBOX_SCALE_TEST_KUBECONFIG="$KUBECONFIG_FILE" \
SANDBOX_SCALE_TEST_BIN_DIR="$BIN" \
SANDBOX_SCALE_E2E_RELEASE="$RELEASE" \
SANDBOX_SCALE_E2E_NAMESPACE="$NAMESPACE" \
  npx jest -c jest.int.config.cjs '\.e2e\.test\.ts$' "$@"
