"""Take the README's screenshot of the Monitor page's GPU charts: headless Chromium (Playwright) against
`streamlit run`, on a slime-like TensorBoard run with the nvidia-smi CSV logs of its two nodes beside it
(disaggregated: node0 trains, node1 generates, one GPU of node1 never works).

    python tools/screenshot_monitor_gpu.py [--out docs/screenshot-monitor-gpu.png]

Everything is written to a temporary folder; nothing leaves localhost.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from test_browser import CHROMIUM, _free_port, _start_server, _stop  # noqa: E402

from core.memory.profile import Profile  # noqa: E402
from core.memory.store import Store  # noqa: E402
from core.monitor.gpu.synthetic import Layout, write_job_log, write_nvidia_smi_csv  # noqa: E402
from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run  # noqa: E402

BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshot-monitor-gpu.png"))
    opts = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=90_000)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store = Store(tmp / "home")
        store.save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
        store.close()
        scenario = Scenario(rollouts=16, seed=1)
        layout = Layout(nodes=2, gpus_per_node=4, training_gpus=4, idle=[(1, 3)])
        run = tmp / "runs" / "qwen3-4b-grpo"
        write_slime_like_run(run, scenario)
        for node in range(2):
            write_nvidia_smi_csv(run / f"gpu-node{node}.csv", layout, node, scenario)
        write_job_log(run / "job.log", layout, scenario)
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
                heading = page.get_by_role("heading", name="GPUs over time")
                expect(heading).to_be_visible()
                charts = page.locator(".js-plotly-plot")
                expect(charts.last).to_be_visible()
                page.wait_for_timeout(1500)
                out = Path(opts.out)
                out.parent.mkdir(parents=True, exist_ok=True)
                verdict = page.get_by_text("MON012 · GPUs are busy", exact=False).first
                verdict.scroll_into_view_if_needed()
                alert = page.locator("[data-testid='stAlert']").filter(has_text="MON012").first
                box = alert.bounding_box()
                page.screenshot(path=str(out.with_name(out.stem + "-verdict.png")),
                                clip={"x": box["x"] - 10, "y": box["y"] - 10, "width": box["width"] + 20,
                                      "height": box["height"] + 20})
                page.set_viewport_size({"width": 1280, "height": 2400})  # the app scrolls inside its own frame
                heading.scroll_into_view_if_needed()
                page.wait_for_timeout(1500)
                top = heading.bounding_box()
                gpu_chart = charts.nth(charts.count() - 1)
                for i in range(charts.count()):
                    if "GPU utilization" in (charts.nth(i).text_content() or ""):
                        gpu_chart = charts.nth(i)
                box = gpu_chart.bounding_box()
                page.screenshot(path=str(out),
                                clip={"x": 300, "y": top["y"] - 10, "width": 980,
                                      "height": box["y"] + box["height"] - top["y"] + 20})
                browser.close()
        finally:
            _stop(proc)
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
