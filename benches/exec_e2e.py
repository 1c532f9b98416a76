#!/usr/bin/env python3
"""End-to-end execution benchmark: `query_action get_login_info` through snowluma-mcp (read
mode, MCP tools/call over stdio) versus the same OneBot HTTP call made directly to the fake
SnowLuma it forwards to.

One run starts the fake (target/release/examples/fake_snowluma) and the release server pointed
at it, then measures:

  (a) sequential: N calls each way, median / p99, added latency per call and the ratio. The two
      paths alternate call by call, so a burst of load on the machine hits both alike;
  (b) 16 in flight: through the server, 16 outstanding tools/call requests on the one stdio
      connection (pipelined ids, replies matched by id); directly, 16 threads each with its own
      keep-alive connection. Throughput (calls/s) and the ratio;
  (c) the server's peak RSS (VmHWM) after all of the above (>= 1000 calls).

MCP era: legacy by default (`initialize` handshake, protocol 2025-11-25); `--era modern` sends
every request stateless with the 2026-07-28 `_meta` envelope instead (after server/discover).

The direct path is the request the server itself sends: POST {"action":"get_login_info",
"params":{}} to the endpoint with `Authorization: Bearer <token>` and a JSON content type, over
http.client keep-alive connections. As in benches/e2e.py, replies are checked by byte search
rather than decoded in full (the first reply of each path is decoded and checked completely), so
the client's JSON parsing does not count against either side. The client is python: the direct
rate with 16 in flight is bounded by python's threads as much as by the fake.

Only loopback is used; every loop is bounded, a watchdog kills the children if the whole run
exceeds --deadline seconds, and both children are stopped at the end.

Usage: python3 benches/exec_e2e.py [--calls N] [--concurrent-calls M] [--era legacy|modern]
       (after `cargo build --release --examples --bins`)
"""
import argparse, http.client, json, os, re, select, socket, statistics, subprocess, threading, time

from bench_support import Fake, clean_env, percentile, status_kib, stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "target/release/snowluma-mcp")
FAKE = os.path.join(ROOT, "target/release/examples/fake_snowluma")

TOKEN = "bench-token-4f1c9e"
IN_FLIGHT = 16
WARMUP = 50
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
INIT = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "exec-bench", "version": "0"}}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "exec-bench", "version": "0"},
}
CALL_ARGS = {"name": "query_action", "arguments": {"action": "get_login_info", "params": {}}}
DIRECT_BODY = json.dumps({"action": "get_login_info", "params": {}}).encode()
ID_RE = re.compile(rb'"id":(\d+)')


class Server:
    """snowluma-mcp in read mode, spoken to in JSON lines."""

    def __init__(self, url, era):
        env = clean_env()
        env.update(SNOWLUMA_MCP_MODE="read", SNOWLUMA_MCP_ENDPOINT=url, SNOWLUMA_MCP_TOKEN=TOKEN,
                   SNOWLUMA_MCP_LOG="error")
        self.proc = subprocess.Popen([SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.era = era
        self.next_id = 0
        self.call_params = dict(CALL_ARGS, _meta=MODERN_META) if era == "modern" else CALL_ARGS
        if era == "modern":
            reply = self.request_full("server/discover", {"_meta": MODERN_META})
            if MODERN not in reply["result"]["supportedVersions"]:
                raise RuntimeError(f"server does not offer {MODERN}: {reply}")
        else:
            reply = self.request_full("initialize", INIT)
            if reply["result"]["protocolVersion"] != LEGACY:
                raise RuntimeError(f"initialize negotiated {reply['result']['protocolVersion']}")
            self.send_line(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def send_line(self, line):
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def call_line(self):
        self.next_id += 1
        return self.next_id, json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                                         "params": self.call_params}).encode()

    def read_reply(self):
        """The next response line and its id (only the head is searched for the id)."""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            match = ID_RE.search(line, 0, 96)
            if match:
                return int(match[1]), line
            frame = json.loads(line)
            if isinstance(frame.get("id"), int):
                return frame["id"], line
            # a notification: not expected, skipped

    def request_full(self, method, params):
        self.next_id += 1
        request_id = self.next_id
        self.send_line(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode())
        for _ in range(1000):
            got, line = self.read_reply()
            if got == request_id:
                return json.loads(line)
        raise RuntimeError(f"{method}: no reply with id {request_id}")

    def check_call(self, line):
        if b'"isError":true' in line or b'"outcome":"success"' not in line or b'"error":{' in line[:96]:
            raise RuntimeError(f"query_action get_login_info did not succeed: {line[:600]!r}")

    def call(self):
        request_id, line = self.call_line()
        self.send_line(line)
        got, reply = self.read_reply()
        if got != request_id:
            raise RuntimeError(f"sequential call {request_id} answered with id {got}")
        self.check_call(reply)

    def pipelined(self, total):
        """`total` calls with IN_FLIGHT outstanding at a time; returns elapsed seconds."""
        outstanding = set()
        sent = done = 0
        began = time.perf_counter()
        while sent < min(IN_FLIGHT, total):
            request_id, line = self.call_line()
            self.proc.stdin.write(line + b"\n")
            outstanding.add(request_id)
            sent += 1
        self.proc.stdin.flush()
        while done < total:
            got, reply = self.read_reply()
            if got not in outstanding:
                raise RuntimeError(f"unexpected reply id {got}")
            outstanding.discard(got)
            self.check_call(reply)
            done += 1
            if sent < total:
                request_id, line = self.call_line()
                self.send_line(line)
                outstanding.add(request_id)
                sent += 1
        return time.perf_counter() - began

    def peak_rss_kib(self):
        return status_kib(self.proc.pid, "VmHWM")

    def close(self):
        stop(self.proc)


class Direct:
    """One keep-alive http.client connection to the fake."""

    HEADERS = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)

    def call(self):
        self.conn.request("POST", "/", body=DIRECT_BODY, headers=self.HEADERS)
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200 or b'"retcode":0' not in body:
            raise RuntimeError(f"direct get_login_info failed: HTTP {response.status} {body[:300]!r}")
        if response.will_close:
            raise RuntimeError("the fake closed the keep-alive connection")
        return body

    def close(self):
        self.conn.close()


