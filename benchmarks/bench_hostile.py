"""Issue 28's hostile inputs at full size: each one in a fresh process, with its wall time, CPU time and peak
memory (the bound: a clear message within 10 s and 2 GB). The tests hold the same shapes at a smaller size.

    python benchmarks/bench_hostile.py                        # every case, with this checkout's code
    python benchmarks/bench_hostile.py --code /work/main      # the same inputs with other code (before)
    python benchmarks/bench_hostile.py --only ask-fifo logs-20k

Fixtures are built in a temporary folder (a FIFO with os.mkfifo, large files written on the fly) and removed
after. check-args cases copy the pinned slime checkout ($SLIME_ASSISTANT_SOURCES/slime, or /work/sources/slime):
those are skipped without it. A case past --timeout (default 60 s) is killed and shown as such. Figures depend
on the machine's load: say it beside them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = Path(os.environ.get("SLIME_ASSISTANT_SOURCES", "/work/sources"))
BOOT = """
import resource, sys
code = 1
try:
    if sys.argv[1] == "--python":
        exec(sys.argv[2]); code = 0
    else:
        from core.cli import main
        code = main(sys.argv[1:])
finally:
    r = resource.getrusage(resource.RUSAGE_SELF)
    sys.stderr.write(f"\\n@@bounds {r.ru_utime + r.ru_stime:.2f} {r.ru_maxrss}\\n")
sys.exit(code)
"""


# -- the fixtures -------------------------------------------------------------------------------------------
def slime_copy(tmp: Path, name: str) -> Path | None:
    """A copy of the pinned slime checkout's code, scripts and docker files (no .git), or None without it."""
    src = SOURCES / "slime"
    if not (src / "slime" / "utils" / "arguments.py").is_file():
        return None
    out = tmp / name
    out.mkdir()
    for part in ("slime", "docker", "scripts", "train.py"):
        (shutil.copytree if (src / part).is_dir() else shutil.copy2)(src / part, out / part)
    return out


def checkout(tmp: Path, name: str) -> Path:
    out = tmp / name
    (out / "slime" / "utils").mkdir(parents=True)
    (out / "slime" / "utils" / "arguments.py").write_text("assert ok, 'x must exceed one'\n")
    return out


def ask(co: Path) -> list[str]:
    return ["ask", "--slime-checkout", str(co), "AssertionError: x must exceed one"]


def case_ask_fifo(tmp: Path) -> list[str]:
    co = checkout(tmp, "co")
    os.mkfifo(co / "slime" / "pipe.py")
    return ask(co)


def case_ask_chain(tmp: Path) -> list[str]:
    co = checkout(tmp, "co")
    (co / "slime" / "deep.py").write_text("x = " + "+".join(["a"] * 10_000) + "\n")
    return ask(co)


def case_ask_31_big(tmp: Path) -> list[str]:
    co = checkout(tmp, "co")
    for n in range(31):  # 31 files of 1.9 MB of code (asserts with messages)
        lines = "".join(f"assert x{n}_{i}, 'message {n} {i} of a big file'\n" for i in range(39_000))
        (co / "slime" / f"big{n}.py").write_text(lines)
    return ask(co)


def case_ask_link_out(tmp: Path) -> list[str]:
    co = checkout(tmp, "co")
    (tmp / "elsewhere").mkdir()
    for n in range(200):
        (tmp / "elsewhere" / f"f{n}.py").write_text(f"assert y, 'a message from outside {n}'\n")
    (co / "tools").symlink_to(Path("..") / "elsewhere")
    return ["ask", "--slime-checkout", str(co), "AssertionError: a message from outside 7"]


def script() -> str:
    return str(SOURCES / "slime" / "scripts" / "run-qwen3-4B.sh")


def case_args_list(tmp: Path, files: int = 1) -> list[str] | None:
    co = slime_copy(tmp, "co")
    if co is None:
        return None
    names = ["slime/utils/arguments.py", "slime/backends/sglang_utils/arguments.py",
             "slime/backends/megatron_utils/arguments.py", "slime/backends/megatron_utils/__init__.py",
             "slime/backends/megatron_utils/server/arguments.py"][:files]
    for rel in names:
        with open(co / rel, "a") as fh:
            fh.write("\nBIG = [" + "0," * 1_900_000 + "]\n")
    return ["check-args", script(), "--slime-checkout", str(co)]


