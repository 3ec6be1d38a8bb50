"""AppTest: the Monitor page reads runs from a folder inside the roots, shows curves, checklist and record."""

from __future__ import annotations

import json

import pytest

from core.memory.profile import Profile
from core.memory.store import Store
from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run


@pytest.fixture
def roots(tmp_path, monkeypatch):
    root = tmp_path / "logs"
    write_slime_like_run(root / "proj" / "good", Scenario(rollouts=25))
    write_slime_like_run(root / "proj" / "bad", Scenario(rollouts=25, reward="flat_zero", entropy_collapse=True))
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(root))
    return root


def _open(make_app, app_env):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/monitor.py").run()
    assert not at.exception
    return at


def test_page_without_runs_explains_what_to_do_and_drafts_flags(app_env, make_app, roots):
    at = _open(make_app, app_env)
    assert any("Upload event files" in i.value for i in at.info)
    codes = " ".join(c.value for c in at.code)
    assert "--use-tensorboard" in codes and "--tb-experiment-name Qwen3-4B-grpo" in codes
    assert "tensorboard --logdir tensorboard_log/slime" in codes


def test_folder_in_roots_gives_checklist_curves_and_record(app_env, make_app, roots):
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(roots / "proj"))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    labels = [e.label for e in at.expander]
    assert any(label.startswith("good: 0 fail") for label in labels)
    assert any(label.startswith("bad: ") and "0 fail" not in label for label in labels)
    errors = " ".join(e.value for e in at.error)
    assert "MON002" in errors and "exactly 0" in errors
    charts = at.get("plotly_chart")
    # the checklist's curves are drawn first, the others on demand
    assert 10 <= len(charts) < 30 and charts[0].key == "mon_fig_rollout/raw_reward"
    at.toggle(key="mon_show_all").set_value(True).run()
    assert len(at.get("plotly_chart")) >= 30
    assert any("nvidia\\-smi" in c.value or "nvidia-smi" in c.value for c in at.code)
    [record] = Store(app_env).accepted("default", "monitor")  # runs the user loaded: done
    assert "MON002" in record.output and record.output_name == "monitor-checklist.txt"
    assert any("bad" in item and "MON002" in item for item in record.todo_items)
    # The folders and view choices are kept; showing them again in a new session records nothing new.
    at.selectbox(key="mon_xaxis").set_value(at.selectbox(key="mon_xaxis").options[1]).run()
    import streamlit as st

    st.cache_resource.clear()
    again = make_app("pages/monitor.py").run()
    assert not again.exception
    assert again.selectbox(key="mon_xaxis").value == at.selectbox(key="mon_xaxis").options[1]
    assert any(e.label.startswith("good: 0 fail") for e in again.expander)
    assert len(Store(app_env).accepted("default", "monitor")) == 1


def test_tag_filter_is_words_and_wildcards_never_a_regex(app_env, make_app, roots):
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(roots / "proj" / "good"))
    at.button(key="mon_dir_add").click().run()
    at.text_input(key="mon_filter").input("entropy|grad_norm").run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 2
    at.text_input(key="mon_filter").input("train/*norm").run()
    assert len(at.get("plotly_chart")) == 1
    at.text_input(key="mon_filter").input("(a+)+$").run()  # regex syntax is plain text: matches no tag
    assert not at.exception
    assert not at.get("plotly_chart")
    assert any("No tag matches" in i.value for i in at.info)
    assert "Not a regular expression" in (at.text_input(key="mon_filter").help or "")


def test_evidence_is_a_small_table_not_json(app_env, make_app, roots):
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(roots / "proj" / "bad"))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    assert not any(c.language == "json" for c in at.code)
    tables = at.dataframe
    assert tables
    first = tables[0].value
    assert list(first.columns) == ["what", "value"]
    assert "curve" in set(first["what"])


