"""Time what a user waits for in a real browser: Playwright drives Debian's Chromium against `streamlit run`.

    python benchmarks/bench_browser.py [--repeat 5] [--monitor-only] [--pick-time SECONDS]

Figures (median of --repeat, wall time from the user's action until the result is on screen):
- first paint of the home page (first visit after the server started, then a warm visit);
- a page switch through the sidebar (target under 0.5 s);
- a 20-line JSONL upload on "Check my data", from choosing the file to the finished report (target under 1 s);
- a single TensorBoard event-file upload on "Monitor training", to the first plot (target under 2 s);
- the same with a 300,000-scalar event file (3,000 steps x 100 tags; the checklist's curves are drawn first,
  the others on demand), to the first plot (target under 2 s), and to every curve drawn (no target);
- a launch script pasted on "Check launch script", to its findings and the updated status line (target 1 s);
- a query in the sidebar's Ask box, to the results page (target 1 s);
- a switch to "Knowledge cards", to the list of every card (target 0.5 s).
Needs /usr/bin/chromium and playwright (both in the dev setup); nothing leaves localhost.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.memory.profile import Profile  # noqa: E402
from core.memory.store import Store  # noqa: E402
from core.monitor.tensorboard.synthetic import write_scalar_grid, write_slime_like_run  # noqa: E402
from tests.browser.test_browser import CHROMIUM, _free_port, _start_server, _stop  # noqa: E402

BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage"]
TARGETS = {"page switch": 0.5, "20-line JSONL check": 1.0, "event-file upload to first plot": 2.0,
           "launch-script check": 1.0, "Ask from the sidebar": 1.0, "switch to Knowledge cards": 0.5,
           "300k-scalar upload to first plot": 2.0}
SCRIPT = ROOT / "tests" / "fixtures" / "scripts" / "good_colocate.sh"
# A chart with a curve drawn in it (the empty chart area shown before any run is loaded has none)
FIRST_CURVE = ".js-plotly-plot .scatterlayer .trace"
EVERY_CURVE = """() => { const charts = [...document.querySelectorAll('.js-plotly-plot')];
  const done = [...document.querySelectorAll('button')].some(b => b.textContent.includes('Download what is shown'));
  return done && charts.length > 0 && charts.every(c => c.querySelector('.scatterlayer .trace')); }"""


def _timed(action, wait) -> float:
    start = time.perf_counter()
    action()
    wait()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--monitor-only", action="store_true", help="time only the two Monitor training uploads")
    parser.add_argument("--pick-time", type=float, default=0.0, help=(
        "seconds between the Monitor page appearing and each upload, as a person choosing a file takes (default 0: "
        "at once, so the chart code the page loads meanwhile is still loading)"))
    opts = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store = Store(tmp / "home")
        store.save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
        store.close()
        jsonl = tmp / "twenty.jsonl"
        jsonl.write_text("".join(f'{{"input": "What is {i} + {i}?", "label": "{2 * i}"}}\n' for i in range(20)))
        event_file = sorted(write_slime_like_run(tmp / "run"), key=lambda p: p.stat().st_size)[-1]
        big_file = write_scalar_grid(tmp / "big", 3000, 100)
        port = _free_port()
        proc = _start_server(port, tmp / "home", tmp / "server.log")
        figures: dict[str, list[float]] = {k: [] for k in ("first paint (cold)", "first paint (warm)",
                                                           *TARGETS, "300k-scalar upload to every curve")}
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
                for i in range(opts.repeat):
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    page.set_default_timeout(60_000)
                    label = "first paint (cold)" if i == 0 else "first paint (warm)"
                    figures[label].append(_timed(
                        lambda page=page: page.goto(f"http://127.0.0.1:{port}/"),
                        lambda page=page: expect(page.get_by_text("Your profile: default")).to_be_visible()))
                    nav = page.get_by_test_id("stSidebarNav")
                    switches = (("What's done", "What's done"), ("Home", "Your profile: default"))
                    for title, heading in () if opts.monitor_only else switches:
                        figures["page switch"].append(_timed(
                            lambda nav=nav, title=title: nav.get_by_role("link", name=title, exact=True).click(),
                            lambda page=page, heading=heading: expect(
                                page.get_by_text(heading, exact=False).first).to_be_visible()))
                    if not opts.monitor_only:
                        nav.get_by_role("link", name="Check my data").click()
                        page.get_by_test_id("stFileUploaderDropzoneInput").wait_for(state="attached")

                        def upload_and_check(page=page):
                            page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(jsonl))
                            page.get_by_role("button", name="Check", exact=True).click()

                        figures["20-line JSONL check"].append(_timed(
                            upload_and_check,
                            lambda page=page: expect(page.get_by_text("checked in", exact=False)).to_be_visible()))
                        nav.get_by_role("link", name="Check launch script").click()
                        box = page.get_by_role("textbox", name="Launch script or argument list")
                        box.wait_for(state="visible")
                        marker = f"--bench-unknown-{i}"  # a new script each visit: a flag the checker reports
                        box.fill(SCRIPT.read_text().replace("   --sglang-mem-fraction-static 0.7\n",
                                                            f"   --sglang-mem-fraction-static 0.7\n   {marker} 1\n"))
                        figures["launch-script check"].append(_timed(
                            lambda box=box: box.press("Control+Enter"),
                            lambda page=page, marker=marker: expect(  # in a finding, not in the text box itself
                                page.get_by_role("alert").filter(has_text=marker).first).to_be_visible()))
                        ask = page.get_by_test_id("stSidebar").get_by_role("textbox", name="Ask")
                        ask.fill("--rolout-batch-size")
                        figures["Ask from the sidebar"].append(_timed(
                            lambda ask=ask: ask.press("Enter"),
                            lambda page=page: expect(page.get_by_role(
                                "link", name="--rollout-batch-size (slime)").first).to_be_visible()))
                        figures["switch to Knowledge cards"].append(_timed(
                            lambda nav=nav: nav.get_by_role("link", name="Knowledge cards").click(),
                            lambda page=page: expect(page.get_by_text(re.compile(r"^\d+ of \d+ cards$"))).to_be_visible()))
                    nav.get_by_role("link", name="Monitor training").click()
                    page.get_by_test_id("stFileUploaderDropzoneInput").first.wait_for(state="attached")
                    time.sleep(opts.pick_time)
                    figures["event-file upload to first plot"].append(_timed(
                        lambda page=page: page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(
                            str(event_file)),
                        lambda page=page: page.locator(FIRST_CURVE).first.wait_for(state="visible")))
                    page.goto(f"http://127.0.0.1:{port}/monitor")
                    page.get_by_test_id("stFileUploaderDropzoneInput").first.wait_for(state="attached")
                    time.sleep(opts.pick_time)
                    start = time.perf_counter()
                    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(str(big_file))
                    page.locator(FIRST_CURVE).first.wait_for(state="visible")
                    figures["300k-scalar upload to first plot"].append(time.perf_counter() - start)
                    page.wait_for_function(EVERY_CURVE, timeout=60_000)
                    figures["300k-scalar upload to every curve"].append(time.perf_counter() - start)
                    page.close()
                browser.close()
        finally:
            _stop(proc)
    print(f"{'what the user waits for':34} {'median':>9} {'max':>8} {'target':>8}")
    for label, values in figures.items():
        if not values:
            continue
        med = statistics.median(values)
        target = TARGETS.get(label)
        verdict = "" if target is None else ("ok" if med < target else "OVER")
        shown = f"{target * 1000:6.0f} ms" if target else ""
        print(f"{label:34} {med * 1000:6.0f} ms {max(values) * 1000:5.0f} ms {shown:>8}  {verdict}")
    print(f"({opts.repeat} visits, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
          + (f", {opts.pick_time:g} s to pick each monitor file" if opts.pick_time else "") + ")")
    big = figures["300k-scalar upload to first plot"]
    if big:
        print(f"300,000 scalars (3,000 steps x 100 tags) uploaded on Monitor training, to the first curve drawn: "
              f"median {statistics.median(big) * 1000:.0f} ms of {len(big)} (target 2,000 ms); every curve drawn: "
              f"median {statistics.median(figures['300k-scalar upload to every curve']) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
