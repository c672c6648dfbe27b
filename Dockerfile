# pingroll's container image (deploy/: AWS Batch on Fargate). Built by `cdk deploy` from this folder;
# the build stage compiles exactly as `make build` does, the image keeps what a run reads.
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci refuses a lock whose other platforms' optional builds a registry lacks (see the Makefile).
RUN npm ci --no-audit --no-fund || npm install --no-audit --no-fund
COPY Makefile tsconfig.json ./
COPY bin bin
COPY lib lib
COPY state state
COPY ingest ingest
COPY rollup rollup
COPY export export
COPY infra infra
COPY tools tools
COPY bench bench
COPY test test
RUN make build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY --from=build /app/bin bin
COPY --from=build /app/export/warehouse/sql export/warehouse/sql
USER node
ENTRYPOINT []
CMD ["node", "bin/pingroll.js", "--help"]