def case_args_patch(tmp: Path) -> list[str] | None:
    co = slime_copy(tmp, "co")
    megatron = SOURCES / "megatron"
    if co is None or not (megatron / "megatron" / "training" / "arguments.py").is_file():
        return None
    rel = "megatron/training/arguments.py"
    context = (megatron / rel).read_text().split("\n")[2904]  # about 3,000 lines down
    body = "".join(f"@@ -1 +1,2 @@\n {context}\n+#\n" for _ in range(90_000))
    (co / "docker" / "patch" / "latest" / "megatron.patch").write_text(f"--- a/{rel}\n+++ b/{rel}\n{body}")
    return ["check-args", script(), "--slime-checkout", str(co), "--megatron-source", str(megatron)]


def case_gpu_impossible(tmp: Path) -> list[str]:
    rows = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    for i in range(80_000):  # 10,000 seconds of 8 GPUs
        util, used = ("-1e308 %", "1e308 MiB") if i % 2 else ("95 %", "60000 MiB")
        t = i // 8
        rows.append(f"2026/12/03 {7 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.000, {i % 8}, {util}, {used}, "
                    "81559 MiB")
    (tmp / "gpu.csv").write_text("\n".join(rows) + "\n")
    code = ("from core.monitor.gpu.nvidia_smi import read_nvidia_smi\n"
            "from core.monitor.gpu.judge import summarize\n"
            f"s, r = read_nvidia_smi({str(tmp / 'gpu.csv')!r}, 'n0', [10**7])\n"
            "print(r.notes); print('median', summarize(s[0]).utilization_median)")
    return ["--python", code]


def case_job_log(tmp: Path) -> list[str]:
    lines = []
    for i in range(60):
        used = "1.2.3" if i == 30 else f"{10 + i / 10:.2f}"
        lines.append(f"(MegatronTrainRayActor pid=1, ip=10.0.0.1) [2026-12-03 07:{i:02d}:00] memory_utils.py:45 - "
                     f"[Rank 0] Memory-Usage after offload: {{'total_GB': 79.11, 'used_GB': {used}}}")
    (tmp / "job.log").write_text("\n".join(lines) + "\n")
    code = ("from core.monitor.gpu.job_log import read_job_log\n"
            f"g, h, m, r = read_job_log({str(tmp / 'job.log')!r}, [10**7])\n"
            "print(r.samples, 'samples;', r.notes)")
    return ["--python", code]


