#!/usr/bin/env bash
# Checks the container image without a Docker engine: replays the Dockerfile's two stages in empty
# folders, with the base image's Node (node:26) standing in: tools/node-lts's when `make test` has
# installed it, else this machine's. The build stage gets exactly the files the Dockerfile COPYs and
# runs its RUN steps; the image stage gets exactly what it COPYs from the build; then pingroll, from
# the image's files alone, runs a day.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build" "$work/app"
# Build stage: every `COPY <src...> <dest>` that does not come --from a stage.
grep -E '^COPY ' "$repo/Dockerfile" | grep -v -- '--from' | while read -r _ rest; do
  set -- $rest; dest=${!#}; srcs=("${@:1:$#-1}")
  for s in "${srcs[@]}"; do
    if [ "$dest" = ./ ]; then cp -a "$repo/$s" "$work/build/"; else mkdir -p "$work/build/$dest"; cp -a "$repo/$s/." "$work/build/$dest/"; fi
  done
done
# .dockerignore keeps every node_modules folder out of the build context (tools/node-lts has one).
find "$work/build" -name node_modules -type d -prune -exec rm -rf {} +
lts="$repo/tools/node-lts/node_modules/.bin"
[ -x "$lts/node" ] && export PATH="$lts:$PATH"
(cd "$work/build" && npm ci --no-audit --no-fund --loglevel=error && make build && npm prune --omit=dev --no-audit --no-fund --loglevel=error)
# Image stage: `COPY --from=build /app/<src> <dest>`.
grep -E '^COPY --from=build ' "$repo/Dockerfile" | while read -r _ _ src dest; do
  rel=${src#/app/}; mkdir -p "$work/app/$(dirname "$dest")"; cp -a "$work/build/$rel" "$work/app/$dest"
done
cd "$work/app"
node bin/pingroll.js --version
node bin/pingroll.js generate --out "$work/logs" --date 2026-11-01 --sessions 200 --seed 3 >/dev/null
PINGROLL_LOGS="$work/logs" PINGROLL_OUTPUT="$work/out" PINGROLL_WAREHOUSE=none node bin/pingroll.js rollup --date 2026-11-01 2>/dev/null
echo "the image's files run pingroll: $(du -sh "$work/app" | cut -f1) in /app (node_modules $(du -sh node_modules | cut -f1))"
