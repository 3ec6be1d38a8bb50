"""Idle CPU of the server as `make run` starts it: no browser connected, nothing to do.

    python benchmarks/bench_idle.py [--settle 10 --seconds 30 --watcher none|auto|poll]

Starts `streamlit run streamlit_app.py` from the repository with the project's `.streamlit/config.toml` (the
file watcher off, as `make run` uses it; `--watcher auto` measures what `make dev` turns on), waits for the
health endpoint and `--settle` seconds more, then reads the process's CPU time (user + system, from
/proc/<pid>/stat) at the start and end of `--seconds` and prints it as a share of one core. Target: under 2%.
Linux only (it reads /proc); the server binds to 127.0.0.1 on a free port and is stopped afterwards.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.02  # of one core
TICKS = os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far, from /proc/<pid>/stat (fields 14 and 15)."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2:].split()  # the command name may hold spaces: split after it
    return (int(fields[11]) + int(fields[12])) / TICKS


def _wait_healthy(proc: subprocess.Popen, port: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("streamlit exited early")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("streamlit did not become healthy")


def measure(*, settle: float, seconds: float, watcher: str | None) -> tuple[float, int]:
    """(share of one core while idle, log lines written) for one fresh server."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        cmd = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.port", str(port)]
        if watcher:
            cmd += ["--server.fileWatcherType", watcher]
        env = {**os.environ, "SLIME_ASSISTANT_HOME": str(Path(tmp) / "home")}
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                _wait_healthy(proc, port)
                time.sleep(settle)
                before, start = cpu_seconds(proc.pid), time.monotonic()
                time.sleep(seconds)
                after, end = cpu_seconds(proc.pid), time.monotonic()
            finally:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
        lines = len(log.read_text(errors="replace").splitlines())
    return (after - before) / (end - start), lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=10.0, help="seconds to wait after start-up")
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds to measure over")
    parser.add_argument("--watcher", choices=("none", "auto", "poll", "watchdog"), default=None,
                        help="override server.fileWatcherType (default: the project's config, i.e. none)")
    opts = parser.parse_args()
    share, lines = measure(settle=opts.settle, seconds=opts.seconds, watcher=opts.watcher)
    verdict = "ok" if share < TARGET else "OVER"
    label = f"watcher {opts.watcher or 'from config'}"
    print(f"idle server ({label}): {share * 100:.2f}% of one core over {opts.seconds:.0f} s "
          f"(target < {TARGET * 100:.0f}%) {verdict}; {lines} log line(s)")
    print(f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")
    return 0 if share < TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