def cut_event_files(run: Path, n: int, start: int = 0) -> None:
    sys.path.insert(0, str(ROOT))
    from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event

    run.mkdir(parents=True, exist_ok=True)
    head = frame_record(file_version_event()) + frame_record(scalar_event("rollout/raw_reward", 0.5, 1))
    for i in range(start, start + n):
        cut = frame_record(scalar_event("rollout/raw_reward", 0.5, i + 2))
        (run / f"events.out.tfevents.{1_750_000_000 + i}.host").write_bytes(head + cut[: len(cut) // 2])


def case_logs(n: int) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        cut_event_files(tmp / "run", n)
        return ["logs", str(tmp / "run")]
    return build


def case_logs_parent(tmp: Path) -> list[str]:
    for k in range(64):  # a parent folder of other runs' logs: 64 runs of 30 files (1,920 files)
        cut_event_files(tmp / "parent" / f"run{k:02d}", 30, start=100 * k)
    return ["logs", str(tmp / "parent")]


def case_flag_page_core(tmp: Path) -> list[str] | None:
    co = slime_copy(tmp, "co")
    if co is None:
        return None
    os.mkfifo(co / "scripts" / "stuck.sh")
    (tmp / "elsewhere").mkdir()
    (tmp / "elsewhere" / "run.sh").write_text("python3 train.py --rollout-batch-size 999\n")
    (co / "examples").symlink_to(tmp / "elsewhere")
    code = ("from pathlib import Path\nfrom core.knowledge.flags import checkout_flag_view\n"
            f"rows, ref, problems, _ = checkout_flag_view(Path({str(co)!r}))\n"
            "print(ref.scripts_read, 'scripts;', getattr(ref, 'scripts_not_read', None))")
    return ["--python", code]


CASES: dict[str, tuple[str, Callable[[Path], list[str] | None]]] = {
    "ask-fifo": ("1: ask, a .py file that is a FIFO", case_ask_fifo),
    "ask-chain": ("2: ask, a 10,000-term chained expression", case_ask_chain),
    "ask-31x1.9MB": ("3: ask, 31 files of 1.9 MB", case_ask_31_big),
    "args-list": ("5: check-args, a 1.9-million-element list", case_args_list),
    "args-list-x5": ("5: check-args, five such files", lambda tmp: case_args_list(tmp, 5)),
    "ask-link-out": ("6: ask, tools -> ../elsewhere", case_ask_link_out),
    "args-patch": ("7: check-args, a patch of 90,000 far hunks", case_args_patch),
    "gpu-impossible": ("9: nvidia-smi CSV of -1e308 % and 1e308 MiB", case_gpu_impossible),
    "logs-10k": ("12: logs, 10,000 damaged event files", case_logs(10_000)),
    "logs-20k": ("12: logs, 20,000 damaged event files", case_logs(20_000)),
    "logs-100k": ("12: logs, 100,000 damaged event files", case_logs(100_000)),
    "job-log": ("13: a job log with one malformed number", case_job_log),
    "flags-fifo-link": ("14: flag reference, a FIFO in scripts/, examples -> outside", case_flag_page_core),
    "logs-parent": ("first hour 1: logs on a parent of 64 runs (1,920 files)", case_logs_parent),
}


def run_case(args: list[str], code: Path, home: Path, timeout: float) -> tuple[str, float, str, str, str]:
    env = {**os.environ, "PYTHONPATH": str(code), "SLIME_ASSISTANT_HOME": str(home), "LC_ALL": "C.UTF-8"}
    env.pop("SLIME_ASSISTANT_ROOTS", None)
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", BOOT, *args], capture_output=True, env=env, timeout=timeout,
                              cwd=home.parent)
    except subprocess.TimeoutExpired:
        return "killed", time.perf_counter() - started, "-", "-", f"still running after {timeout:.0f} s"
    wall = time.perf_counter() - started
    err = done.stderr.decode("utf-8", "replace")
    marks = [ln for ln in err.splitlines() if ln.startswith("@@bounds ")]
    cpu, rss = (marks[-1].split()[1:] + ["-", "-"])[:2] if marks else ("-", "-")
    head = "\n".join(ln for ln in err.splitlines() if not ln.startswith("@@bounds "))
    text = (done.stdout.decode("utf-8", "replace") + "\n" + head).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    keys = ("Traceback", "not read", "In your slime checkout", "left out", "could not be used", "not applied", "not taken", "skipped",
            "end inside", "Error")
    shown = next((ln for k in keys for ln in lines if k in ln), lines[0] if lines else "")
    if "Traceback" in shown:
        shown = "Traceback: " + lines[-1]
    rss_text = f"{int(rss) / 1024:.0f} MB" if rss.isdigit() else rss
    return f"rc {done.returncode}", wall, f"{cpu} s", rss_text, shown[:160]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose code runs (default: this one)")
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), help="these cases only")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    print(f"code: {args.code}; load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'case':<18} {'exit':<7} {'wall':>7} {'cpu':>8} {'peak':>8}  what it said")
    for key in args.only or CASES:
        title, build = CASES[key]
        tmp = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
        try:
            command = build(tmp)
            if command is None:
                print(f"{key:<18} skipped: needs the pinned sources ({SOURCES})")
                continue
            (tmp / "home").mkdir()
            rc, wall, cpu, rss, said = run_case(command, args.code, tmp / "home", args.timeout)
            print(f"{key:<18} {rc:<7} {wall:6.2f}s {cpu:>8} {rss:>8}  {said}")
            print(f"{'':<18} ({title})")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
