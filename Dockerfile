# One image for every role of the customer data platform: api, features, audience-sync, connectors.
# The role is picked at run time with CDP_ROLES (default: every role in one process).
#
#   docker build -t cdp .
#   docker run --rm -p 8080:8080 cdp start --demo     # embedded runtime: event log and chdb under /app/data
#   docker compose up --build                         # distributed runtime, one container per role
#
# No build step for the server: bin/cdp.mjs runs the TypeScript sources through tsx, a runtime
# dependency. The console's bundle is built in the first stage.
# Debian slim, not Alpine: chdb (the embedded ClickHouse) ships a glibc build of its native library.
# Node 24 (Active LTS; Node 20 reached its end of life on 2026-04-30). The code also runs on Node 20.
# The web console (services/console) is built by Vite, a development tool: in a stage of its own,
# whose only product, services/console/dist, the runtime image copies.
FROM node:24.11.1-bookworm-slim AS console
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund --ignore-scripts
COPY services/console ./services/console
RUN node services/console/build.mjs

FROM node:24.11.1-bookworm-slim

ENV NODE_ENV=production \
    CDP_API_HOST=0.0.0.0 \
    CDP_DATA_DIR=/app/data

WORKDIR /app

# Dependencies first, so that a source change does not reinstall them.
COPY package.json package-lock.json ./
# npm install, not npm ci: chdb names optional native packages that are not on the registry, so
# the lock file lacks them and npm ci refuses it (see .ci/run). Its prepare step finds no Vite
# here and leaves the console to the stage above.
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY bin ./bin
COPY cli ./cli
COPY common ./common
COPY pipelines ./pipelines
COPY services ./services
COPY schemas ./schemas
COPY --from=console /app/services/console/dist ./services/console/dist

# The sources stay root-owned (read-only to the process); only the data directory of the embedded
# runtime is writable, and the cache where decode threads' bundles are built
# (common/runtime/worker-bundle.ts). Mount a volume on /app/data to keep it.
RUN mkdir -p /app/data /app/node_modules/.cache/cdp-workers && chown node:node /app/data /app/node_modules/.cache/cdp-workers
USER node

# 8080: the API (role api); 9464: /health, /ready and /metrics of the roles without the API.
EXPOSE 8080 9464

# No curl in slim images: node's fetch. Probes the port the process serves, as start.ts picks it:
# the API port when the api role runs here, else the metrics port.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "const e=process.env,r=(e.CDP_ROLES||'api').split(',').map((s)=>s.trim()),p=r.includes('api')?e.CDP_API_PORT||8080:e.CDP_METRICS_PORT||9464;fetch('http://127.0.0.1:'+p+'/health',{signal:AbortSignal.timeout(4000)}).then((x)=>process.exit(x.ok?0:1),()=>process.exit(1))"]

ENTRYPOINT ["node", "--max-semi-space-size=64", "bin/cdp.mjs"]
CMD ["start"]
