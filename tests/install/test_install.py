"""The install routes, checked on what `bash scripts/release.sh` built (tests/install/run.sh):

* `cargo install`: the binary in the empty root that release.sh installed into
  (target/install-root) starts in docs mode and lists its tools to the python MCP SDK;
* the registry entry: dist/server.json validates against the MCP Registry's published
  server.json schema (taken from a PyPI wheel, see registry-schema.txt) and agrees with the
  crate's version and the built bundle;
* the release: SHA256SUMS verifies, and packing the bundle again from the same binary gives
  the same bytes;
* the container: built from the Dockerfile with the release binary and spoken to over stdio,
  where a container runtime answers `docker info`; elsewhere it is skipped, by name.

The bundle itself is started as a host would in packaging/mcpb/test/bundle.test.mjs.
"""

from __future__ import annotations

import calendar
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dist"
INSTALL_ROOT = REPO / "target" / "install-root"
SCHEMA_CACHE = REPO / "target" / "registry-schema"
SCHEMA_MEMBER = "skillsaw/schemas/mcp_registry/v2025_12_11/server.schema.json"
DOCS_TOOLS = ["list_actions", "search_actions", "get_action", "list_categories", "get_runtime_info", "preview_message", "read_more"]
#: Bounds that only a hang reaches.
SESSION_TIMEOUT_S = 60
READ_TIMEOUT_S = 30


def crate() -> dict[str, Any]:
    return tomllib.loads((REPO / "Cargo.toml").read_text(encoding="utf-8"))["package"]


def only(pattern: str) -> Path:
    found = sorted(DIST.glob(pattern))
    if len(found) != 1:
        pytest.fail(f"expected one {pattern} in {DIST}, found {found}: run `bash scripts/release.sh`", pytrace=False)
    return found[0]


def release_binary() -> Path:
    found = [p for p in DIST.glob("snowluma-mcp-*") if p.suffix != ".mcpb"]
    if len(found) != 1:
        pytest.fail(f"expected one release binary in {DIST}, found {found}: run `bash scripts/release.sh`", pytrace=False)
    return found[0]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def docs_session(params: StdioServerParameters) -> tuple[list[str], dict[str, Any]]:
    """Lists tools and calls get_runtime_info over stdio with the SDK's client."""

    async def main():
        with anyio.fail_after(SESSION_TIMEOUT_S):
            async with Client(params, mode="legacy", read_timeout_seconds=READ_TIMEOUT_S) as client:
                listing = await client.list_tools(cache_mode="bypass")
                info = await client.call_tool("get_runtime_info", {})
                assert not info.is_error, info
                return [tool.name for tool in listing.tools], info.structured_content["result"]

    return anyio.run(main)


# ----------------------------------------------------------------------------- cargo install


def test_cargo_install_into_an_empty_root_gives_a_working_binary():
    binary = INSTALL_ROOT / "bin" / "snowluma-mcp"
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no installed binary at {binary}: run `bash scripts/release.sh`", pytrace=False)
    # cargo's own record of the install: this root holds exactly the one crate, from this path.
    installs = json.loads((INSTALL_ROOT / ".crates2.json").read_text())["installs"]
    assert list(installs) == [f"snowluma-mcp {crate()['version']} (path+file://{REPO})"], installs
    assert installs[next(iter(installs))]["bins"] == ["snowluma-mcp"]
    # No SNOWLUMA_MCP_* variables (the SDK passes only HOME, PATH and the like): docs mode.
    tools, info = docs_session(StdioServerParameters(command=str(binary), args=[]))
    assert tools == DOCS_TOOLS
    assert info["mode"] == "docs" and info["action_count"] > 100, info
    # The release binary is the installed one.
    assert sha256(binary) == sha256(release_binary())


# ----------------------------------------------------------------------------- registry entry


