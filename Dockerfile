# HotKV container image (docs/operations.md, "Docker"):
#
#   docker build -t hotkv .          (or: make docker)
#   docker run -d --name hotkv -p 6379:6379 -v hotkv-data:/data hotkv \
#       /etc/hotkv/hotkv.conf --requirepass "$HOTKV_PASSWORD"
#
# It lives at the repository root because the build needs the whole module (go.mod, cmd/,
# internal/) as its context, and `docker build .` finds it there without -f.

# ---- build: a static binary (no cgo, so no libc to match in the runtime image) ----
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/hotkv-server ./cmd/hotkv-server
# The image's config: the documented defaults (deploy/hotkv.conf) plus deploy/docker.conf's
# container settings (listen on every address, data in /data).
RUN mkdir -p /out/etc/hotkv /out/data \
 && cp deploy/hotkv.conf /out/etc/hotkv/hotkv-defaults.conf \
 && cp deploy/docker.conf /out/etc/hotkv/hotkv.conf

# ---- runtime: distroless static, non-root (uid/gid 65532), no shell ----
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hotkv-server /usr/local/bin/hotkv-server
# The config directory belongs to the server's user so that CONFIG REWRITE can replace
# hotkv.conf (it writes a temporary file beside it, then renames it).
COPY --from=build --chown=65532:65532 /out/etc/hotkv /etc/hotkv
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
VOLUME /data
EXPOSE 6379
# PING from inside the container: loopback, so protected mode lets it in; with a password set,
# pass it as REDISCLI_AUTH (docker run -e REDISCLI_AUTH=...). A large dataset loads before the
# port opens: start-period covers that.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/hotkv-server", "--check-health", "127.0.0.1:6379"]
# SIGTERM (docker stop) writes the final snapshot before exiting: give it time with
# `docker stop -t 300` or `--stop-timeout` on large datasets.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/hotkv-server"]
CMD ["/etc/hotkv/hotkv.conf"]
