#!/usr/bin/env bash
# Checks, in well under a second, everything `bash scripts/test.sh` needs besides Rust itself,
# and names each missing piece with the Debian package that provides it (README
# "Prerequisites"). Exits 1 when anything is missing, after listing all of it.
# Uses bash builtins only, so it runs with any PATH.
set -uo pipefail

missing=()

have() { command -v "$1" >/dev/null 2>&1; }

if ! have cargo; then
    missing+=("cargo (Rust 1.88 or newer): install rustup from https://rustup.rs, then \`rustup default stable\`")
fi
if ! have cc && ! have gcc && ! have clang; then
    missing+=("a C toolchain (cc, for the ring crate and linking): apt-get install build-essential")
fi

if ! have python3; then
    missing+=("python3 3.10 or newer with venv: apt-get install python3 python3-venv")
elif ! python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
    missing+=("python3 3.10 or newer (found $(python3 --version 2>&1)): apt-get install python3 (Debian 12 or newer)")
elif ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    missing+=("python3's venv module with pip (the python client tests use a virtualenv): apt-get install python3-venv")
fi

if ! have node; then
    missing+=("node 20 or newer: apt-get install nodejs (Debian 13; on Debian 12 use NodeSource's node 20+ packages or nvm)")
else
    version="$(node --version 2>/dev/null)"
    version="${version#v}"
    major="${version%%.*}"
    if ! [[ "$major" =~ ^[0-9]+$ ]] || [ "$major" -lt 20 ]; then
        missing+=("node 20 or newer (found ${version:-no version}): Debian 12's nodejs is 18; use NodeSource's node 20+ packages or nvm")
    fi
fi
if ! have npm; then
    missing+=("npm (installs the TypeScript client and panel test packages): apt-get install npm")
fi

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
    missing+=("Chromium at $chromium (the preview panel's browser tests): apt-get install chromium, or set CHROMIUM_PATH")
fi

if [ "${#missing[@]}" -gt 0 ]; then
    echo "scripts/test.sh cannot run: missing prerequisites" >&2
    for item in "${missing[@]}"; do
        echo "  - $item" >&2
    done
    exit 1
fi