@pytest.fixture(scope="module")
def registry_schema() -> dict[str, Any]:
    """The MCP Registry's server.json schema from the pinned, hash-checked PyPI wheel."""
    wheels = sorted(SCHEMA_CACHE.glob("skillsaw-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--no-deps", "--require-hashes", "-r", str(Path(__file__).with_name("registry-schema.txt")),
             "-d", str(SCHEMA_CACHE)],
            check=True,
        )
        wheels = sorted(SCHEMA_CACHE.glob("skillsaw-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        schema = json.loads(wheel.read(SCHEMA_MEMBER))
    jsonschema.Draft7Validator.check_schema(schema)
    return schema


def server_json() -> dict[str, Any]:
    return json.loads((DIST / "server.json").read_text(encoding="utf-8"))


def test_server_json_is_valid_against_the_registry_schema(registry_schema):
    entry = server_json()
    assert entry["$schema"] == registry_schema["$id"]
    validator = jsonschema.Draft7Validator(registry_schema, format_checker=jsonschema.FormatChecker())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(entry)]
    assert errors == []
    # The validator is not vacuous: entries the registry refuses fail it.
    for break_it in (
        lambda e: e["packages"][0].pop("transport"),
        lambda e: e["packages"][1].update(fileSha256="not-a-digest"),
        lambda e: e.update(name="no-namespace"),
        lambda e: e.update(description="x" * 101),
    ):
        broken = copy.deepcopy(entry)
        break_it(broken)
        assert not validator.is_valid(broken), broken


def test_server_json_agrees_with_the_crate_and_the_bundle():
    entry, package = server_json(), crate()
    bundle = only("*.mcpb")
    version = package["version"]
    assert entry["version"] == version
    assert entry["repository"]["url"] == tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["repository"]
    by_type = {p["registryType"]: p for p in entry["packages"]}
    assert set(by_type) == {"cargo", "mcpb"}
    assert by_type["cargo"]["identifier"] == package["name"]
    assert by_type["cargo"]["version"] == version
    assert by_type["mcpb"]["version"] == version
    assert by_type["mcpb"]["fileSha256"] == sha256(bundle)
    assert by_type["mcpb"]["identifier"].endswith(f"/releases/download/v{version}/{bundle.name}")
    assert bundle.name.startswith(f"snowluma-mcp-{version}-")
    with zipfile.ZipFile(bundle) as archive:
        assert json.loads(archive.read("manifest.json"))["version"] == version


# ----------------------------------------------------------------------------- release


def test_the_checksums_verify_every_release_file():
    sums = (DIST / "SHA256SUMS").read_text().splitlines()
    listed = sorted(line.split("  ", 1)[1] for line in sums)
    shipped = sorted(p.name for p in DIST.iterdir() if p.name != "SHA256SUMS")
    assert listed == shipped
    subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=DIST, check=True)


def test_packing_the_bundle_again_from_the_same_binary_gives_the_same_bytes(tmp_path):
    bundle = only("*.mcpb")
    binary = release_binary()
    # The same SOURCE_DATE_EPOCH as the release (its default, the last commit's time, moves
    # with every commit made since): the time its zip entries carry.
    with zipfile.ZipFile(bundle) as archive:
        stamps = {calendar.timegm(entry.date_time + (0, 0, 0)) for entry in archive.infolist()}
    assert len(stamps) == 1, stamps
    out = subprocess.run(
        ["bash", "scripts/bundle.sh", str(binary), str(tmp_path)],
        cwd=REPO, check=True, capture_output=True, text=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": str(stamps.pop())},
    ).stdout.strip()
    assert Path(out).name == bundle.name
    assert sha256(Path(out)) == sha256(bundle)


# ----------------------------------------------------------------------------- container


def container_runtime() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return None
    answer = subprocess.run([docker, "info"], capture_output=True, timeout=60)
    return docker if answer.returncode == 0 else None


def test_container_image_serves_mcp_on_stdio_as_a_non_root_user():
    docker = container_runtime()
    if docker is None:
        pytest.skip("container build: no container runtime here (`docker info` fails), so the Dockerfile was not built")
    binary = release_binary()
    tag = "snowluma-mcp:install-test"
    subprocess.run(
        [docker, "build", "--build-arg", "BINARY_FROM=prebuilt",
         "--build-arg", f"PREBUILT_BINARY={binary.relative_to(REPO)}", "-t", tag, "."],
        cwd=REPO, check=True,
    )
    user = subprocess.run([docker, "image", "inspect", "-f", "{{.Config.User}}", tag],
                          check=True, capture_output=True, text=True).stdout.strip()
    assert user == "nonroot:nonroot"
    tools, info = docs_session(StdioServerParameters(command=docker, args=["run", "-i", "--rm", tag]))
    assert tools == DOCS_TOOLS
    assert info["mode"] == "docs"
