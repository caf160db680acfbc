# syntax=docker/dockerfile:1
# Build: the pinned Bun from the npm registry compiles one self-contained binary
# (migrations, PGlite's assets and the portal and console of web/ inside).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY tsconfig.json bunfig.toml ./
COPY src ./src
COPY migrations ./migrations
COPY web ./web
COPY scripts/portal-size.ts ./scripts/
RUN npx tsc --noEmit -p . && npm run build

# Run: a small image with the binary only, as a non-root user.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
  && rm -rf /var/lib/apt/lists/* \
  && useradd --system --uid 10001 --home-dir /var/lib/vpn-api --create-home vpn
COPY --from=build /app/dist/vpn-api /usr/local/bin/vpn-api
USER vpn
WORKDIR /var/lib/vpn-api
ENV PORT=3000 HOST=0.0.0.0 DATA_DIR=/var/lib/vpn-api/data
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${PORT}/v1/status" || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/vpn-api"]
