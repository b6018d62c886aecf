# The Whetstone image: the server (the default command) and the worker daemon (the command
# `node --import tsx gpu-worker/daemon.ts`), as deploy/kubernetes/ runs them. Build it from the
# repository's root:
#
#   docker build -t registry.example.com/whetstone:0.1.0 .
#
# docs/deploying.md says how to run it. The web app is built here, so the server starts without
# building it (server/next-app.ts checks the build against its sources at start).

FROM node:20-bookworm-slim AS build
# A C++ compiler for the engine's native CPU kernels (npm ci builds them; no -march flag, so the
# result runs on any x86-64 or arm64 CPU).
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make python3 \
 && rm -rf /var/lib/apt/lists/*
# The npm of the project's machines (11; the image has 10): it reads package.json's allowScripts,
# so the same install scripts run here as there.
RUN npm install -g npm@11.19.1 --no-audit --no-fund
WORKDIR /app
COPY . .
# npm ci also generates the Prisma client and builds the native kernels (scripts/postinstall.mjs).
# The web app is built by the server's own build step, which also records what it was built from.
RUN npm ci --no-audit --no-fund \
 && NEXT_TELEMETRY_DISABLED=1 node --import tsx --input-type=module \
      -e "const { ensureNextBuild } = await import('./server/next-app.ts'); await ensureNextBuild((line) => console.log(line));" \
 && rm -rf .next/cache

FROM node:20-bookworm-slim
# tini: signals reach node, and the job processes' orphans are reaped. libvulkan1: the Vulkan
# loader, through which WebGPU reaches the GPU (the driver's own part comes from the host).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini libvulkan1 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app /app
# Writable places for the non-root user; under Kubernetes they are volumes (deploy/kubernetes/).
RUN mkdir -p /var/lib/whetstone /app/.next/cache \
 && chown 1000:1000 /var/lib/whetstone /app/.next/cache
ENV HOST=0.0.0.0 \
    PORT=3000 \
    WHETSTONE_HOME=/var/lib/whetstone \
    HOME=/tmp \
    NEXT_TELEMETRY_DISABLED=1
# The node image's user `node`, by number, so that Kubernetes can check runAsNonRoot.
USER 1000:1000
EXPOSE 3000
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--import", "tsx", "server/main.ts"]
