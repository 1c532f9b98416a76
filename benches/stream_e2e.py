#!/usr/bin/env python3
"""End-to-end download benchmark: `invoke_action download_file_stream` through snowluma-mcp
(write mode, MCP tools/call over stdio) versus a plain HTTP client reading the same stream from
the fake SnowLuma directly.

The fake (target/release/examples/fake_snowluma) serves deterministic generated files
(`--generated NAME:SIZE:SEED`, produced while streaming, never held in memory). The stream body
is JSON frames, each followed by `\\r\\n\\r\\n`: one file_info, N file_chunk (base64 in
data.data), one file_complete.

  (1) throughput: a --size-mib file (default 64 MiB), --runs times each way (default 3), the
      two paths alternating (and swapping who goes first) so a burst of load hits both alike:
      (a) through the server: the time from writing the tools/call line to reading its reply.
          The reply's size and sha256 are checked against the file on disk (hashlib), the chunk
          and frame counts against the file size, a few bytes against the generator formula;
          then the file is deleted;
      (b) direct: http.client POSTs the same {action, params} body, splits the chunked body on
          `\\r\\n\\r\\n`, json-decodes each frame, base64-decodes each chunk and writes it to a
          buffered file (1 MiB buffer, as the server). The timing ends when the file is closed.
          The file's sha256 (computed after the timing) must equal the server's. Python's
          base64 decoder dominates this client, so it is a modest bar;
      (c) for information, the fake's ceiling: the same request, body read and discarded.
      Reported: MiB/s per run, the median each way and server / direct (target >= 0.8x).
  (2) memory: peak RSS (VmHWM) of a FRESH server after one --small-mib download (default 16)
      versus a fresh server after one --big-mib download (default 256); target: the big figure
      within 10% of the small one (memory must not grow with the file). The fake's peak RSS is
      printed for information.

Only loopback is used; files go to a private temporary directory that is removed at the end;
every loop is bounded, a watchdog kills the children if the run exceeds --deadline seconds, and
both children are stopped at the end. Targets are reported, not enforced (--strict exits 1 on a
miss); a wrong size or checksum always fails the run.

Usage: python3 benches/stream_e2e.py [--runs N] [--size-mib M] [--small-mib S] [--big-mib B]
       (after `cargo build --release --examples --bins`)
"""
import argparse, binascii, hashlib, http.client, json, os, re, shutil, statistics
import subprocess, sys, tempfile, threading, time

from bench_support import Fake, clean_env, status_kib, stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "target/release/snowluma-mcp")
FAKE = os.path.join(ROOT, "target/release/examples/fake_snowluma")

FAKE_DIR = "/tmp/snowluma-stream/download"  # where the fake says generated files live
CHUNK = 65536
MIB = 1 << 20
WRITE_BUFFER = 1 << 20
DELIM = b"\r\n\r\n"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stream-bench", "version": "0"}}
ID_RE = re.compile(rb'"id":(\d+)')
MASK = (1 << 64) - 1


