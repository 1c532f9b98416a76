# syntax=docker/dockerfile:1
# snowluma-mcp in a container: MCP on stdio by default, Streamable HTTP by setting.
#
#   docker build -t snowluma-mcp .                    # compiles from source (release profile)
#   docker run -i --rm snowluma-mcp                   # stdio, docs mode; add -e SNOWLUMA_MCP_* as needed
#   docker run --rm -p 127.0.0.1:3001:3001 \
#     -e SNOWLUMA_MCP_TRANSPORT=http -e SNOWLUMA_MCP_LISTEN=0.0.0.0:3001 \
#     -e SNOWLUMA_MCP_PUBLIC_ORIGIN=https://mcp.example.com -e SNOWLUMA_MCP_HTTP_TOKEN=… snowluma-mcp
#
# A release binary built on a glibc host (scripts/release.sh) can be used instead of compiling
# again: --build-arg BINARY_FROM=prebuilt --build-arg PREBUILT_BINARY=dist/snowluma-mcp-<version>-<target>.

# Which stage supplies /out/snowluma-mcp: `build` (compile here) or `prebuilt` (copy a binary).
ARG BINARY_FROM=build

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN CARGO_PROFILE_RELEASE_STRIP=symbols cargo install --locked --path . --root /out \
    && mv /out/bin/snowluma-mcp /out/snowluma-mcp

FROM scratch AS prebuilt
ARG PREBUILT_BINARY=dist/snowluma-mcp
COPY ${PREBUILT_BINARY} /out/snowluma-mcp

FROM ${BINARY_FROM} AS binary

# glibc, libgcc and CA certificates (rustls reads the system store for https:// and wss://),
# nothing else; runs as the image's unprivileged `nonroot` user (uid 65532).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=binary --chmod=0755 /out/snowluma-mcp /usr/local/bin/snowluma-mcp
USER nonroot:nonroot
# Only used with SNOWLUMA_MCP_TRANSPORT=http; a non-loopback listen address also needs
# SNOWLUMA_MCP_PUBLIC_ORIGIN and SNOWLUMA_MCP_HTTP_TOKEN (the server refuses to start otherwise).
EXPOSE 3001
ENTRYPOINT ["/usr/local/bin/snowluma-mcp"]
