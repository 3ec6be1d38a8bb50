"""Real browser: Playwright drives Debian's chromium against `streamlit run` on a free localhost port.

Skips where /usr/bin/chromium is missing, unless SLIME_ASSISTANT_REQUIRE_BROWSER=1 (CI sets it), when a
missing browser is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("SLIME_ASSISTANT_CHROMIUM", "/usr/bin/chromium")
REQUIRED = os.environ.get("SLIME_ASSISTANT_REQUIRE_BROWSER") == "1"
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.browser


def _need_browser():
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"no browser at {CHROMIUM}")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright is not installed")
    if missing:
        if REQUIRED:
            pytest.fail("browser test required but " + "; ".join(missing))
        pytest.skip("; ".join(missing))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(port: int, home: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "SLIME_ASSISTANT_HOME": str(home)}
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"),
           "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"streamlit did not become healthy:\n{log.read_text()}")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture
def browser():
    _need_browser()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)  # a first page run imports the app: slower than Playwright's 5 s

    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)  # a loaded machine renders slowly; the default is 5 s
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"],
        )
        yield b
        b.close()


def test_onboarding_page_switch_and_memory_across_reload_and_restart(browser, tmp_path):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    home = tmp_path / "home"
    port = _free_port()
    proc = _start_server(port, home, tmp_path / "server1.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        url = f"http://127.0.0.1:{port}/"
        page.goto(url)
        # First visit: the three questions.
        page.get_by_role("textbox", name="Model name", exact=True).fill("Qwen3-4B")
        page.get_by_role("textbox", name="JSONL data path", exact=True).fill("/data/dapo math/$(reboot).jsonl")
        page.get_by_role("textbox", name="GPUs in total", exact=True).fill("8")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_text("Saved. Every page will start from these answers")).to_be_visible()
        expect(page.get_by_text("Start the GRPO setup guide")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)

        # A page switch through the sidebar navigation.
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="What's done").click()
        expect(page.get_by_role("heading", name="What's done")).to_be_visible()
        expect(page.get_by_text("0 of 8 workflows done", exact=False)).to_be_visible()

        # Reload: the answers are remembered, the questions are not asked again.
        page.goto(url)
        expect(page.get_by_text("Your profile: default")).to_be_visible()
        expect(page.get_by_text("/data/dapo math/$(reboot).jsonl")).to_be_visible()
        assert page.get_by_role("textbox", name="Model name", exact=True).count() == 0
    finally:
        _stop(proc)

    # Restart the server on the same store: still remembered.
    port2 = _free_port()
    proc2 = _start_server(port2, home, tmp_path / "server2.log")
    try:
        page = browser.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port2}/")
        expect(page.get_by_text("Your profile: default")).to_be_visible()
        expect(page.get_by_text("Qwen3-4B").first).to_be_visible()
    finally:
        _stop(proc2)


def test_grpo_draft_is_checked_and_recorded_in_the_browser(browser, tmp_path):
    from playwright.sync_api import expect

    sys.path.insert(0, str(ROOT))
    from core.memory.profile import Profile
    from core.memory.store import Store

    home = tmp_path / "home"
    store = Store(home)
    store.save_profile(Profile(model="Qwen3-4B", data_path="/data/my set/$(reboot).jsonl", gpus_total=8))
    store.close()
    port = _free_port()
    proc = _start_server(port, home, tmp_path / "server.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        # The first visit after the server starts is a page URL (a bookmark): it must still run inside the
        # declared navigation, not Streamlit's auto-discovered pages/ list.
        page.goto(f"http://127.0.0.1:{port}/grpo")
        expect(page.get_by_text("The script passes its checks").first).to_be_visible()
        nav = page.get_by_test_id("stSidebarNav")
        expect(nav.get_by_text("Set up a run")).to_be_visible()
        assert nav.get_by_role("link", name="grpo", exact=True).count() == 0
        code = page.get_by_test_id("stCode").first.inner_text()
        assert "--prompt-data '/data/my set/$(reboot).jsonl'" in code  # the user's value, quoted and inert
        page.get_by_role("button", name="Accept this draft").click()
        expect(page.get_by_text("kept in What's done", exact=False).first).to_be_visible()
        nav.get_by_role("link", name="What's done").click()
        expect(page.get_by_text("GRPO setup: done")).to_be_visible()
        expect(page.get_by_text("1 of 8 workflows done", exact=False)).to_be_visible()
    finally:
        _stop(proc)


GRPO_GBS = "Global batch, 0 = one step per rollout (--global-batch-size)"
DISAGGREGATED = "Disaggregated (separate actor and rollout GPUs)"


def _finished(page) -> None:
    """Wait until the app's script run is over (Streamlit shows its status widget while a run is going)."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stStatusWidget")).to_be_hidden()


