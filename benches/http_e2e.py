#!/usr/bin/env python3
"""`query_action get_login_info` over the Streamable HTTP transport versus stdio.

One run starts the fake SnowLuma, one stdio server and one HTTP server (`--transport http
--listen 127.0.0.1:0`, bearer token on), all in read mode against the same fake, and measures:

  (a) sequential: N calls each over stdio, an HTTP legacy session (Mcp-Session-Id, one
      keep-alive connection, SSE replies) and HTTP 2026-07-28 (stateless POSTs); median / p99;
  (b) 16 sessions: 16 threads, each with its own HTTP legacy session and connection, calling in
      a loop; throughput (calls/s), against 16 calls pipelined on the one stdio connection;
  (c) the HTTP server's peak RSS (VmHWM) after all of the above.

Replies are checked by byte search for a successful outcome. The client is python, so the
16-thread figures are bounded by python's threads as well as by the server.

Only loopback is used; every loop is bounded and both servers and the fake are stopped at the
end. Usage: python3 benches/http_e2e.py [--calls N] [--debug]
(after `cargo build --release --examples --bins`; --debug uses target/debug instead)
"""
import argparse, http.client, json, os, re, statistics, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import Fake, clean_env, percentile, status_kib, stop  # noqa: E402
import exec_e2e  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HTTP_TOKEN = "bench-http-token-8e2a"
SESSIONS = 16
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CALL = {"name": "query_action", "arguments": {"action": "get_login_info", "params": {}}}


class HttpServer:
    def __init__(self, binary, fake_url):
        env = clean_env()
        env.update(SNOWLUMA_MCP_MODE="read", SNOWLUMA_MCP_ENDPOINT=fake_url, SNOWLUMA_MCP_TOKEN=exec_e2e.TOKEN,
                   SNOWLUMA_MCP_HTTP_TOKEN=HTTP_TOKEN, SNOWLUMA_MCP_LOG="info,rmcp=warn")
        self.proc = subprocess.Popen([binary, "--transport", "http", "--listen", "127.0.0.1:0"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env)
        # One reader thread: select() on a buffered pipe misses lines already read ahead.
        self.port = None
        found = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                match = re.search(rb"at http://127\.0\.0\.1:(\d+)/mcp", raw)
                if match and not found.is_set():
                    self.port = int(match[1])
                    found.set()

        threading.Thread(target=drain, daemon=True).start()
        if not found.wait(20):
            stop(self.proc)
            raise RuntimeError("the HTTP server did not announce its port")


class HttpClient:
    """One keep-alive connection; a legacy session or stateless 2026-07-28 requests."""

    def __init__(self, port, era):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.era = era
        self.session = None
        self.next_id = 0
        if era == "legacy":
            status, headers, _ = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                            "params": exec_e2e.INIT}, {})
            if status != 200:
                raise RuntimeError(f"initialize: HTTP {status}")
            self.session = headers["mcp-session-id"]
            status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.session_headers())
            if status != 202:
                raise RuntimeError(f"initialized: HTTP {status}")

    def session_headers(self):
        return {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": LEGACY}

    def post(self, body, headers):
        data = json.dumps(body).encode()
        self.conn.request("POST", "/mcp", body=data, headers={
            "Authorization": f"Bearer {HTTP_TOKEN}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", **headers})
        response = self.conn.getresponse()
        payload = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, payload

    def call(self):
        self.next_id += 1
        if self.era == "legacy":
            body = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": CALL}
            headers = self.session_headers()
        else:
            body = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                    "params": dict(CALL, _meta=exec_e2e.MODERN_META)}
            headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "query_action"}
        status, _, payload = self.post(body, headers)
        if status != 200 or b'"outcome":"success"' not in payload or b'"isError":true' in payload:
            raise RuntimeError(f"tools/call over HTTP failed: {status} {payload[:400]!r}")


def timed(fn, n):
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - began) * 1e6)
    return samples


def summary(name, samples):
    print(f"  {name:<22} median {statistics.median(samples):8.0f} us   p99 {percentile(samples, 0.99):8.0f} us")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args()
    profile = "debug" if args.debug else "release"
    server_bin = os.path.join(ROOT, f"target/{profile}/snowluma-mcp")
    fake_bin = os.path.join(ROOT, f"target/{profile}/examples/fake_snowluma")
    exec_e2e.SERVER = server_bin
    fake = Fake(fake_bin, [])
    stdio = http = None
    try:
        stdio = exec_e2e.Server(fake.url, "legacy")
        http = HttpServer(server_bin, fake.url)
        legacy = HttpClient(http.port, "legacy")
        modern = HttpClient(http.port, "modern")
        for client in (stdio, legacy, modern):
            for _ in range(50):
                client.call()
        print(f"query_action get_login_info, {args.calls} sequential calls ({profile} build)")
        summary("stdio (legacy)", timed(stdio.call, args.calls))
        summary("HTTP legacy session", timed(legacy.call, args.calls))
        summary("HTTP 2026-07-28", timed(modern.call, args.calls))

        per_session = max(args.calls // SESSIONS, 10)
        total = per_session * SESSIONS
        clients = [HttpClient(http.port, "legacy") for _ in range(SESSIONS)]
        errors = []

        def worker(client):
            try:
                for _ in range(per_session):
                    client.call()
            except Exception as error:  # reported below
                errors.append(error)

        threads = [threading.Thread(target=worker, args=(c,)) for c in clients]
        began = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        http_elapsed = time.perf_counter() - began
        if errors:
            raise errors[0]
        stdio_elapsed = stdio.pipelined(total)
        print(f"{SESSIONS} at once, {total} calls")
        print(f"  stdio, 16 pipelined     {total / stdio_elapsed:8.0f} calls/s")
        print(f"  HTTP, 16 sessions       {total / http_elapsed:8.0f} calls/s")
        print(f"HTTP server peak RSS: {status_kib(http.proc.pid, 'VmHWM')} KiB")
    finally:
        if stdio is not None:
            stop(stdio.proc)
        if http is not None:
            # The HTTP server does not read stdin; SIGTERM stops it.
            http.proc.terminate()
            try:
                http.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                http.proc.kill()
                http.proc.wait(timeout=10)
        fake.close()


if __name__ == "__main__":
    main()
