# syntax=docker/dockerfile:1.7
# Every app's image: one esbuild bundle of apps/$APP/src/main.ts on a distroless Node 22 base, run
# as a non-root user. Build from the repository root, once per app:
#   docker build --build-arg APP=claim-controller -t sandbox-scale/claim-controller:dev .
# APP: claim-controller, warmpool-driver, inventory-publisher, sandbox-apiserver or sandboxd-sim.
# BUILD_IMAGE (node and npm), RUNTIME_IMAGE (node at /nodejs/bin/node) and NODE_MAJOR (the
# runtime's Node major, the bundle's target) let a machine without registry access build the same
# file on images of its own (e2e/src/images/images.ts, docs/adr/0005-local-images.md).
ARG BUILD_IMAGE=node:22-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs22-debian12:nonroot

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
# The package manifests alone first, so the dependency layer is reused until the lockfile or a
# manifest changes, not on every source edit. npm ci needs every workspace's manifest: one line
# each (a workspace missing here fails npm ci, it is never skipped quietly).
COPY package.json package-lock.json ./
COPY apps/claim-controller/package.json apps/claim-controller/
COPY apps/inventory-publisher/package.json apps/inventory-publisher/
COPY apps/sandbox-apiserver/package.json apps/sandbox-apiserver/
COPY apps/sandboxd-sim/package.json apps/sandboxd-sim/
COPY apps/warmpool-driver/package.json apps/warmpool-driver/
COPY libs/e2b-protocol/package.json libs/e2b-protocol/
COPY libs/kube-runtime/package.json libs/kube-runtime/
COPY libs/sandbox-sdk/package.json libs/sandbox-sdk/
COPY libs/sandboxd-client/package.json libs/sandboxd-client/
COPY libs/scale-core/package.json libs/scale-core/
COPY e2e/package.json e2e/
COPY bench/package.json bench/
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund
# Then the sources (tests left out by .dockerignore) and one self-contained file: the runtime
# image needs no node_modules (client-node is ESM-only; esbuild turns it into CommonJS with the rest).
# --keep-names: the is… predicates compare an error's class name, which a bundle that renames one of
# two same-named classes (scale-core's and the SDK's NotFoundError) would otherwise change.
COPY tsconfig.base.json ./
COPY libs/ libs/
COPY apps/ apps/
ARG APP
ARG NODE_MAJOR=22
RUN test -f "apps/${APP}/src/main.ts" || { echo "--build-arg APP must name an app of apps/ (got '${APP}')" >&2; exit 1; }; \
    npx esbuild "apps/${APP}/src/main.ts" --bundle --platform=node --target="node${NODE_MAJOR}" --format=cjs \
      --keep-names --sourcemap --legal-comments=external --outfile=dist/main.js

FROM ${RUNTIME_IMAGE}
WORKDIR /app
COPY --from=build /src/dist/ /app/
USER 65532:65532
# The ports of all the apps (the API server's 6443, the simulator's 7777, metrics 8080, probes
# 8081, the fast path 8443); each app listens on its own, as its flags and the chart say.
EXPOSE 6443 7777 8080 8081 8443
ENV NODE_ENV=production
# The build stamps sandbox_scale_build_info reports (a release passes both; a local build is "unknown").
ARG SANDBOX_SCALE_VERSION=unknown
ARG SANDBOX_SCALE_REVISION=unknown
ENV SANDBOX_SCALE_VERSION=${SANDBOX_SCALE_VERSION} SANDBOX_SCALE_REVISION=${SANDBOX_SCALE_REVISION}
# node runs the app as PID 1, so SIGTERM reaches it and graceful shutdown runs. The app is part of
# the ENTRYPOINT: a pod's `args` (the chart's flags) replace CMD and must reach the app, not node.
ENTRYPOINT ["/nodejs/bin/node", "--enable-source-maps", "/app/main.js"]
