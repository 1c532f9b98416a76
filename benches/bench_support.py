"""Helpers shared by the end-to-end benchmark scripts: a clean environment for child
processes, starting the fake SnowLuma example, stopping children, /proc memory figures and
percentiles. Standard library only; loopback only."""
import os, re, select, subprocess


def clean_env():
    """The parent environment without any SNOWLUMA_MCP_* setting."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SNOWLUMA_MCP_")}


def status_kib(pid, field):
    """A /proc/<pid>/status figure in KiB, e.g. field "VmHWM" for peak RSS."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def stop(proc):
    """Closes a child's stdin (our children exit on EOF) and waits; kills it if it lingers."""
    try:
        proc.stdin.close()
        proc.wait(timeout=10)
    except (subprocess.TimeoutExpired, BrokenPipeError):
        proc.kill()
        proc.wait(timeout=10)


def percentile(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Fake:
    """The fake SnowLuma example binary; it serves until its stdin closes."""

    def __init__(self, binary, args):
        self.proc = subprocess.Popen([binary, "--port", "0", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=clean_env())
        ready, _, _ = select.select([self.proc.stdout], [], [], 20)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("FAKE_SNOWLUMA_URL="):
            self.close()
            raise RuntimeError(f"fake SnowLuma did not announce its URL (got {line!r})")
        self.url = line.strip().split("=", 1)[1]
        match = re.match(r"http://127\.0\.0\.1:(\d+)/$", self.url)
        if not match:
            self.close()
            raise RuntimeError(f"fake SnowLuma URL is not loopback: {self.url}")
        self.port = int(match[1])

    def kill(self):
        self.proc.kill()

    def close(self):
        stop(self.proc)