def test_folder_outside_roots_is_refused(app_env, make_app, roots, tmp_path):
    outside = tmp_path / "elsewhere"
    write_slime_like_run(outside, Scenario(rollouts=3))
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(outside))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    assert any("outside the directories" in e.value for e in at.error)
    assert _curves(at) == []  # only the empty chart area shown before any run is loaded


def _curves(at) -> list:
    """The charts holding a curve (the empty chart area shown before a run is loaded holds none)."""
    return [c for c in at.get("plotly_chart") if json.loads(c.proto.spec)["data"]]


def test_before_any_run_an_empty_chart_area_loads_the_chart_code(app_env, make_app, roots):
    at = _open(make_app, app_env)
    [chart] = at.get("plotly_chart")  # drawn now so the browser loads plotly.js while the user picks files
    spec = json.loads(chart.proto.spec)
    assert spec["data"] == [] and spec["layout"]["annotations"][0]["text"] == "The curves appear here"
    at.text_input(key="mon_dir").input(str(roots / "proj" / "good"))
    at.button(key="mon_dir_add").click().run()
    assert len(_curves(at)) == len(at.get("plotly_chart")) >= 10  # gone once a run is loaded


def test_x_axis_smoothing_and_outliers_controls(app_env, make_app, roots):
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(roots / "proj" / "good"))
    at.button(key="mon_dir_add").click().run()
    at.text_input(key="mon_filter").input("train/grad_norm").run()
    at.selectbox(key="mon_xaxis").select("Rollout index (lines up rollout/, train/ and eval/)").run()
    at.slider(key="mon_smoothing").set_value(0.0).run()
    at.checkbox(key="mon_outliers").check().run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["title"]["text"] == "train/grad_norm"
    assert spec["layout"]["xaxis"]["title"]["text"].startswith("Rollout index")
    assert len(spec["data"]) == 1  # smoothing 0: the raw line only, no faint copy behind it
    assert "range" in spec["layout"]["yaxis"]


HOSTILE = "![x](http://attacker.example/p.png) <b>bold</b>"


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Uploads land in a temporary directory of this test only, so its contents can be counted."""
    import tempfile

    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def _event_files(tmp_path, scenario: Scenario) -> list[tuple[str, bytes, str]]:
    files = write_slime_like_run(tmp_path / "made" / str(id(scenario)), scenario)
    return [(p.name, p.read_bytes(), "application/octet-stream") for p in files]


def _shown_text(at) -> list[str]:
    """Every label or text the page passes through Streamlit's markdown."""
    texts = [e.label for e in at.expander]
    for kind in ("markdown", "caption", "info", "warning", "error", "success"):
        texts += [e.value for e in getattr(at, kind)]
    return texts


def _plot_names(at) -> list[str]:
    out = []
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        out += [t.get("name", "") for t in spec["data"]] + [spec["layout"]["title"]["text"]]
    return out


def test_hostile_run_name_is_escaped_in_labels_text_and_charts(app_env, make_app, roots, private_tmp, tmp_path):
    at = _open(make_app, app_env)
    at.text_input(key="mon_upload_name").input(HOSTILE)
    at.file_uploader(key="mon_upload_files").set_value(_event_files(tmp_path, Scenario(rollouts=12)))
    at.run()
    assert not at.exception
    texts = _shown_text(at)
    assert not any("![x](http" in t or "<b>" in t for t in texts)  # no image fetch, no tag
    assert any(label.startswith("\\!\\[x\\]\\(http") for label in (e.label for e in at.expander))
    names = _plot_names(at)
    assert names and not any("<b>" in n for n in names)
    assert any("![x](http://attacker.example/p.png) \u2039b\u203abold" in n for n in names)