def generated_byte(seed, i):
    """Byte i of a generated file (tests/support/fake_snowluma/streams.rs, splitmix64)."""
    z = ((i // 8) + (seed + 1) * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return (z >> (8 * (i % 8))) & 0xFF


def spot_check(path, size, seed):
    """A few bytes of the saved file against the generator: start, chunk edges, middle, end."""
    offsets = {0, 1, 7, 8, CHUNK - 1, CHUNK, CHUNK + 1, size // 2, size // 2 + 3, size - 9, size - 1}
    with open(path, "rb") as f:
        for offset in sorted(o for o in offsets if 0 <= o < size):
            f.seek(offset)
            got = f.read(1)[0]
            if got != generated_byte(seed, offset):
                raise RuntimeError(f"{path}: byte {offset} is {got}, the generator says {generated_byte(seed, offset)}")


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(4 * MIB)
            if not block:
                return digest.hexdigest()
            digest.update(block)


class Server:
    """snowluma-mcp in write mode, spoken to in JSON lines (legacy `initialize` handshake)."""

    def __init__(self, url, download_dir):
        env = clean_env()
        env.update(SNOWLUMA_MCP_MODE="write", SNOWLUMA_MCP_ENDPOINT=url, SNOWLUMA_MCP_DOWNLOAD_DIR=download_dir,
                   SNOWLUMA_MCP_MAX_FILE_BYTES=str(1 << 31), SNOWLUMA_MCP_DIR_QUOTA_BYTES=str(1 << 33),
                   SNOWLUMA_MCP_LOG="error")
        self.proc = subprocess.Popen([SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        reply = json.loads(self.request("initialize", INIT)[1])
        if "result" not in reply:
            raise RuntimeError(f"initialize failed: {reply}")
        self.send_line(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def send_line(self, line):
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        """Sends one request; returns (seconds until its reply line arrived, the line)."""
        self.next_id += 1
        request_id = self.next_id
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
        began = time.perf_counter()
        self.send_line(line)
        for _ in range(10000):
            reply = self.proc.stdout.readline()
            if not reply:
                raise RuntimeError(f"{method}: the server closed stdout")
            match = ID_RE.search(reply, 0, 96)
            if match and int(match[1]) == request_id:
                return time.perf_counter() - began, reply
            # a notification or log line: skipped
        raise RuntimeError(f"{method}: no reply with id {request_id}")

    def download(self, file):
        """One download through invoke_action; returns (seconds, the saved-download result)."""
        args = {"name": "invoke_action",
                "arguments": {"action": "download_file_stream", "params": {"file": file, "chunk_size": CHUNK}}}
        elapsed, line = self.request("tools/call", args)
        reply = json.loads(line)
        result = reply.get("result") or {}
        structured = result.get("structuredContent") or {}
        if result.get("isError") or (structured.get("diagnostics") or {}).get("outcome") != "success":
            raise RuntimeError(f"download_file_stream through the server failed: {line[:1000]!r}")
        return elapsed, structured["result"]

    def peak_rss_kib(self):
        return status_kib(self.proc.pid, "VmHWM")

    def kill(self):
        self.proc.kill()

    def close(self):
        stop(self.proc)


def direct_download(port, file, path):
    """The baseline: the same request, frames split, decoded and written by python.
    Returns (seconds, bytes written, chunk frames, frames)."""
    body = json.dumps({"action": "download_file_stream", "params": {"file": file, "chunk_size": CHUNK}}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    written = chunks = frames = 0
    terminal = None
    began = time.perf_counter()
    try:
        conn.request("POST", "/", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        if response.status != 200:
            raise RuntimeError(f"direct download: HTTP {response.status} {response.read(300)!r}")
        buffer = bytearray()
        scanned = 0
        with open(path, "wb", buffering=WRITE_BUFFER) as out:
            while terminal is None:
                piece = response.read1(MIB)
                if not piece:
                    raise RuntimeError("direct download: the body ended without a terminal frame")
                buffer += piece
                while terminal is None:
                    end = buffer.find(DELIM, scanned)
                    if end < 0:
                        scanned = max(0, len(buffer) - len(DELIM) + 1)
                        break
                    frame = json.loads(buffer[:end])
                    del buffer[:end + len(DELIM)]
                    scanned = 0
                    frames += 1
                    data = frame.get("data") or {}
                    if frame.get("status") != "ok" or frame.get("retcode") != 0 or data.get("type") == "error":
                        raise RuntimeError(f"direct download: a failed frame {str(frame)[:300]}")
                    if data.get("type") != "stream":
                        terminal = data
                    elif data.get("data_type") == "file_chunk":
                        decoded = binascii.a2b_base64(data["data"])
                        out.write(decoded)
                        written += len(decoded)
                        chunks += 1
        elapsed = time.perf_counter() - began
    finally:
        conn.close()
    if terminal.get("data_type") != "file_complete" or terminal.get("total_bytes") != written:
        raise RuntimeError(f"direct download: terminal frame {terminal} after {written} bytes")
    return elapsed, written, chunks, frames


def drain(port, file):
    """For information: the fake's ceiling. The same request, the body read and thrown away.
    Returns (seconds, body bytes)."""
    body = json.dumps({"action": "download_file_stream", "params": {"file": file, "chunk_size": CHUNK}}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    total = 0
    began = time.perf_counter()
    try:
        conn.request("POST", "/", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        for _ in range(1 << 24):
            piece = response.read1(MIB)
            if not piece:
                break
            total += len(piece)
    finally:
        conn.close()
    return time.perf_counter() - began, total


def check_server_result(result, download_dir, size, seed):
    """Checks a saved-download result against the file it names; returns its sha256."""
    path = result["path"]
    if os.path.dirname(os.path.realpath(path)) != os.path.realpath(download_dir):
        raise RuntimeError(f"the server saved outside the download dir: {path}")
    on_disk = os.path.getsize(path)
    expected_chunks = -(-size // CHUNK)
    if result["size"] != size or on_disk != size:
        raise RuntimeError(f"size: result {result['size']}, on disk {on_disk}, expected {size}")
    if result["chunks"] != expected_chunks or result["frames"] != expected_chunks + 2:
        raise RuntimeError(f"chunks {result['chunks']} / frames {result['frames']}, expected "
                           f"{expected_chunks} / {expected_chunks + 2}")
    digest = sha256_file(path)
    if result["sha256"] != digest:
        raise RuntimeError(f"sha256: result {result['sha256']}, file on disk {digest}")
    spot_check(path, size, seed)
    return digest


def remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def rate(size, seconds):
    return size / MIB / seconds


def fmt_runs(rates):
    return ", ".join(f"{r:7.1f}" for r in rates)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="downloads each way for throughput")
    parser.add_argument("--size-mib", type=int, default=64, help="throughput file size")
    parser.add_argument("--small-mib", type=int, default=16, help="memory: the small download")
    parser.add_argument("--big-mib", type=int, default=256, help="memory: the big download")
    parser.add_argument("--deadline", type=float, default=900, help="watchdog for the whole run, seconds")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    for binary in (SERVER, FAKE):
        if not os.path.exists(binary):
            raise SystemExit(f"missing {binary}: run `cargo build --release --examples --bins` first")
    if min(args.runs, args.size_mib, args.small_mib, args.big_mib) < 1:
        raise SystemExit("--runs and the sizes must be at least 1")

    files = {  # name: (size, seed)
        "tput.bin": (args.size_mib * MIB, 1),
        "small.bin": (args.small_mib * MIB, 2),
        "big.bin": (args.big_mib * MIB, 3),
    }
    remote = {name: f"{FAKE_DIR}/{name}" for name in files}

    work = tempfile.mkdtemp(prefix="snowluma-stream-bench-")
    download_dir = os.path.join(work, "downloads")  # the server creates it (0700)
    direct_dir = os.path.join(work, "direct")
    os.makedirs(direct_dir)
    children = []
    killed = threading.Event()

    def on_deadline():
        killed.set()
        for child in children:
            child.kill()

    watchdog = threading.Timer(args.deadline, on_deadline)
    watchdog.daemon = True
    watchdog.start()
    load_before = loadavg()
    try:
        fake = Fake(FAKE, [arg for name, (size, seed) in files.items() for arg in ("--generated", f"{name}:{size}:{seed}")])
        children.append(fake)

        # (1) throughput, one server process for every run, after a warm-up each way
        size, seed = files["tput.bin"]
        server = Server(fake.url, download_dir)
        children.append(server)
        _, warm = server.download(remote["small.bin"])
        remove(warm["path"])
        direct_download(fake.port, remote["small.bin"], os.path.join(direct_dir, "warm.bin"))
        remove(os.path.join(direct_dir, "warm.bin"))

        via_server, via_direct, via_drain = [], [], []
        for run in range(args.runs):
            order = ("server", "direct", "drain") if run % 2 == 0 else ("drain", "direct", "server")
            for way in order:
                if way == "drain":
                    elapsed, _ = drain(fake.port, remote["tput.bin"])
                    via_drain.append(rate(size, elapsed))
                elif way == "server":
                    elapsed, result = server.download(remote["tput.bin"])
                    server_sha = check_server_result(result, download_dir, size, seed)
                    remove(result["path"])
                    via_server.append(rate(size, elapsed))
                else:
                    path = os.path.join(direct_dir, f"run{run}.bin")
                    elapsed, written, chunks, frames = direct_download(fake.port, remote["tput.bin"], path)
                    if written != size or os.path.getsize(path) != size:
                        raise RuntimeError(f"direct download wrote {written} bytes, expected {size}")
                    direct_sha = sha256_file(path)
                    spot_check(path, size, seed)
                    remove(path)
                    via_direct.append(rate(size, elapsed))
            if server_sha != direct_sha:
                raise RuntimeError(f"run {run}: server sha256 {server_sha} != direct {direct_sha}")
        tput_server_rss = server.peak_rss_kib()
        server.close()
        children.remove(server)

        # (2) memory: a fresh server per size
        memory = {}
        for name in ("small.bin", "big.bin"):
            size_m, seed_m = files[name]
            server = Server(fake.url, download_dir)
            children.append(server)
            idle = server.peak_rss_kib()
            elapsed, result = server.download(remote[name])
            peak = server.peak_rss_kib()
            check_server_result(result, download_dir, size_m, seed_m)
            remove(result["path"])
            server.close()
            children.remove(server)
            memory[name] = (idle, peak, rate(size_m, elapsed))
        fake_rss = status_kib(fake.proc.pid, "VmHWM")
    except Exception:
        if killed.is_set():
            raise SystemExit(f"stream_e2e: the watchdog stopped the run after {args.deadline:.0f} s")
        raise
    finally:
        watchdog.cancel()
        for child in reversed(children):
            child.close()
        shutil.rmtree(work, ignore_errors=True)

    server_median = statistics.median(via_server)
    direct_median = statistics.median(via_direct)
    ratio = server_median / direct_median
    small_idle, small_peak, small_rate = memory["small.bin"]
    big_idle, big_peak, big_rate = memory["big.bin"]
    growth = big_peak / small_peak - 1
    tput_ok = ratio >= 0.8
    mem_ok = abs(growth) <= 0.10

    def spread(rates):
        return (max(rates) - min(rates)) / statistics.median(rates) * 100

    print(f"download_file_stream, {CHUNK // 1024} KiB chunks, loopback; load average before {load_before}, "
          f"after {loadavg()} ({os.cpu_count()} cpus)")
    print(f"throughput, {args.size_mib} MiB file, {args.runs} runs each way (MiB/s of file bytes):")
    print(f"  via snowluma-mcp  [{fmt_runs(via_server)}]  median {server_median:7.1f}  spread {spread(via_server):4.0f}%")
    print(f"  direct (python)   [{fmt_runs(via_direct)}]  median {direct_median:7.1f}  spread {spread(via_direct):4.0f}%")
    print(f"  fake ceiling      [{fmt_runs(via_drain)}]  median {statistics.median(via_drain):7.1f}  "
          f"(for information: body read and discarded, no decoding)")
    print(f"  ratio server / direct {ratio:.2f}x (target >= 0.8x) {'ok' if tput_ok else 'MISSED'}")
    print(f"  size, sha256 (server result = hashlib of the saved file = direct file), chunk/frame counts "
          f"and generator spot checks: ok")
    print("peak RSS (VmHWM) of a fresh server:")
    print(f"  {args.small_mib:4d} MiB download: {small_peak / 1024:6.1f} MiB  (after initialize {small_idle / 1024:.1f} MiB; "
          f"{small_rate:.0f} MiB/s)")
    print(f"  {args.big_mib:4d} MiB download: {big_peak / 1024:6.1f} MiB  (after initialize {big_idle / 1024:.1f} MiB; "
          f"{big_rate:.0f} MiB/s)")
    print(f"  growth {growth * 100:+.1f}% (target within 10%) {'ok' if mem_ok else 'MISSED'}")
    print(f"  for information: the throughput server after {args.runs + 1} downloads {tput_server_rss / 1024:.1f} MiB, "
          f"the fake {fake_rss / 1024:.1f} MiB")
    if args.strict and not (tput_ok and mem_ok):
        sys.exit(1)


if __name__ == "__main__":
    main()
