"""Take the README's screenshot of a followed run with its GPU charts: headless Chromium (Playwright) against
`streamlit run`. A slime-like TensorBoard run and the nvidia-smi CSV logs of its two nodes are written half
way, the Monitor page loads them and follows them; then the run and the logs grow, the user comes back, and
the page says what changed since they last looked above the GPU charts, which now cover the whole run.

    python tools/screenshot_monitor_follow_gpu.py [--out docs/screenshot-monitor-follow-gpu.png]

The image is two parts of the same page put one above the other (the follow settings with the "since you
last looked" paragraph, then the GPU utilization chart). Everything is written to a temporary folder;
nothing leaves localhost.
"""

from __future__ import annotations

import argparse
import calendar
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from screenshot_monitor_gpu import BROWSER_ARGS  # noqa: E402
from test_browser import CHROMIUM, _free_port, _start_server, _stop  # noqa: E402

from core.memory.profile import Profile  # noqa: E402
from core.memory.store import Store  # noqa: E402
from core.monitor.gpu.synthetic import Layout, write_nvidia_smi_csv  # noqa: E402
from core.monitor.tensorboard.synthetic import Scenario, slime_like_calls  # noqa: E402

SCENARIO = Scenario(rollouts=16, seed=1)
LAYOUT = Layout(nodes=2, gpus_per_node=4, training_gpus=4, idle=[(1, 3)])
HALF = 8  # rollouts written before the first look


def write_tb_part(run: Path, lo: int, hi: int) -> None:
    """The log calls of rollouts lo..hi-1 of the scenario, as slime's two processes write them (a later part
    is a new pair of files, as after a restart that resumes where the run stopped)."""
    from tensorboardX import SummaryWriter

    writers = {name: SummaryWriter(str(run), filename_suffix=f".r{lo:06d}.{name}", flush_secs=3600,
                                   max_queue=10_000) for name in ("rollout_manager", "actor")}
    rollout = -1
    for call in slime_like_calls(SCENARIO):  # in slime's order: each rollout's calls follow its rollout/step
        if call.process == "rollout_manager" and call.step_key == "rollout/step":
            rollout = call.step
        if lo <= rollout < hi:
            for name, value in call.values.items():
                writers[call.process].add_scalar(name, value, call.step, walltime=call.wall)
    for w in writers.values():
        w.close()


def rollout_end_wall(upto: int) -> float:
    return max(c.wall for c in slime_like_calls(SCENARIO) if c.process == "rollout_manager" and c.step < upto)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshot-monitor-follow-gpu.png"))
    opts = parser.parse_args()
    from PIL import Image
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=90_000)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store = Store(tmp / "home")
        store.save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8, gpus_per_node=4))
        store.close()
        run = tmp / "runs" / "qwen3-4b-grpo"
        run.mkdir(parents=True)
        full = {n: write_nvidia_smi_csv(tmp / "full" / f"gpu-node{n}.csv", LAYOUT, n, SCENARIO).read_text()
                .splitlines() for n in range(2)}
        cut = rollout_end_wall(HALF)
        def before_cut(line: str) -> bool:  # nvidia-smi's timestamp, here in UTC
            stamp = line.split(",", 1)[0].split(".")[0]
            return calendar.timegm(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) <= cut

        heads = {n: [lines[0], *[line for line in lines[1:] if before_cut(line)]] for n, lines in full.items()}
        write_tb_part(run, 0, HALF)
        for n in range(2):
            (run / f"gpu-node{n}.csv").write_text("\n".join(heads[n]) + "\n")
        os.environ["SLIME_ASSISTANT_ROOTS"] = str(tmp / "runs")
        port = _free_port()
        proc = _start_server(port, tmp / "home", tmp / "server.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 1000}, device_scale_factor=1)
                page.set_default_timeout(90_000)
                page.goto(f"http://127.0.0.1:{port}/monitor")
                page.get_by_role("tab", name="Folder on this machine").click()
                page.get_by_role("textbox", name="Run folder, or a folder of runs").fill(str(run))
                page.get_by_role("button", name="Add this folder").click()
                expect(page.get_by_role("heading", name="GPUs over time")).to_be_visible()
                page.get_by_text("Refresh on its own").click()
                expect(page.get_by_text("Following: every")).to_be_visible()
                page.wait_for_timeout(2000)
                # the run and its GPU logs grow while the user is away
                write_tb_part(run, HALF, SCENARIO.rollouts)
                for n in range(2):
                    with open(run / f"gpu-node{n}.csv", "a", encoding="utf-8") as fh:
                        fh.write("".join(line + "\n" for line in full[n][len(heads[n]):]))
                page.wait_for_timeout(1500)
                page.goto(f"http://127.0.0.1:{port}/monitor")  # they come back: a new session
                since = page.locator("[data-testid='stAlert']").filter(has_text="Since you last looked").first
                expect(since).to_be_visible()
                heading = page.get_by_role("heading", name="GPUs over time")
                expect(heading).to_be_visible()
                charts = page.locator(".js-plotly-plot")
                expect(charts.last).to_be_visible()
                page.set_viewport_size({"width": 1280, "height": 2400})  # the app scrolls inside its own frame
                page.wait_for_timeout(2500)
                follow = page.get_by_role("heading", name="Follow the runs")
                follow.scroll_into_view_if_needed()
                page.wait_for_timeout(500)
                top, box = follow.bounding_box(), since.bounding_box()
                upper = page.screenshot(clip={"x": 300, "y": top["y"] - 10, "width": 980,
                                              "height": box["y"] + box["height"] - top["y"] + 20})
                heading.scroll_into_view_if_needed()
                page.wait_for_timeout(1500)
                gpu_chart = charts.nth(charts.count() - 1)
                for i in range(charts.count()):
                    if "GPU utilization" in (charts.nth(i).text_content() or ""):
                        gpu_chart = charts.nth(i)
                top, box = heading.bounding_box(), gpu_chart.bounding_box()
                lower = page.screenshot(clip={"x": 300, "y": top["y"] - 10, "width": 980,
                                              "height": box["y"] + box["height"] - top["y"] + 20})
                browser.close()
        finally:
            _stop(proc)
    a, b = Image.open(io.BytesIO(upper)), Image.open(io.BytesIO(lower))
    gap = 24
    out_img = Image.new("RGB", (max(a.width, b.width), a.height + gap + b.height), "white")
    out_img.paste(a, (0, 0))
    for x in range(0, out_img.width, 12):  # a dashed line: two parts of one page
        for y in range(a.height + gap // 2 - 1, a.height + gap // 2 + 1):
            for dx in range(6):
                if x + dx < out_img.width:
                    out_img.putpixel((x + dx, y), (190, 190, 190))
    out_img.paste(b, (0, a.height + gap))
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out_img.save(out, optimize=True)
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
