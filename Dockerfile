# syntax=docker/dockerfile:1
# The service's image: docs/operations.md says how to configure and run it.
#
# Production runs the server bundled from the TypeScript sources by esbuild (scripts/build.ts, run
# while the image is built): the bundle the tests and benchmarks start too, with no TypeScript loader
# thread in the running process.

ARG NODE_IMAGE=node:20-bookworm-slim

# --- dependencies: production packages only. better-sqlite3 downloads a prebuilt binary when one matches
# the platform and compiles otherwise, which needs a toolchain that never reaches the final image.
FROM ${NODE_IMAGE} AS dependencies
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# --- runtime: the packages, the sources and the contract the service serves; runs as `node`.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    METRICS_HOST=0.0.0.0 \
    METRICS_PORT=9464 \
    DATABASE_URL=sqlite:/app/data/service.sqlite
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY generated ./generated
COPY spec ./spec
COPY src ./src
# The docs page shows the changelog, read when the app starts.
COPY docs/changelog.md ./docs/changelog.md
COPY scripts/build.ts ./scripts/build.ts
RUN node --import tsx scripts/build.ts
# The embedded SQLite database lives here unless DATABASE_URL names PostgreSQL.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
USER node
EXPOSE 8080 9464
# Ready means the database answers (GET /readyz), not only that the process is alive.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself is PID 1 (no npm in between), so SIGTERM reaches the server's graceful drain. The Node
# flags are the server's (test/support/server-process.ts, SERVER_NODE_FLAGS; docs/performance.md).
CMD ["node", "--max-semi-space-size=2", "--enable-source-maps", "--import", "./.build/tracing.js", ".build/server.js"]