class Raw:
    """A lean reference client: the same request as pre-built bytes on a plain keep-alive socket,
    responses framed by content-length. It shows how much of the http.client figures is python's
    http.client itself rather than the fake."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = (f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(DIRECT_BODY)}\r\n\r\n").encode() + DIRECT_BODY
        self.buffer = b""

    def send(self):
        self.sock.sendall(self.request)

    def take(self):
        """Removes one complete response from the buffer and returns True, or returns False."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = self.buffer[:end].lower()
        match = re.search(rb"content-length: *(\d+)", head)
        if not head.startswith(b"http/1.1 200") or not match:
            raise RuntimeError(f"raw get_login_info failed: {self.buffer[:300]!r}")
        total = end + 4 + int(match[1])
        if len(self.buffer) < total:
            return False
        if b'"retcode":0' not in self.buffer[end + 4:total]:
            raise RuntimeError(f"raw get_login_info failed: {self.buffer[:total]!r}")
        self.buffer = self.buffer[total:]
        return True

    def receive(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise RuntimeError("the fake closed a raw connection")
        self.buffer += chunk

    def call(self):
        self.send()
        for _ in range(10000):
            if self.take():
                return
            self.receive()
        raise RuntimeError("raw response never completed")

    def close(self):
        self.sock.close()


def raw_concurrent(port, total):
    """`total` calls over IN_FLIGHT raw connections driven by one select loop."""
    clients = [Raw(port) for _ in range(IN_FLIGHT)]
    by_fd = {c.sock.fileno(): c for c in clients}
    sent = done = 0
    began = time.perf_counter()
    for client in clients[:total]:
        client.send()
        sent += 1
    rounds = 0
    while done < total:
        rounds += 1
        if rounds > 50 * total + 1000:
            raise RuntimeError("raw concurrent loop did not finish")
        ready, _, _ = select.select(list(by_fd), [], [], 15)
        if not ready:
            raise RuntimeError("raw concurrent calls stalled")
        for fd in ready:
            client = by_fd[fd]
            client.receive()
            while client.take():
                done += 1
                if sent < total:
                    client.send()
                    sent += 1
    elapsed = time.perf_counter() - began
    for client in clients:
        client.close()
    return elapsed


def timed(fn):
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def direct_concurrent(port, total):
    """`total` calls over IN_FLIGHT threads, each with its own keep-alive connection."""
    shares = [total // IN_FLIGHT + (1 if i < total % IN_FLIGHT else 0) for i in range(IN_FLIGHT)]
    clients = [Direct(port) for _ in range(IN_FLIGHT)]
    for client in clients:
        client.call()  # connect outside the timed window, as the server's pool already is
    start = threading.Barrier(IN_FLIGHT + 1)
    errors = []

    def worker(client, count):
        start.wait()
        try:
            for _ in range(count):
                client.call()
        except Exception as error:  # reported after the join
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(c, n), daemon=True) for c, n in zip(clients, shares)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join(timeout=300)
    elapsed = time.perf_counter() - began
    for client in clients:
        client.close()
    if errors or any(t.is_alive() for t in threads):
        raise RuntimeError(f"direct concurrent calls failed: {errors[:3]}")
    return elapsed


def verify_first(server, direct):
    """Decodes one reply of each path in full: the server must return the fake's envelope."""
    envelope = json.loads(direct.call())
    reply = server.request_full("tools/call", server.call_params)
    result = reply["result"]
    structured = result["structuredContent"]
    if result.get("isError") or structured["diagnostics"]["outcome"] != "success":
        raise RuntimeError(f"query_action get_login_info: {reply}")
    if structured["result"] != envelope or envelope["data"]["user_id"] != 10001:
        raise RuntimeError(f"server result {structured['result']} differs from direct {envelope}")
    if TOKEN in json.dumps(reply):
        raise RuntimeError("the token appears in a tool result")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000, help="sequential calls per path")
    parser.add_argument("--concurrent-calls", type=int, default=2000, help="calls per path with 16 in flight")
    parser.add_argument("--era", choices=["legacy", "modern"], default="legacy")
    parser.add_argument("--deadline", type=float, default=600, help="watchdog for the whole run, seconds")
    args = parser.parse_args()
    for binary in (SERVER, FAKE):
        if not os.path.exists(binary):
            raise SystemExit(f"missing {binary}: run `cargo build --release --examples --bins` first")

    fake = server = None
    children = []
    watchdog = threading.Timer(args.deadline, lambda: [c.proc.kill() for c in children])
    watchdog.daemon = True
    watchdog.start()
    try:
        fake = Fake(FAKE, ["--token", TOKEN])
        children.append(fake)
        server = Server(fake.url, args.era)
        children.append(server)
        direct = Direct(fake.port)
        verify_first(server, direct)

        # (a) sequential, alternating call by call after a warm-up of each path
        raw = Raw(fake.port)
        for _ in range(WARMUP):
            server.call()
            direct.call()
            raw.call()
        via_server, via_direct, via_raw = [], [], []
        for _ in range(args.calls):
            via_server.append(timed(server.call))
            via_direct.append(timed(direct.call))
            via_raw.append(timed(raw.call))
        direct.close()
        raw.close()

        # (b) 16 in flight, each path after a short warm-up at that concurrency
        server.pipelined(min(200, args.concurrent_calls))
        server_elapsed = server.pipelined(args.concurrent_calls)
        direct_concurrent(fake.port, min(200, args.concurrent_calls))
        direct_elapsed = direct_concurrent(fake.port, args.concurrent_calls)
        raw_concurrent(fake.port, min(200, args.concurrent_calls))
        raw_elapsed = raw_concurrent(fake.port, args.concurrent_calls)

        # (c) after every call above
        server_calls = 1 + WARMUP + args.calls + min(200, args.concurrent_calls) + args.concurrent_calls
        rss = server.peak_rss_kib()
    finally:
        for child in reversed(children):
            child.close()
        watchdog.cancel()

    s_med, s_p99 = statistics.median(via_server) * 1e6, percentile(via_server, 0.99) * 1e6
    d_med, d_p99 = statistics.median(via_direct) * 1e6, percentile(via_direct, 0.99) * 1e6
    r_med, r_p99 = statistics.median(via_raw) * 1e6, percentile(via_raw, 0.99) * 1e6
    s_rate = args.concurrent_calls / server_elapsed
    d_rate = args.concurrent_calls / direct_elapsed
    r_rate = args.concurrent_calls / raw_elapsed

    def verdict(ok):
        return "ok" if ok else "MISSED"

    era = "legacy (initialize, 2025-11-25)" if args.era == "legacy" else "modern (stateless 2026-07-28 _meta)"
    print(f"query_action get_login_info via snowluma-mcp (read mode, MCP {era}) vs direct HTTP to the fake")
    print(f"(a) sequential, {args.calls} calls each, alternating (median / p99, microseconds):")
    print(f"  direct HTTP (http.client)     {d_med:8.1f} / {d_p99:8.1f}")
    print(f"  through the server            {s_med:8.1f} / {s_p99:8.1f}")
    print(f"  added per call (median) {s_med - d_med:.1f} us   ratio {s_med / d_med:.2f}x "
          f"(target <= 1.5x: {verdict(s_med <= 1.5 * d_med)})")
    print(f"  reference, raw socket         {r_med:8.1f} / {r_p99:8.1f}   "
          f"server adds {s_med - r_med:.1f} us, ratio {s_med / r_med:.2f}x (information only)")
    print(f"  server p99 / server median {s_p99 / s_med:.2f}x (target <= 4x: {verdict(s_p99 <= 4 * s_med)})")
    print(f"(b) {IN_FLIGHT} in flight, {args.concurrent_calls} calls each:")
    print(f"  direct HTTP ({IN_FLIGHT} threads, keep-alive)   {d_rate:8.0f} calls/s")
    print(f"  through the server (one stdio pipe) {s_rate:8.0f} calls/s")
    print(f"  ratio {s_rate / d_rate:.2f}x of direct (target >= 0.7x: {verdict(s_rate >= 0.7 * d_rate)})")
    print(f"  reference, {IN_FLIGHT} raw sockets, one select loop {r_rate:8.0f} calls/s   "
          f"server ratio {s_rate / r_rate:.2f}x (information only)")
    print(f"(c) server peak RSS (VmHWM) after {server_calls} calls: {rss / 1024:.1f} MiB "
          f"(target < 16 MiB: {verdict(rss < 16 * 1024)})")


if __name__ == "__main__":
    main()
