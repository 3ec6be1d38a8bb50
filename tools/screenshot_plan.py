"""Take the README's screenshot of the "Will it fit?" page: headless Chromium (Playwright) against
`streamlit run`, with a profile for Qwen3-8B on 8 GPUs and the tokens per GPU raised until the plan warns.

    python tools/screenshot_plan.py [--out docs/screenshot-plan.png]

Everything is written to a temporary folder; nothing leaves localhost.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests", ROOT / "tools"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from screenshot_monitor_gpu import BROWSER_ARGS  # noqa: E402
from test_browser import CHROMIUM, _free_port, _start_server, _stop  # noqa: E402

from core.memory.profile import Profile  # noqa: E402
from core.memory.store import Store  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshot-plan.png"))
    opts = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=90_000)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store = Store(tmp / "home")
        store.save_profile(Profile(model="Qwen3-8B", data_path="/data/train.jsonl", gpus_total=8))
        store.close()
        port = _free_port()
        proc = _start_server(port, tmp / "home", tmp / "server.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 1500}, device_scale_factor=1)
                page.set_default_timeout(90_000)
                page.goto(f"http://127.0.0.1:{port}/plan")
                expect(page.locator(".js-plotly-plot").first).to_be_visible()
                tokens = page.get_by_label("Tokens per GPU (--max-tokens-per-gpu)")
                tokens.fill("32768")
                tokens.press("Enter")
                page.wait_for_timeout(2500)
                expect(page.locator(".js-plotly-plot").first).to_be_visible()
                out = Path(opts.out)
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), clip={"x": 300, "y": 0, "width": 980, "height": 1500})
                browser.close()
        finally:
            _stop(proc)
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
