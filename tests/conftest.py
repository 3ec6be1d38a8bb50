from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