def _draft_text(page) -> str:
    code = page.get_by_test_id("stCode").filter(has_text="#!/bin/bash").first
    return code.inner_text()


def _expect_grpo_inputs(page, draft: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text("The script passes its checks").first).to_be_visible()
    expect(page.get_by_role("radio", name=DISAGGREGATED)).to_be_checked()
    page.get_by_text("Hyperparameters (defaults").click()
    expect(page.get_by_role("spinbutton", name=GRPO_GBS)).to_have_value("64")
    assert _draft_text(page) == draft


def _seed_store(home: Path, **profile) -> None:
    sys.path.insert(0, str(ROOT))
    from core.memory.profile import Profile
    from core.memory.store import Store

    store = Store(home)
    store.save_profile(Profile(**{"model": "Qwen3-4B", "data_path": "/data/train.jsonl", "gpus_total": 8,
                                  **profile}))
    store.close()


def test_grpo_inputs_and_draft_survive_page_switch_reload_and_restart(browser, tmp_path):
    from playwright.sync_api import expect

    home = tmp_path / "home"
    _seed_store(home)
    logs = [tmp_path / "server1.log", tmp_path / "server2.log"]
    port = _free_port()
    proc = _start_server(port, home, logs[0])
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port}/grpo")
        expect(page.get_by_text("The script passes its checks").first).to_be_visible()
        page.get_by_text(DISAGGREGATED).click()
        expect(page.get_by_role("spinbutton", name="Actor (training) GPUs")).to_be_visible()
        page.get_by_text("Hyperparameters (defaults").click()
        gbs = page.get_by_role("spinbutton", name=GRPO_GBS)
        gbs.fill("64")
        gbs.press("Enter")
        expect(page.get_by_test_id("stCode").filter(has_text="--global-batch-size 64").first).to_be_visible()
        draft = _draft_text(page)
        assert "--colocate" not in draft and "--global-batch-size 64" in draft

        nav = page.get_by_test_id("stSidebarNav")
        nav.get_by_role("link", name="Home").click()
        expect(page.get_by_text("Your profile: default")).to_be_visible()
        nav.get_by_role("link", name="GRPO setup").click()
        _expect_grpo_inputs(page, draft)

        page.reload()
        _expect_grpo_inputs(page, draft)

        nav.get_by_role("link", name="What's done").click()
        expect(page.get_by_text("0 of 8 workflows done", exact=False)).to_be_visible()
        expect(page.get_by_text("GRPO setup: started")).to_be_visible()
    finally:
        _stop(proc)

    port2 = _free_port()
    proc2 = _start_server(port2, home, logs[1])
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port2}/grpo")
        _expect_grpo_inputs(page, draft)
        # Accepting is what marks the workflow done.
        page.get_by_role("button", name="Accept this draft").click()
        expect(page.get_by_text("kept in What's done", exact=False).first).to_be_visible()
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="What's done").click()
        expect(page.get_by_text("1 of 8 workflows done", exact=False)).to_be_visible()
        expect(page.get_by_text("GRPO setup: done")).to_be_visible()
    finally:
        _stop(proc2)
    for log in logs:
        text = log.read_text()
        assert "Session State API" not in text and "Traceback" not in text, text[-3000:]


def test_a_profile_that_only_visits_every_page_has_nothing_done(browser, tmp_path):
    from playwright.sync_api import expect

    sys.path.insert(0, str(ROOT))
    from core.memory.store import Store
    from core.memory.workflows import WORKFLOWS

    home = tmp_path / "home"
    _seed_store(home)
    port = _free_port()
    proc = _start_server(port, home, tmp_path / "server.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port}/")
        expect(page.get_by_text("Your profile: default")).to_be_visible()
        nav = page.get_by_test_id("stSidebarNav")
        more = nav.get_by_text(re.compile(r"^View \d+ more$"))  # a long navigation folds its last entries
        if more.count():
            more.first.click()
        for wf in WORKFLOWS:
            nav.get_by_role("link", name=wf.title).click()
            expect(page.get_by_text(f"{wf.title} counts as done in What's done when", exact=False)).to_be_visible()
        nav.get_by_role("link", name="What's done").click()
        expect(page.get_by_text("0 of 8 workflows done", exact=False)).to_be_visible()
        for wf in WORKFLOWS:
            expect(page.get_by_text(f"{wf.title}: not started")).to_be_visible()
    finally:
        _stop(proc)
    log = (tmp_path / "server.log").read_text()
    assert "Session State API" not in log and "Traceback" not in log, log[-3000:]
    store = Store(home)
    assert store.records("default") == {} and store.pages_with_inputs("default") == set()
    assert all(store.accepted("default", wf.id) == [] for wf in WORKFLOWS)