def test_hostile_zip_name_is_escaped(app_env, make_app, roots, private_tmp, tmp_path):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, _ in _event_files(tmp_path, Scenario(rollouts=12)):
            zf.writestr(f"run/{name}", data)
    at = _open(make_app, app_env)
    # a file name has no '/', so the hostile part is a relative image address
    at.file_uploader(key="mon_upload_zip").set_value(("![z](q.png).zip", buf.getvalue(), "application/zip"))
    at.run()
    assert not at.exception
    texts = _shown_text(at)
    assert not any("![z](" in t for t in texts)
    assert any(label.startswith("\\!\\[z\\]\\(q\\.png\\): 0 fail") for label in (e.label for e in at.expander))


def test_random_bytes_upload_is_not_recorded_as_done(app_env, make_app, roots, private_tmp):
    import os

    at = _open(make_app, app_env)
    at.file_uploader(key="mon_upload_files").set_value(("events.out.tfevents.1", os.urandom(3000),
                                                        "application/octet-stream"))
    at.run()
    assert not at.exception
    assert any("no scalar value could be read" in w.value for w in at.warning)
    mon011 = [m.value for m in at.markdown if "MON011" in m.value]
    assert mon011 and "help" in mon011[0] and "has any point" in mon011[0]  # unknown, not "finite"
    record = Store(app_env).get_record("default", "monitor")
    assert record.status == "started" and Store(app_env).accepted("default", "monitor") == []
    assert record.done_items == []
    assert any("no scalar value could be read" in item for item in record.todo_items)


def test_non_slime_scalars_are_started_with_what_is_missing(app_env, make_app, roots, private_tmp):
    from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event

    data = b"".join(frame_record(x) for x in [file_version_event()] + [scalar_event("my/metric", 1.0, s)
                                                                        for s in range(20)])
    at = _open(make_app, app_env)
    at.file_uploader(key="mon_upload_files").set_value(("events.out.tfevents.9", data, "application/octet-stream"))
    at.run()
    assert not at.exception
    record = Store(app_env).get_record("default", "monitor")
    assert record.status == "started" and Store(app_env).accepted("default", "monitor") == []
    assert any("no check had enough data" in item for item in record.todo_items)


def _reward_file(values) -> bytes:
    from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event

    return b"".join(frame_record(x) for x in [file_version_event()] + [scalar_event("rollout/raw_reward", v, s)
                                                                        for s, v in enumerate(values)])


def test_replaced_upload_deletes_its_directory_and_same_name_size_is_reread(app_env, make_app, roots, private_tmp):
    rising = _reward_file([0.1 + 0.02 * i for i in range(20)])
    falling = _reward_file([0.9 - 0.02 * i for i in range(20)])
    assert len(rising) == len(falling) and rising != falling
    at = _open(make_app, app_env)
    at.file_uploader(key="mon_upload_files").set_value(("events.out.tfevents.1", rising, "application/octet-stream"))
    at.run()
    first = sorted(private_tmp.glob("slime-monitor-*"))
    assert len(first) == 1
    assert any(e.label.startswith("uploaded\\-run: 0 fail") for e in at.expander)
    at.file_uploader(key="mon_upload_files").set_value(("events.out.tfevents.1", falling, "application/octet-stream"))
    at.run()
    assert not at.exception
    now = sorted(private_tmp.glob("slime-monitor-*"))
    assert len(now) == 1 and now != first  # the old upload's directory is gone
    assert any(e.label.startswith("uploaded\\-run: 1 fail") for e in at.expander)  # the new bytes were read
    at.run()
    assert sorted(private_tmp.glob("slime-monitor-*")) == now  # a rerun does not unpack again
    at.file_uploader(key="mon_upload_files").set_value(None)
    at.run()
    assert not at.exception
    assert list(private_tmp.glob("slime-monitor-*")) == []
    assert any("Upload event files" in i.value for i in at.info)


