"""AppTest: "What's done" shows status from user actions only, and each workflow's accepted outputs, each one
re-openable, downloadable and deletable; raw check reports are downloads, never dumped inline."""

from __future__ import annotations

import json

from core.memory.profile import AcceptedOutput, Profile, WorkflowRecord
from core.memory.store import ACCEPTED_KEPT, Store
from core.memory.workflows import WORKFLOWS

PAGE = "pages/progress.py"


def saved(app_env) -> Store:
    store = Store(app_env)
    store.save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    return store


def accepted(workflow: str, n: int, **kw) -> AcceptedOutput:
    fields = {"id": f"{workflow}-{n:02d}", "workflow": workflow, "accepted_at": 1.7e9 + n, "how": "accepted the draft",
              "summary": f"draft {n}", "output": f"#!/bin/bash\necho draft {n}\n", "output_name": f"run-{n}.sh",
              "output_mime": "text/x-shellscript", **kw}
    return AcceptedOutput(**fields)


def test_a_profile_that_only_visits_every_page_has_nothing_done(app_env, make_app):
    store = saved(app_env)
    at = make_app().run()
    for wf in WORKFLOWS:
        at.switch_page(wf.page).run()
        assert not at.exception, wf.page
        assert any("counts as done in What's done when" in c.value for c in at.caption), wf.page
    at.switch_page(PAGE).run()
    assert any("0 of 8 workflows done" in m.value for m in at.markdown)
    assert {e.label for e in at.expander} == {f"{wf.title}: not started" for wf in WORKFLOWS}
    assert store.records("default") == {} and store.pages_with_inputs("default") == set()
    assert all(store.accepted("default", wf.id) == [] for wf in WORKFLOWS)
    assert store.launch_keys("default") is None


def test_accepted_outputs_are_a_history_newest_first_with_open_download_delete(app_env, make_app):
    store = saved(app_env)
    for n in range(ACCEPTED_KEPT + 2):
        store.accept("default", accepted("grpo", n))
    history = store.accepted("default", "grpo")
    assert len(history) == ACCEPTED_KEPT and history[0].summary == f"draft {ACCEPTED_KEPT + 1}"
    at = make_app(PAGE).run()
    assert not at.exception
    assert any("1 of 8 workflows done" in m.value for m in at.markdown)
    assert "GRPO setup: done" in [e.label for e in at.expander]
    rows = [m.value for m in at.markdown if "accepted the draft" in m.value]
    assert len(rows) == ACCEPTED_KEPT and "draft 11" in rows[0] and "draft 2" in rows[-1]
    assert not any("echo draft" in c.value for c in at.code)  # closed until opened
    downloads = [d for d in at.get("download_button")]
    assert len(downloads) == ACCEPTED_KEPT
    at.toggle(key="prog_open_grpo_grpo-05").set_value(True).run()
    assert [c.value.strip() for c in at.code] == ["#!/bin/bash\necho draft 5"]
    at.button(key="prog_del_grpo_grpo-05").click().run()
    assert not at.exception
    left = store.accepted("default", "grpo")
    assert len(left) == ACCEPTED_KEPT - 1 and "grpo-05" not in {a.id for a in left}


def test_a_check_report_is_a_download_not_dumped_inline(app_env, make_app):
    store = saved(app_env)
    report = json.dumps({"findings": [{"code": "ARG001", "message": "x" * 50}] * 500}, indent=2)
    store.accept("default", accepted("check_args", 1, how="ran the check", summary="1 error(s)", output=report,
                                     output_name="check-args.json", output_mime="application/json",
                                     todo_items=["ARG001: unknown flag"]))
    at = make_app(PAGE).run()
    at.toggle(key="prog_open_check_args_check_args-01").set_value(True).run()
    assert not at.exception
    assert not at.code and not at.get("json")
    assert any("full report is the download" in c.value for c in at.caption)
    assert any("ARG001: unknown flag" in t.value for t in at.text)


def test_started_shows_where_the_user_left_off(app_env, make_app):
    store = saved(app_env)
    store.update_inputs("default", "alternatives", {"need_none": True})
    store.record("default", WorkflowRecord(workflow="grpo", status="started", updated_at=1.7e9,
                                           todo_items=["prerequisite: the Hugging Face checkpoint"],
                                           summary="run-grpo-Qwen3-4B.sh: ready for review"))
    at = make_app(PAGE).run()
    labels = [e.label for e in at.expander]
    assert "GRPO setup: started" in labels and "Alternatives: started" in labels
    assert any("the Hugging Face checkpoint" in t.value for t in at.text)
    assert any("0 of 8 workflows done" in m.value for m in at.markdown)


def test_an_unreadable_accepted_output_is_reported_and_the_rest_shown(app_env, make_app):
    store = saved(app_env)
    store.accept("default", accepted("grpo", 1))
    store.accept("default", accepted("grpo", 2))
    key = "accepted:default:grpo:grpo-01"
    store.cache.set(key, store.cache.get(key)[:40])
    at = make_app(PAGE).run()
    assert not at.exception
    assert len([m for m in at.markdown if "accepted the draft" in m.value]) == 1
    assert any("an accepted output of GRPO setup" in w.value for w in at.warning)


def test_an_accepted_draft_reopens_on_its_page_with_its_answers(app_env, make_app):
    saved(app_env)
    at = make_app("pages/grpo.py").run()
    at.number_input(key="grpo_n").set_value(4).run()
    at.button(key="grpo_accept").click().run()
    at.number_input(key="grpo_n").set_value(16).run()
    at.button(key="grpo_accept").click().run()
    older, newer = reversed(Store(app_env).accepted("default", "grpo"))
    assert older.inputs == {"n": 4} and newer.inputs == {"n": 16}
    at.switch_page(PAGE).run()
    at.button(key=f"prog_reopen_grpo_{older.id}").click().run()
    assert not at.exception
    assert at.number_input(key="grpo_n").value == 4  # on the GRPO page, with the older answers
    script = next(c.value for c in at.code if c.value.startswith("#!/bin/bash"))
    assert script == older.output.rstrip("\n")
    assert Store(app_env).inputs("default", "grpo").values == {"n": 4}
