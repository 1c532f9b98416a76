"""File transfers with a third-party client: the official python MCP SDK (`mcp` 2.3.0) drives
the real binary against the fake SnowLuma in both protocol generations (``mode="legacy"``:
`initialize`; ``mode="auto"``: `server/discover`, 2026-07-28). A local file is uploaded
automatically (execution.input_file), then the file SnowLuma assembled is downloaded back: the
saved bytes must equal the original. Every result goes through the outputSchema check.

Shares the fake SnowLuma fixture and helpers with test_exec_client.py.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from test_exec_client import (  # noqa: F401  (fake is a pytest fixture)
    READ_TIMEOUT_S,
    TEST_TIMEOUT_S,
    Fake,
    call,
    fake,
    server_params,
    start_fake,
)

MODES = ["legacy", "auto"]
REFUSAL = "execution.input_file is not a readable regular file inside SNOWLUMA_MCP_UPLOAD_ROOT"


def transfer_params(fake: Fake, downloads: Path, uploads: Path) -> StdioServerParameters:
    params = server_params(fake, "write")
    params.env = {
        **(params.env or {}),
        "SNOWLUMA_MCP_DOWNLOAD_DIR": str(downloads),
        "SNOWLUMA_MCP_UPLOAD_ROOT": str(uploads),
    }
    return params


@pytest.mark.parametrize("mode", MODES)
def test_upload_then_download_round_trip(mode: str, fake: Fake, tmp_path: Path) -> None:
    downloads, uploads = tmp_path / "downloads", tmp_path / "uploads"
    downloads.mkdir(mode=0o700)
    uploads.mkdir()
    # Two upload chunks (768 KiB each at most) of bytes that are not a repeating pattern.
    original = hashlib.shake_256(mode.encode()).digest(1_000_003)
    (uploads / "photo.bin").write_bytes(original)

    async def body(client: Client):
        _, uploaded = await call(
            client,
            fake,
            "invoke_action",
            {"action": "upload_file_stream", "execution": {"input_file": "photo.bin"}},
        )
        _, refused = await call(
            client,
            fake,
            "invoke_action",
            {"action": "upload_file_stream", "execution": {"input_file": "../photo.bin"}},
        )
        remote_path = (uploaded["result"] or {}).get("file_path")
        assert remote_path, uploaded
        _, downloaded = await call(
            client,
            fake,
            "invoke_action",
            {"action": "download_file_stream", "params": {"file": remote_path, "chunk_size": 65536}},
        )
        return uploaded, refused, downloaded

    async def main():
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(
                transfer_params(fake, downloads, uploads), mode=mode, read_timeout_seconds=READ_TIMEOUT_S
            ) as client:
                return await body(client)

    uploaded, refused, downloaded = anyio.run(main)
    digest = hashlib.sha256(original).hexdigest()

    assert uploaded["diagnostics"]["outcome"] == "success", uploaded
    assert uploaded["result"]["status"] == "file_complete", uploaded
    assert uploaded["result"]["sha256"] == digest, uploaded

    assert refused["diagnostics"]["kind"] == "input_file", refused
    assert refused["diagnostics"]["message"].startswith(REFUSAL), refused

    assert downloaded["diagnostics"]["outcome"] == "success", downloaded
    saved = Path(downloaded["result"]["path"])
    assert saved.parent == downloads, downloaded
    assert saved.read_bytes() == original
    assert downloaded["result"]["size"] == len(original), downloaded
    assert downloaded["result"]["sha256"] == digest, downloaded
    assert stat.S_IMODE(os.stat(saved).st_mode) & 0o077 == 0, "the saved file is private"
    assert not [p for p in downloads.iterdir() if p.name.endswith(".part")], "no partial file is left"


@pytest.mark.parametrize("mode", MODES)
def test_a_url_download_of_unknown_size_is_saved_whole(mode: str, tmp_path: Path) -> None:
    """SnowLuma announces `file_size: 0` for a URL body without Content-Length and sends chunks
    as the network delivers them; the download still succeeds, checked against file_complete's
    totals."""
    downloads = tmp_path / "downloads"
    downloads.mkdir(mode=0o700)
    original = hashlib.shake_256(b"unknown size " + mode.encode()).digest(300_007)
    body_file = tmp_path / "body.bin"
    body_file.write_bytes(original)
    url = "https://cdn.example.com/media/clip.mp4"

    async def main(running: Fake):
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with Client(
                transfer_params(running, downloads, tmp_path), mode=mode, read_timeout_seconds=READ_TIMEOUT_S
            ) as client:
                _, downloaded = await call(
                    client, running, "invoke_action", {"action": "download_file_stream", "params": {"file": url}}
                )
                return downloaded

    with start_fake("--url-file", f"{url}={body_file}") as running:
        downloaded = anyio.run(main, running)

    assert downloaded["diagnostics"]["outcome"] == "success", downloaded
    assert downloaded["result"]["terminal"]["total_bytes"] == len(original), downloaded
    assert downloaded["result"]["original_name"] == "clip.mp4", downloaded
    assert Path(downloaded["result"]["path"]).read_bytes() == original
    assert downloaded["result"]["sha256"] == hashlib.sha256(original).hexdigest(), downloaded