def test_sidebar_ask_opens_results_and_a_flag_link_opens_the_reference(browser, tmp_path):
    """The Ask box switches pages (AppTest cannot follow a switch made by the entry script); a flag result
    opens the flag reference on that flag."""
    from playwright.sync_api import expect

    port = _free_port()
    proc = _start_server(port, tmp_path / "home", tmp_path / "server.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port}/")
        box = page.get_by_test_id("stSidebar").get_by_role("textbox", name="Ask")
        box.fill("--rolout-batch-size")
        box.press("Enter")
        expect(page.get_by_role("heading", name="Ask", exact=True)).to_be_visible()
        assert "/ask?q=" in page.url
        page.get_by_role("link", name="--rollout-batch-size (slime)").first.click()
        expect(page.get_by_role("heading", name="Flag reference")).to_be_visible()
        expect(page.get_by_text("Set by", exact=False).first).to_be_visible()
        assert page.url.endswith("/flags?flag=--rollout-batch-size")
    finally:
        _stop(proc)


LOCAL_HOSTS = {"localhost", "127.0.0.1"}


def test_every_page_is_listed_and_no_page_requests_another_host(browser, tmp_path):
    """A first visit shows every page in the sidebar (no "View N more"), and visiting each page makes no
    request outside this machine (the favicon included: a Material icon there is fetched from Google)."""
    from urllib.parse import urlsplit

    from playwright.sync_api import expect

    sys.path.insert(0, str(ROOT))
    from core.memory.workflows import WORKFLOWS

    home = tmp_path / "home"
    _seed_store(home)
    port = _free_port()
    proc = _start_server(port, home, tmp_path / "server.log")
    outside: list[str] = []
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.on("request", lambda request: outside.append(request.url)
                   if (urlsplit(request.url).hostname or "") not in LOCAL_HOSTS
                   and urlsplit(request.url).scheme not in ("data", "blob", "about") else None)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port}/")
        expect(page.get_by_text("Your profile: default")).to_be_visible()
        nav = page.get_by_test_id("stSidebarNav")
        assert nav.get_by_text(re.compile(r"^View \d+ more$")).count() == 0
        titles = ["Home", "Profile", "What's done", *(wf.title for wf in WORKFLOWS), "Batch-size calculator",
                  "Ask", "Flag reference", "Knowledge cards"]
        for title in titles:
            link = nav.get_by_role("link", name=title, exact=True)
            expect(link).to_be_visible()
            link.click()
            expect(page.get_by_role("heading").first).to_be_visible()
            page.wait_for_load_state("networkidle")
        page.wait_for_timeout(500)
        context.close()
    finally:
        _stop(proc)
    assert outside == [], f"requests outside this machine: {sorted(set(outside))[:10]}"


def test_a_check_updates_its_status_at_once_and_hands_its_numbers_to_the_calculator(browser, tmp_path):
    """Before any first-visit answer: the checker works, says done in the same run, and the calculator gets
    every field from the script (an earlier micro-batch size cleared, dynamic batching and rollouts set)."""
    from playwright.sync_api import expect

    home = tmp_path / "home"
    port = _free_port()
    proc = _start_server(port, home, tmp_path / "server.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port}/batch_calculator")
        mbs = page.get_by_role("spinbutton", name="--micro-batch-size")
        mbs.fill("4")
        mbs.press("Enter")
        expect(page.get_by_role("spinbutton", name="--micro-batch-size")).to_have_value("4")
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Check launch script").click()
        expect(page.get_by_text("No profile yet: this page works without one")).to_be_visible()
        expect(page.get_by_text("Not done yet", exact=False)).to_be_visible()
        box = page.get_by_role("textbox", name="Launch script or argument list")
        box.fill((ROOT / "tests/fixtures/scripts/good_colocate.sh").read_text())
        box.press("Control+Enter")
        expect(page.get_by_text("Last checked", exact=False)).to_be_visible()
        assert page.get_by_text("Not done yet", exact=False).count() == 0
        page.get_by_role("button", name="Open this script's batch sizes in the calculator").click()
        expect(page.get_by_text("Every field below is set from your launch script")).to_be_visible()
        expect(page.get_by_role("spinbutton", name="--rollout-batch-size")).to_have_value("16")
        expect(page.get_by_role("spinbutton", name="--num-rollout")).to_have_value("100")
        expect(page.get_by_role("spinbutton", name="--micro-batch-size")).to_have_value("")
        expect(page.get_by_role("switch", name="--use-dynamic-batch-size")).to_be_checked()
    finally:
        _stop(proc)
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log, log[-3000:]


