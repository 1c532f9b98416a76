#!/usr/bin/env python3
"""End-to-end benchmark over real stdio, side by side with a minimal Rust stdio JSON-RPC echo.

Measures, for each binary: start-up (spawn -> initialize answered -> tools/list answered),
per-call round trips of the docs tools (median and p99), and peak RSS (VmHWM). Only loopback
pipes are used; every loop is bounded and the processes are stopped at the end.

Usage: python3 benches/e2e.py [--calls N] [--starts N]   (after `cargo build --release --examples`)
"""
import argparse, json, os, statistics, subprocess, time

from bench_support import clean_env, percentile, status_kib, stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "target/release/snowluma-mcp")
ECHO = os.path.join(ROOT, "target/release/examples/stdio_echo")


class Peer:
    def __init__(self, binary):
        env = clean_env()
        env["SNOWLUMA_MCP_LOG"] = "error"
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            reply = self.proc.stdout.readline()
            if not reply:
                raise RuntimeError(f"{method}: server closed stdout")
            # Only the head is decoded to find the id, so the client's JSON parsing of large
            # replies does not count against the server; errors are parsed in full.
            head = f'{{"jsonrpc":"2.0","id":{self.next_id},'.encode()
            if reply.startswith(head):
                return json.loads(reply) if b'"isError":true' in reply or b'"error"' in reply[:80] else {"id": self.next_id}

    def peak_rss_kib(self):
        return status_kib(self.proc.pid, "VmHWM")

    def close(self):
        stop(self.proc)


INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
CALLS = [
    ("list_actions", {}),
    ("search_actions", {"query": "group"}),
    ("search_actions", {"query": "mute someone in a group", "match": "keywords"}),
    ("get_action", {"name": "send_group_msg"}),
    ("list_categories", {}),
    ("get_runtime_info", {}),
]


def startup(binary, starts):
    samples = []
    for _ in range(starts):
        began = time.perf_counter()
        peer = Peer(binary)
        peer.request("initialize", INIT)
        peer.request("tools/list", {})
        samples.append(time.perf_counter() - began)
        peer.close()
    return statistics.median(samples) * 1000


def round_trips(binary, calls, tools):
    peer = Peer(binary)
    peer.request("initialize", INIT)
    results = {}
    for name, args in (CALLS if tools else [("echo", {})]):
        samples = []
        for _ in range(calls):
            began = time.perf_counter()
            reply = peer.request("tools/call", {"name": name, "arguments": args})
            samples.append(time.perf_counter() - began)
            if tools and reply.get("result", {}).get("isError"):
                raise RuntimeError(f"{name} failed: {reply}")
        label = name if name != "search_actions" else f"search_actions ({args.get('match', 'substring')})"
        results[label] = (statistics.median(samples) * 1e6, percentile(samples, 0.99) * 1e6)
    rss = peer.peak_rss_kib()
    peer.close()
    return results, rss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--starts", type=int, default=20)
    args = parser.parse_args()
    for binary in (SERVER, ECHO):
        if not os.path.exists(binary):
            raise SystemExit(f"missing {binary}: run `cargo build --release --examples` first")

    echo_start = startup(ECHO, args.starts)
    server_start = startup(SERVER, args.starts)
    echo_calls, echo_rss = round_trips(ECHO, args.calls, tools=False)
    server_calls, server_rss = round_trips(SERVER, args.calls, tools=True)
    echo_median = echo_calls["echo"][0]

    print(f"start-up (spawn -> initialize -> tools/list), median of {args.starts}:")
    print(f"  echo {echo_start:.2f} ms   snowluma-mcp {server_start:.2f} ms   ratio {server_start / echo_start:.2f}x (target <= 2x)")
    print(f"round trip per call, {args.calls} calls each (median / p99, microseconds):")
    print(f"  echo                             {echo_calls['echo'][0]:8.1f} / {echo_calls['echo'][1]:8.1f}")
    for label, (median, p99) in server_calls.items():
        print(f"  {label:32} {median:8.1f} / {p99:8.1f}   ratio {median / echo_median:.2f}x (target <= 3x)")
    print(f"peak RSS: echo {echo_rss / 1024:.1f} MiB, snowluma-mcp {server_rss / 1024:.1f} MiB (target < 10 MiB)")


if __name__ == "__main__":
    main()
