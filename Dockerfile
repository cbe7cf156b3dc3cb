# syntax=docker/dockerfile:1
# One image for every role: RELAY_ROLE (api, worker, all) picks what the process starts.

# Node 24 LTS, pinned to a release so a rebuild gets the same runtime; bump it with .nvmrc.
FROM node:24.21.0-slim AS base
WORKDIR /app
COPY package.json package-lock.json ./

# Compiles the TypeScript with the dev dependencies (tsc); only dist/ leaves this stage.
FROM base AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY worker ./worker
COPY scripts ./scripts
RUN npm run build

# Production dependencies only: no tsx, no compiler, no test tools in the image. The compiler stays in this
# stage: secp256k1's native binding (libsecp256k1, which verifies signatures) is built here from its source for
# the image's platform, in place of the package's prebuilt ones, and must load (see docs/operations.md,
# "Signature verification").
FROM base AS deps
RUN apt-get update && apt-get install -y --no-install-recommends g++ make python3 && rm -rf /var/lib/apt/lists/*
RUN npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/secp256k1/prebuilds && npm rebuild secp256k1 \
 && node -e "require('secp256k1/bindings')" \
 && npm cache clean --force

FROM node:24.21.0-slim
ENV NODE_ENV=production
# The commit the image is built from, reported by the relay_build_info metric (the version comes from
# package.json; the image has no .git to read it from): docker build --build-arg RELAY_COMMIT="$(git rev-parse HEAD)" .
ARG RELAY_COMMIT=unknown
ENV RELAY_COMMIT=$RELAY_COMMIT
WORKDIR /app
# package.json stays: its "type": "module" makes Node load dist/ as ES modules.
COPY --from=base /app/package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Root owns the files and the non-root user only reads them; the root filesystem can be mounted read-only
# (the process writes nothing; /tmp is the one writable path it may need).
USER 10001:10001
EXPOSE 9876 9464
CMD ["node", "dist/src/main.js"]