def test_an_accepted_conversion_command_shows_up_in_the_grpo_draft(browser, tmp_path):
    """Accepting the conversion command on the Model page fills the GRPO draft. This used to fail now and then
    on a loaded machine: the browser had lost the script select's value, fell back to its default "(choose)"
    and sent that back with the Accept click. Kept widgets now get their value as their default
    (ui/memory.py); a failure is screenshot, with the server's log, to test-artifacts/."""
    _accept_conversion_and_read_the_draft(browser, tmp_path / "run")


def _accept_conversion_and_read_the_draft(browser, folder: Path) -> None:
    from playwright.sync_api import expect

    folder.mkdir(parents=True)
    home = folder / "home"
    _seed_store(home)
    port = _free_port()
    proc = _start_server(port, home, folder / "server.log")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port}/grpo")
        expect(page.get_by_test_id("stCode").filter(has_text="--hf-checkpoint /root/Qwen3-4B").first).to_be_visible()
        nav = page.get_by_test_id("stSidebarNav")
        nav.get_by_role("link", name="Model and checkpoint").click()
        expect(page.get_by_role("heading", name="Model script and checkpoint")).to_be_visible()
        expect(page.get_by_role("button", name="Accept this command")).to_be_visible()
        hf = page.get_by_role("textbox", name="Hugging Face checkpoint folder (--hf-checkpoint)")
        _finished(page)
        hf.fill("/models/qwen3-4b-hf")
        hf.press("Enter")
        expect(page.get_by_test_id("stCode").filter(has_text="/models/qwen3-4b-hf_torch_dist").first).to_be_visible()
        _finished(page)  # a click while the page still runs may race its widgets' state
        page.get_by_role("button", name="Accept this command").click()
        try:
            expect(page.get_by_text("kept in What's done", exact=False).first).to_be_visible()
        except AssertionError:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"conversion-accept-failed-{folder.name}.png"), full_page=True)
            shutil.copy(folder / "server.log", ARTIFACTS / f"conversion-accept-failed-{folder.name}.log")
            raise
        nav.get_by_role("link", name="GRPO setup").click()
        expect(page.get_by_text("From the conversion command you accepted", exact=False)).to_be_visible()
        expect(page.get_by_role("textbox", name="Hugging Face checkpoint folder (--hf-checkpoint)")).to_have_value(
            "/models/qwen3-4b-hf")
        draft = _draft_text(page)
        assert "--hf-checkpoint /models/qwen3-4b-hf" in draft and "--ref-load /models/qwen3-4b-hf_torch_dist" in draft
    finally:
        page.close()
        _stop(proc)


def test_the_monitor_status_and_the_history_of_two_drafts_in_the_browser(browser, tmp_path):
    """A new load on the monitor changes its status line at once; What's done says what differs between two
    accepted drafts, each timed to the second."""
    from playwright.sync_api import expect

    sys.path.insert(0, str(ROOT))
    from core.monitor.tensorboard.synthetic import write_slime_like_run

    home = tmp_path / "home"
    _seed_store(home)
    event_file = sorted(write_slime_like_run(tmp_path / "run"), key=lambda p: p.stat().st_size)[-1]
    port = _free_port()
    proc = _start_server(port, home, tmp_path / "server.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        page.goto(f"http://127.0.0.1:{port}/monitor")
        expect(page.get_by_text("Not done yet", exact=False)).to_be_visible()
        page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(str(event_file))
        expect(page.get_by_text("Last checklist", exact=False)).to_be_visible()
        assert page.get_by_text("Not done yet", exact=False).count() == 0

        nav = page.get_by_test_id("stSidebarNav")
        nav.get_by_role("link", name="GRPO setup").click()
        page.get_by_role("button", name="Accept this draft").click()
        expect(page.get_by_text("kept in What's done", exact=False).first).to_be_visible()
        page.get_by_text("Hyperparameters (defaults").click()
        gbs = page.get_by_role("spinbutton", name=GRPO_GBS)
        gbs.fill("64")
        gbs.press("Enter")
        expect(page.get_by_test_id("stCode").filter(has_text="--global-batch-size 64").first).to_be_visible()
        page.get_by_role("button", name="Accept this draft").click()
        expect(page.get_by_text("kept in What's done", exact=False).first).to_be_visible()
        nav.get_by_role("link", name="What's done").click()
        page.get_by_text("GRPO setup: done").click()
        expect(page.get_by_text(f"Changed since the one before: {GRPO_GBS}: 0 → 64")).to_be_visible()
        stamps = page.get_by_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d · accepted the draft"))
        expect(stamps).to_have_count(2)
    finally:
        _stop(proc)
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log, log[-3000:]