def test_zip_with_clashing_dot_and_overlong_members(app_env, make_app, roots, private_tmp, tmp_path):
    """Issue 15 item 9 on the page: each bad member is skipped with a warning; the good run still loads."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, _ in _event_files(tmp_path, Scenario(rollouts=12)):
            zf.writestr(f"good/{name}", data)
        zf.writestr("run", b"x")
        zf.writestr("run/events.out.tfevents.1", b"y")
        zf.writestr(".", b"x")
        zf.writestr("a/" * 3000 + "events.out.tfevents.2", b"x")
        zf.writestr("b" * 300, b"x")
    at = _open(make_app, app_env)
    at.file_uploader(key="mon_upload_zip").set_value(("runs.zip", buf.getvalue(), "application/zip"))
    at.run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    for reason in ("needs a folder", "names no file", "folders deep", "characters long"):
        assert reason in warnings
    labels = [e.label for e in at.expander]
    assert any(label.startswith("runs: 0 fail") for label in labels), labels


def test_deep_folder_says_what_the_walk_left_out(app_env, make_app, roots):
    deep = roots / "deep"
    for _ in range(40):
        deep = deep / "d"
    write_slime_like_run(deep, Scenario(rollouts=3))
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(roots / "deep"))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    assert any("more than 32 levels down" in w.value for w in at.warning)
    assert any("No event files" in e.value for e in at.error)


def test_the_profiles_gpu_and_the_number_of_rollouts_add_mfu_and_time_to_finish(app_env, make_app, tmp_path,
                                                                                 monkeypatch):
    from tests.monitor.test_monitor_efficiency import write_perf_run

    root = tmp_path / "perf"
    write_perf_run(root / "run", tflops=50.0)
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(root))
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8,
                                        gpu_model="H100-80GB"))
    at = make_app("pages/monitor.py").run()
    at.text_input(key="mon_dir").input(str(root / "run"))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "MON013" in warnings and "5% MFU" in warnings and "H100-80GB" in warnings
    asked = " ".join(m.value for m in at.markdown if "MON014" in m.value).replace("\\", "")
    assert "Give the run's --num-rollout" in asked  # not said yet: the time to finish asks for it
    at.number_input(key="mon_num_rollout").set_value(100).run()
    assert not at.exception
    eta = " ".join(m.value for m in at.markdown if "MON014" in m.value).replace("\\", "")
    assert "12 of 100 rollouts are logged" in eta and "2 h 12 min" in eta


def test_a_second_visit_reads_nothing_again(app_env, make_app, roots, monkeypatch):
    """The runs are opened once per session (core.monitor.MonitorProvider in the session state): going to
    another page and back, or a rerun, neither opens a run again nor reads any of its files."""
    import core.monitor.follow as follow

    reads: list[str] = []
    for name in ("open_run", "read_file_scan", "scan_stream"):
        real = getattr(follow, name)
        monkeypatch.setattr(follow, name, lambda *a, _real=real, _name=name, **k: (reads.append(_name), _real(*a, **k))[1])
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(roots / "proj" / "good"))
    at.button(key="mon_dir_add").click().run()
    assert not at.exception and reads.count("open_run") == 1
    assert any(e.label.startswith("good: 0 fail") for e in at.expander)
    first = list(reads)
    at.switch_page("pages/progress.py").run()
    at.switch_page("pages/monitor.py").run()
    assert not at.exception
    assert any(e.label.startswith("good: 0 fail") for e in at.expander)  # shown again, from what was read
    at.run()
    assert reads == first


def test_a_rerun_for_a_widget_elsewhere_builds_no_chart_again(app_env, make_app, roots):
    at = _open(make_app, app_env)
    at.text_input(key="mon_dir").input(str(roots / "proj" / "good"))
    at.button(key="mon_dir_add").click().run()
    provider = at.session_state["mon_provider"]
    built, charts = provider.figures_built, len(at.get("plotly_chart"))
    assert built == charts >= 10
    at.number_input(key="mon_num_rollout").set_value(500).run()  # a checklist input: the curves stay as they are
    assert not at.exception and provider.figures_built == built and len(at.get("plotly_chart")) == charts
    at.slider(key="mon_smoothing").set_value(0.9).run()  # the smoothing: every chart is built again
    assert provider.figures_built == 2 * built
