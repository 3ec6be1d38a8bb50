"""Time the first visit of each workflow page as a fresh server process sees it (AppTest, one new process per
page, so nothing is cached from another page), with a saved profile: the whole script run, median of N.

    python benchmarks/bench_pages.py [--repeat 3] [pages/grpo.py ...]

The app's home (SLIME_ASSISTANT_HOME) is a new folder, shared by the visits, where one `ask` saved the search
index's image first, as after the first use of an install.
By default each page is opened after Home (a newcomer lands there first: the app warms the other pages'
modules in the background once Home is drawn); `--direct` opens it as the server's very first page.
Target: a first visit under 0.5 s (issue 28) for GRPO, Async, Model and checkpoint, Multi-turn and the flag
reference. Each figure is wall time of `AppTest.run()` in a fresh interpreter, with the load average beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("pages/grpo.py", "pages/async_training.py", "pages/model_checkpoint.py", "pages/multi_turn.py",
         "pages/flags.py")
TARGET_S = 0.5
_CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from core.memory.profile import Profile
from core.memory.store import Store
Store().save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=120)
import streamlit  # the framework's own import is paid before the clock starts, as a running server has it
if {after_home!r}:
    at.run()  # the newcomer lands on Home and reads it for a few seconds before opening a page
    time.sleep(3)
at.switch_page({page!r})
start = time.perf_counter()
at.run()
first = time.perf_counter() - start
start = time.perf_counter()
at.run()
print(json.dumps({{"first": first, "again": time.perf_counter() - start, "exception": bool(at.exception)}}))
"""


def visit(page: str, home: str, after_home: bool) -> dict:
    env = {**os.environ, "SLIME_ASSISTANT_HOME": home, "PYTHONPATH": str(ROOT)}
    code = _CHILD.format(root=str(ROOT), app=str(ROOT / "streamlit_app.py"), page=str(ROOT / page),
                         after_home=after_home)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--direct", action="store_true", help="open the page as the server's very first page "
                        "(a bookmark right after a restart), not after Home")
    parser.add_argument("pages", nargs="*", default=list(PAGES))
    opts = parser.parse_args()
    home = tempfile.mkdtemp(prefix="bench-pages-")
    # the search index's image is saved once after install (the first `ask` or page that searches); the
    # first visit of a page in a new server process reads it
    subprocess.run([sys.executable, "-m", "core", "ask", "x"], cwd=ROOT, capture_output=True, check=False,
                   env={**os.environ, "SLIME_ASSISTANT_HOME": home, "PYTHONPATH": str(ROOT)})
    print(f"{'page':28} {'first visit':>12} {'rerun':>8} {'target':>7}")
    ok = True
    for page in opts.pages:
        runs = [visit(page, home, not opts.direct) for _ in range(opts.repeat)]
        first = statistics.median(r["first"] for r in runs)
        again = statistics.median(r["again"] for r in runs)
        verdict = "ok" if first < TARGET_S and not any(r["exception"] for r in runs) else "OVER"
        ok = ok and verdict == "ok"
        print(f"{page:28} {first * 1000:9.0f} ms {again * 1000:5.0f} ms {TARGET_S * 1000:4.0f} ms  {verdict}")
    print("(each page opened " + ("as the server's first page" if opts.direct else "after Home, 3 s later") + ")")
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
