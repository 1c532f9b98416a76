#!/usr/bin/env bash
# Creates (if missing) the repo-local virtualenv /work/main/.venv — i.e. <repo>/.venv — and
# installs the pinned python test requirements (tests/python/requirements.txt) into it.
# Idempotent: a second run with unchanged requirements does no network work.
# Needs only python3 (>= 3.10) with pip/venv and access to PyPI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQ="$ROOT/tests/python/requirements.txt"
STAMP="$VENV/.requirements.sha256"
PYTHON="${PYTHON:-python3}"

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "python-env: $PYTHON not found; install python3 (3.10 or newer)" >&2
    exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
    echo "python-env: $("$PYTHON" --version 2>&1) is too old; mcp 2.3.0 needs python 3.10 or newer" >&2
    exit 1
fi

# A venv without a working interpreter or pip (interrupted creation, moved repo) is rebuilt.
if [ -d "$VENV" ] && ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    echo "python-env: $VENV is broken; recreating it" >&2
    rm -rf "$VENV"
fi

if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PYTHON" -m venv "$VENV" >/dev/null 2>&1; then
        # Debian's python3 without python3-venv has no ensurepip: fall back to virtualenv from PyPI.
        rm -rf "$VENV"
        "$PYTHON" -m pip install --quiet --disable-pip-version-check --user virtualenv \
            || "$PYTHON" -m pip install --quiet --disable-pip-version-check --user --break-system-packages virtualenv
        "$PYTHON" -m virtualenv --quiet "$VENV"
    fi
fi

want="$(sha256sum "$REQ" | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$want" != "$have" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$REQ"
    echo "$want" > "$STAMP"
fi
