#!/usr/bin/env bash
# One command for a release of the host platform, into dist/ (emptied first):
#   snowluma-mcp-<version>-<target>        the stripped release binary
#   snowluma-mcp-<version>-<os>-<arch>.mcpb  the MCP Bundle (scripts/bundle.sh) around that binary
#   server.json                            the MCP Registry entry (packaging/server_json.py)
#   SHA256SUMS                             sha256 of the three files above (`sha256sum -c SHA256SUMS`)
#
# The binary is built by `cargo install --locked --path .` into an empty root
# (target/install-root, kept so CI can start the installed binary): the released binary is
# exactly what that install route builds, with the release profile (fat LTO, one codegen unit:
# about 7 minutes on 2 cores) and the symbols stripped.
#
# Reproducible: two runs on the same machine and toolchain give the same SHA256SUMS, also from
# clones in different directories. Build paths are remapped out of the binary
# (--remap-path-prefix for the checkout and for CARGO_HOME; the standard library's paths are
# already /rustc/<hash>), the bundle's zip entries carry SOURCE_DATE_EPOCH (default: the last
# commit's time) and fixed file modes, and nothing else in the build reads the clock.
# Checked on 2026-12-04 (rustc 1.95.0, x86_64 Linux): two full runs from fresh clones of one
# commit in two different directories, each with its own empty target/, gave identical
# SHA256SUMS, and their binary was byte-identical to a third full build in another checkout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"
fi
export SOURCE_DATE_EPOCH
export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$root=/snowluma-mcp --remap-path-prefix=$cargo_home=/cargo"
export CARGO_PROFILE_RELEASE_STRIP=symbols

metadata="$(cargo metadata --no-deps --locked --format-version 1)"
field() { jq -r --arg f "$1" '.packages[] | select(.name == "snowluma-mcp") | .[$f]' <<<"$metadata"; }
version="$(field version)"
repository="$(field repository)"
target="$(rustc -vV | sed -n 's/^host: //p')"

install_root="$root/target/install-root"
rm -rf "$install_root"
cargo install --locked --path . --root "$install_root"

rm -rf dist
mkdir -p dist
binary="dist/snowluma-mcp-$version-$target"
install -m 0755 "$install_root/bin/snowluma-mcp" "$binary"
bundle="$(bash scripts/bundle.sh "$binary" dist)"
python3 packaging/server_json.py --version "$version" --repository "$repository" \
    --bundle "$bundle" --out dist/server.json
(cd dist && sha256sum "$(basename "$binary")" "$(basename "$bundle")" server.json > SHA256SUMS)
cat dist/SHA256SUMS
