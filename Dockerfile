# syntax=docker/dockerfile:1
#
# The nicflow container image: the one static binary (pure Go, CGO off) on
# distroless/static, run as the non-root user 65532. Every role runs from
# it: the command line picks it (nicflow coordinator|worker|storage|serve).
#
# Multi-arch, for servers and DPUs alike:
#   docker buildx build --platform linux/amd64,linux/arm64 -t nicflow:dev .
# (make image does this with the version stamped). The builder stage runs
# on the build machine's own platform and cross-compiles for each target
# (GOOS/GOARCH from TARGETOS/TARGETARCH), so no stage runs under emulation.
#
# cmd/nicflow/deploy_test.go checks this file statically (stages, CGO off,
# non-root user, entrypoint path); docs/deployment.md says what was run.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
# Stamped into internal/buildinfo (nicflow version); .git is not in the
# build context, so the Makefile passes them (make image).
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/nicflow/nicflow/internal/buildinfo.version=${VERSION} -X github.com/nicflow/nicflow/internal/buildinfo.commit=${COMMIT} -X github.com/nicflow/nicflow/internal/buildinfo.date=${DATE}" \
      -o /out/nicflow ./cmd/nicflow
# The directories the image provides, owned by the nicflow user: a named
# volume mounted on one starts with its owner, so the non-root process can
# write keys and data there.
RUN mkdir -p /out/var/lib/nicflow /out/etc/nicflow/keys \
 && chown -R 65532:65532 /out/var/lib/nicflow /out/etc/nicflow \
 && chmod 0700 /out/etc/nicflow/keys

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/nicflow /usr/local/bin/nicflow
COPY --from=build --chown=65532:65532 /out/var/lib/nicflow /var/lib/nicflow
COPY --from=build --chown=65532:65532 /out/etc/nicflow /etc/nicflow
COPY LICENSE /usr/share/doc/nicflow/LICENSE
USER 65532:65532
WORKDIR /var/lib/nicflow
# 7400 coordinator client port (Flight, mutual TLS), 7401 worker control,
# 7500 storage Flight, 7946-7948 gossip (TCP and UDP), 7480-7482 admin
# (/metrics, /status; loopback unless --admin says otherwise), 5433 serve.
EXPOSE 7400 7401 7500 7946 7946/udp 7947 7947/udp 7948 7948/udp 7480 5433
ENTRYPOINT ["/usr/local/bin/nicflow"]
CMD ["--help"]
