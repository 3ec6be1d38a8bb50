"""AppTest: the Monitor page follows a growing run (appended bytes only), remembers the refresh settings per
profile and says what changed since the user last looked."""

from __future__ import annotations

import pytest

from core.memory.profile import Profile
from core.memory.store import Store
from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event


def _rows(lo: int, hi: int) -> bytes:
    out = b""
    for r in range(lo, hi):
        out += frame_record(scalar_event("rollout/raw_reward", 0.1 + 0.01 * r, r, wall_time=1e9 + r))
        out += frame_record(scalar_event("train/grad_norm", 1.0, r, wall_time=1e9 + r))
    return out


@pytest.fixture
def growing(tmp_path, monkeypatch):
    root = tmp_path / "logs"
    run = root / "live"
    run.mkdir(parents=True)
    path = run / "events.out.tfevents.1.host"
    path.write_bytes(frame_record(file_version_event()) + _rows(0, 20))
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(root))
    return run, path


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_page_follows_a_growing_run_and_says_what_changed(app_env, make_app, growing):
    run, path = growing
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/monitor.py").run()
    at.text_input(key="mon_dir").input(str(run))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    assert "40 scalars" in _captions(at)
    assert not at.toggle(key="mon_follow").value  # paused until asked
    at.toggle(key="mon_follow").set_value(True).run()
    at.number_input(key="mon_follow_interval").set_value(15).run()
    assert "Following: every 15 s" in _captions(at)
    with open(path, "ab") as fh:
        fh.write(_rows(20, 35))
    at.button(key="mon_refresh").click().run()
    assert not at.exception
    assert "70 scalars" in _captions(at)
    [follower] = at.session_state["mon_provider"].followers()  # the same follower, read on from its offset
    assert follower.run.files[0].how == "appended"
    # a new session of the same profile: the settings are kept, and the page says what changed since
    with open(path, "ab") as fh:
        fh.write(_rows(35, 50))
    import streamlit as st

    st.cache_resource.clear()
    again = make_app("pages/monitor.py").run()
    assert not again.exception
    assert again.toggle(key="mon_follow").value and again.number_input(key="mon_follow_interval").value == 15
    infos = " ".join(i.value for i in again.info).replace("\\", "")  # markdown escapes
    assert "Since you last looked" in infos and "15 new rollouts (35 -> 50)" in infos
    assert "the reward (rollout/raw_reward" in infos


def test_since_you_last_looked_counts_the_gpu_verdict(app_env, make_app, tmp_path, monkeypatch):
    """A GPU log that filled in while the user was away: MON012's new status is in the paragraph."""
    from core.monitor.gpu.synthetic import Layout, write_nvidia_smi_csv
    from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run

    scenario, layout = Scenario(rollouts=12, seed=1), Layout(nodes=2, gpus_per_node=4, training_gpus=4)
    run = tmp_path / "gpu-logs" / "run"
    write_slime_like_run(run, scenario)
    full = {n: write_nvidia_smi_csv(tmp_path / "full" / f"gpu-node{n}.csv", layout, n, scenario).read_text()
            for n in range(2)}
    for n, text in full.items():
        (run / f"gpu-node{n}.csv").write_text(text.splitlines()[0] + "\n")  # the header, no sample yet
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path / "gpu-logs"))
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/monitor.py").run()
    at.text_input(key="mon_dir").input(str(run))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    for n, text in full.items():
        (run / f"gpu-node{n}.csv").write_text(text)
    import streamlit as st

    st.cache_resource.clear()
    again = make_app("pages/monitor.py").run()
    assert not again.exception
    infos = " ".join(i.value for i in again.info).replace("\\", "")
    assert "Since you last looked" in infos and "no new data" in infos
    assert "MON012 GPUs are busy unknown -> warn" in infos
