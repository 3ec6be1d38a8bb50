from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def private_home_store(tmp_path_factory, monkeypatch) -> None:
    """No test writes to the user's own store or cache (the `logs` command caches parsed logs there)."""
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(tmp_path_factory.mktemp("home-store")))


@pytest.fixture
def store_dir(tmp_path, monkeypatch) -> Path:
    """A fresh, private store for each test (the app reads SLIME_ASSISTANT_HOME)."""
    d = tmp_path / "store"
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(d))
    return d


@pytest.fixture
def app_env(store_dir, monkeypatch):
    """Run AppTest against a fresh store: clear the per-process cached Store between tests."""
    import streamlit as st

    monkeypatch.chdir(ROOT)
    st.cache_resource.clear()
    st.cache_data.clear()
    yield store_dir
    st.cache_resource.clear()


APP_TIMEOUT = 60


@pytest.fixture
def make_app(app_env):
    """Factory for an AppTest of the whole app, optionally opened on one page ('pages/x.py')."""
    from streamlit.testing.v1 import AppTest

    def _make(page: str | None = None) -> AppTest:
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=APP_TIMEOUT)
        if page:
            at.switch_page(str(ROOT / page))
        return at

    return _make


# W&B runs written once per session by the real wandb SDK (offline): slime's layout, then a resumed run
WANDB_RUN_ID = "slimerun1"


@pytest.fixture(scope="session")
def wandb_root(tmp_path_factory) -> Path:
    """A directory holding wandb/: one slime-like run (primary, rollout manager, actor), then resumed."""
    pytest.importorskip("wandb")
    from core.monitor.wandb.synthetic import WANDB_FIRST, WANDB_RESUMED, write_wandb_run

    root = tmp_path_factory.mktemp("wandb-runs")
    write_wandb_run(root, WANDB_FIRST, run_id=WANDB_RUN_ID)
    write_wandb_run(root, WANDB_RESUMED, run_id=WANDB_RUN_ID, primary=False)
    return root


@pytest.fixture(scope="session")
def tb_twin(tmp_path_factory) -> Path:
    """The same values written as TensorBoard logs (what a TensorBoard user of slime would have)."""
    from core.monitor.tensorboard.synthetic import write_slime_like_run
    from core.monitor.wandb.synthetic import WANDB_FIRST, WANDB_RESUMED

    d = tmp_path_factory.mktemp("tb-twin") / "run"
    write_slime_like_run(d, WANDB_FIRST)
    write_slime_like_run(d, WANDB_RESUMED)
    return d
