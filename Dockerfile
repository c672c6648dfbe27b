# pingroll's container image (deploy/: AWS Batch on Fargate). Built by `cdk deploy` from this folder;
# the build stage compiles exactly as `make build` does, the image keeps what a run reads.
# Node 26: the Active LTS (supported to April 2029); the suite runs on it too (`make test`, tools/node-lts).
FROM node:26-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the lock, as everywhere else (the Makefile checks it is complete first: tools/check-lock.mjs).
RUN npm ci --no-audit --no-fund
COPY Makefile tsconfig.json ./
COPY bin bin
COPY datasets datasets
COPY lib lib
COPY state state
COPY ingest ingest
COPY rollup rollup
COPY export export
COPY infra infra
COPY jobs jobs
COPY cli cli
COPY tools tools
COPY bench bench
COPY test test
RUN make build && npm prune --omit=dev

FROM node:26-bookworm-slim
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY --from=build /app/bin bin
COPY --from=build /app/export/warehouse/sql export/warehouse/sql
USER node
ENTRYPOINT []
CMD ["node", "bin/pingroll.js", "--help"]
