"""Issue 18, the engine half: every layer's messages (Megatron-LM, SGLang, slime's log lines) read with the
same `ast` tool as slime's, kept fresh; pasted tracebacks read as an engineer reads them (noise stripped,
final exception first, frames locating the layer); and a confidence on every result, with an honest
"not found" when no indexed message matches."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.knowledge.errors import index_to_json, load_error_index
from core.knowledge.layers import (
    LOG_LINES_PATH,
    MEGATRON,
    MEGATRON_ERRORS_PATH,
    SGLANG,
    SGLANG_ERRORS_PATH,
    build_layer_index,
    build_log_index,
    layer_of,
    load_all_messages,
    log_lines_in_source,
)
from core.knowledge.search import explain, get_index
from core.knowledge.traceback import read_paste, strip_noise
from core.pins import pinned_source_dir

ROOT = Path(__file__).resolve().parents[2]
SLIME, MEGATRON_SRC, SGLANG_SRC = (pinned_source_dir(n) for n in ("slime", "megatron", "sglang"))


@pytest.fixture(scope="module")
def index():
    return get_index()


# -- the indexes ------------------------------------------------------------------------------------
def test_each_layer_is_indexed_and_cited_at_its_pin():
    megatron, sglang, logs = (load_error_index(p) for p in (MEGATRON_ERRORS_PATH, SGLANG_ERRORS_PATH, LOG_LINES_PATH))
    assert megatron.commit == "1dcf0daf" and len(megatron.entries) > 1500
    assert {e.path.split("/")[1] for e in megatron.entries} == {"core", "training"}
    assert sglang.commit == "v0.5.15.post1" and len(sglang.entries) > 500
    assert all(e.path.startswith("python/sglang/srt/") for e in sglang.entries)
    assert any(e.path == "python/sglang/srt/server_args.py" for e in sglang.entries)
    assert len(logs.entries) > 300 and {e.kind for e in logs.entries} == {"log"}
    everything = load_all_messages()
    assert {layer_of(e) for e in everything.entries} == {"slime", "megatron", "sglang"}
    ps = next(e for e in megatron.entries if e.template.startswith("world_size ({world_size}) is not divisible by"))
    assert ps.source == "megatron/core/parallel_state.py:743@1dcf0daf"


@pytest.mark.skipif(not (MEGATRON_SRC / "megatron" / "core").is_dir(), reason="needs the pinned Megatron-LM (SLIME_ASSISTANT_SOURCES)")
def test_committed_megatron_index_is_what_the_tool_writes_at_the_pin():
    assert index_to_json(build_layer_index(MEGATRON_SRC, MEGATRON)) == MEGATRON_ERRORS_PATH.read_bytes()


@pytest.mark.skipif(not (SGLANG_SRC / "sglang" / "srt").is_dir(), reason="needs the pinned SGLang wheel (SLIME_ASSISTANT_SOURCES)")
def test_committed_sglang_index_is_what_the_tool_writes_at_the_pin():
    assert index_to_json(build_layer_index(SGLANG_SRC, SGLANG)) == SGLANG_ERRORS_PATH.read_bytes()


@pytest.mark.skipif(not (SLIME / "slime").is_dir(), reason="needs the pinned slime (SLIME_ASSISTANT_SOURCES)")
def test_committed_log_lines_are_what_the_tool_writes_at_the_pin():
    assert index_to_json(build_log_index(SLIME)) == LOG_LINES_PATH.read_bytes()


def test_log_lines_of_a_checkout_reached_through_a_link_are_cited_as_under_the_checkout(tmp_path):
    # CI's sources sit behind a link (/work/src -> /work/sources): the files are read where they are, the
    # citations stay relative to the checkout the user named.
    real = tmp_path / "real"
    (real / "slime" / "utils").mkdir(parents=True)
    (real / "train.py").write_text('print(f"Starting training {x}")\n')
    (real / "slime" / "utils" / "log.py").write_text(
        'import logging\nlogger = logging.getLogger(__name__)\nlogger.warning("Reward is empty for this group")\n')
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    through_link, direct = build_log_index(tmp_path / "link"), build_log_index(real)
    assert [(e.path, e.line, e.template) for e in through_link.entries] == [
        ("train.py", 1, "Starting training {x}"), ("slime/utils/log.py", 3, "Reward is empty for this group")]
    assert index_to_json(through_link) == index_to_json(direct)


def test_log_lines_say_whether_a_healthy_run_prints_them():
    source = ('import logging\nlogger = logging.getLogger(__name__)\n'
              'def run(args):\n'
              '    logger.info(f"Starting rollout {args.rollout_id} of the run")\n'
              '    if args.n > 3:\n        logger.warning("Falling back to the slow path: %s", args.n)\n'
              '    try:\n        go()\n    except OSError:\n        print(f"Failed to reach the router {args.url}")\n'
              '    print(args)\n')
    got = [(e.line, e.exception, e.template, e.condition, e.normal) for e in log_lines_in_source(source, "slime/r.py")]
    assert got == [(4, "info", "Starting rollout {args.rollout_id} of the run", None, True),
                   (6, "warning", "Falling back to the slow path: {…}", "args.n > 3", False),
                   (10, "print", "Failed to reach the router {args.url}", "while handling OSError", False)]


def test_the_tool_writes_each_layer_given_and_refuses_what_is_not_a_checkout(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("build_layer_index", ROOT / "tools" / "build_layer_index.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    (tmp_path / "m" / "megatron" / "core").mkdir(parents=True)
    (tmp_path / "m" / "megatron" / "core" / "p.py").write_text("assert 1 == 2, 'grid does not fit'\n")
    (tmp_path / "m" / "megatron" / "core" / "tests").mkdir()
    (tmp_path / "m" / "megatron" / "core" / "tests" / "t.py").write_text("assert 0, 'a test, not indexed'\n")
    assert tool.main(["--megatron", str(tmp_path / "m"), "--out-dir", str(tmp_path)]) == 0
    written = load_error_index(tmp_path / "errors_megatron.json")
    assert [e.source for e in written.entries] == ["megatron/core/p.py:1@1dcf0daf"]
    assert "Megatron-LM: 1 messages from 1 files" in capsys.readouterr().out
    assert tool.main(["--sglang", str(tmp_path / "nothing"), "--out-dir", str(tmp_path)]) == 2
    assert tool.main(["--out-dir", str(tmp_path)]) == 2


# -- reading a paste ----------------------------------------------------------------------------------
RAY_TRACE = (
    "\x1b[36m(MegatronTrainRayActor pid=2107, ip=10.0.0.3)\x1b[0m Traceback (most recent call last):\n"
    '(MegatronTrainRayActor pid=2107, ip=10.0.0.3)   File "/root/slime/slime/backends/megatron_utils/actor.py", '
    "line 80, in init\n"
    '(MegatronTrainRayActor pid=2107, ip=10.0.0.3)   File "/root/Megatron-LM/megatron/core/parallel_state.py", '
    "line 743, in initialize_model_parallel\n"
    "(MegatronTrainRayActor pid=2107, ip=10.0.0.3) RuntimeError: world_size (6) is not divisible by 4\n"
    "\n(MegatronTrainRayActor pid=2108, ip=10.0.0.3) RuntimeError: world_size (6) is not divisible by 4 "
    "[repeated 7x across cluster]\n")


def test_noise_that_differs_per_run_is_stripped():
    text = strip_noise("\x1b[31m[2025-03-01 12:00:01,123] (RolloutManager pid=77, ip=10.1.2.3) node_id=9f3a "
                       "object 0x7f3a2b1c9d00 task 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d [repeated 3x across cluster]")
    assert " ".join(text.split()) == "node_id=… object 0x… task …"
    assert "pid=77" not in text and "10.1.2.3" not in text and "\x1b" not in text and "2025" not in text
    assert "repeated" not in text and "9f3a" not in text
    assert strip_noise("[rank3]: ValueError: bad") == "ValueError: bad"


def test_the_final_exception_and_the_layer_of_the_frames():
    read = read_paste(RAY_TRACE)
    assert (read.final.type, read.final.message) == ("RuntimeError", "world_size (6) is not divisible by 4")
    assert read.earlier == []  # the repeated copy from another actor is one error
    assert [f.layer for f in read.frames] == ["megatron", "slime"] and read.layer == "megatron"
    chained = read_paste('Traceback (most recent call last):\n  File "/x/torch/a.py", line 1, in f\n'
                         "KeyError: 'model.layers.0'\n\nDuring handling of the above exception, another exception "
                         "occurred:\n\nTraceback (most recent call last):\n  File \"/x/slime/b.py\", line 2, in g\n"
                         "RuntimeError: could not load the weights\n  of layer 0\n")
    assert chained.final.message == "could not load the weights of layer 0"
    assert [(e.short_type, e.message) for e in chained.earlier] == [("KeyError", "'model.layers.0'")]
    ray = read_paste("ray.exceptions.RayTaskError(AssertionError): ray::MegatronTrainRayActor.train() (pid=1)\n"
                     "AssertionError: the grid is wrong\n")
    assert (ray.final.short_type, ray.final.message) == ("AssertionError", "the grid is wrong")


def test_hostile_pastes_are_bounded(index):
    import time

    for text in ("File \"" * 40_000, "Error: " * 30_000, "(a pid=1)" * 20_000, "\x1b[" * 50_000,
                 'File "/x/slime/a.py", line 1, in f\n' * 5000, "x" * 200_000 + "Error: y",
                 "\n".join(f"E{i}Error: again {i}" for i in range(20_000)), ("a." * 40 + "b") * 2000):
        start = time.perf_counter()
        index.ask(text, limit=5)
        read_paste(text)  # the whole paste (ask keeps the first MAX_QUERY_CHARS)
        assert time.perf_counter() - start < 2.0


# -- matching and confidence -----------------------------------------------------------------------
def test_a_megatron_error_from_a_ray_actor_matches_megatron_exactly(index):
    answer = index.ask(RAY_TRACE, limit=5)
    first = answer.results[0]
    assert (first.kind, first.id, first.match) == ("error", "megatron/core/parallel_state.py:743", "exact")
    assert answer.found and answer.notice is None and answer.layer == "Megatron-LM"
    why = explain(index, index.error(first.id))
    assert why.meaning.startswith("Megatron-LM raises RuntimeError in initialize_model_parallel")


def test_an_sglang_error_is_found_from_an_installed_package(index):
    pasted = ('  File "/usr/lib/python3.12/site-packages/sglang/srt/managers/tokenizer_manager.py", line 968, in v\n'
              "ValueError: The input (40000 tokens) is longer than the model's context length (32768 tokens).\n")
    first = index.ask(pasted, limit=3).results[0]
    assert (first.id, first.match) == ("python/sglang/srt/managers/tokenizer_manager.py:968", "exact")
    reworded = "ValueError: The input (40000 tokens) is longer than the model context length (32768 tokens)."
    first = index.ask(reworded, limit=3).results[0]
    assert (first.id, first.match) == ("python/sglang/srt/managers/tokenizer_manager.py:968", "likely")


def test_the_message_outranks_a_frame_that_points_elsewhere(index):
    pasted = ('Traceback (most recent call last):\n  File "/root/slime/slime/utils/arguments.py", line 1771, in v\n'
              "AssertionError: Only one of kl_coef and kl_loss_coef can be set\n")
    results = index.ask(pasted, limit=3).results
    assert [(r.id, r.match) for r in results[:2]] == [("slime/utils/arguments.py:1846", "exact"),
                                                       ("slime/utils/arguments.py:1771", "likely")]


def test_no_match_is_said_plainly_and_candidates_are_marked_closest(index):
    pasted = ('(RolloutManager pid=9) Traceback (most recent call last):\n'
              '(RolloutManager pid=9)   File "/usr/lib/python3/site-packages/torch/cuda/memory.py", line 3, in f\n'
              "(RolloutManager pid=9) torch.FrobnicatorError: frobnicator refused to spin the memory pool\n")
    answer = index.ask(pasted, limit=5)
    assert not answer.found and answer.layer == "PyTorch"
    assert answer.notice.startswith("No message of slime, Megatron-LM or SGLang at the pinned commits matches "
                                    '"torch.FrobnicatorError: frobnicator refused to spin the memory pool"')
    assert "raised there, not by slime" in answer.notice
    assert answer.results and {r.match for r in answer.results} == {"closest"}
    kinds = [r.kind for r in answer.results]
    assert kinds[0] not in ("error", "log") and kinds == sorted(kinds, key=lambda k: k in ("error", "log"))


def test_a_question_naming_a_flag_puts_the_flag_first(index):
    for question in ("what does --rollout-batch-size mean", "What is --rollout-batch-size for?",
                     "how should I set rollout_batch_size with n_samples_per_prompt"):
        first = index.ask(question, limit=5).results[0]
        assert (first.kind, first.id, first.match) == ("flag", "--rollout-batch-size", "exact"), question


def test_a_log_line_says_when_it_is_normal(index):
    log = next(e for e in load_error_index(LOG_LINES_PATH).entries
               if e.template.startswith("Ignoring --offload-train because --release-train"))
    results = index.ask(f"INFO 12:00:01 arguments.py:{log.line} {log.template}", limit=3).results
    assert (results[0].kind, results[0].id) == ("log", log.id)
    why = explain(index, log)
    assert why.meaning.startswith("Normal: slime prints this info line in slime_validate_args")
    assert "Nothing to fix" in why.fix


def test_the_cli_shows_what_it_read_and_how_sure_it_is():
    done = subprocess.run([sys.executable, "-m", "core", "ask", "-", "--format", "json", "--limit", "3"],
                          input=RAY_TRACE, capture_output=True, text=True, cwd=ROOT, timeout=120)
    out = json.loads(done.stdout)
    assert out["found"] is True and out["error"] == {"type": "RuntimeError", "layer": "Megatron-LM",
                                                     "message": "world_size (6) is not divisible by 4"}
    assert out["results"][0]["match"] == "exact"
    text = subprocess.run([sys.executable, "-m", "core", "ask", "-"], input="KeyError: 'qqzzxx_unknown_key'\n",
                          capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
    assert text.startswith("Read from your paste: KeyError: 'qqzzxx_unknown_key'")
    assert "No message of slime, Megatron-LM or SGLang at the pinned commits matches" in text


# -- the answer in the result ------------------------------------------------------------------------
def test_markdown_becomes_plain_sentences():
    from core.knowledge.snippets import answer_sentence, plain_units

    md = ("## Heading\n\nThe **rule** is `a x b`; see [the code](https://x.example).\n\n"
          "| flag | meaning |\n| --- | --- |\n| `--lr` | the *learning* rate |\n\n"
          "- first item\n- second item about __batches__\n\n```bash\n--lr 1e-6\n```\n")
    assert plain_units(md) == ["Heading", "The rule is a x b; see the code.", "flag; meaning", "--lr; the learning rate",
                               "first item", "second item about batches", "--lr 1e-6"]
    assert answer_sentence(md, ["batch"]) == "second item about batches"
    assert answer_sentence(md, ["zzz"]) == "Heading"
    assert answer_sentence("", ["x"]) == ""
    assert plain_units("keep snake_case and *a* b and 2*3*4") == ["keep snake_case and a b and 2*3*4"]


def test_card_results_show_the_answering_sentence_as_plain_text(index):
    results = [r for r in index.ask("how do I resume from a checkpoint", limit=10).results if r.kind == "section"]
    assert results, "a section answers"
    for r in results:
        assert not any(mark in r.snippet for mark in ("**", "`", "| ", "## ")), r.snippet
    first = results[0]
    assert "--load" in first.snippet and "resum" in first.snippet.lower()
    card = next(r for r in index.ask("batch size divisible", limit=20).results if r.id == "batch-size")
    assert "`" not in card.snippet and "**" not in card.snippet


def test_a_vaguer_template_that_also_fits_is_only_likely_and_the_rule_is_named(index):
    pasted = ("(MegatronTrainRayActor pid=1, ip=10.0.0.1) RuntimeError: world_size (12) is not divisible by "
              "expert_tensor_model_pipeline_parallel size (8)\n")
    results = index.ask(pasted, limit=3).results
    assert [(r.id, r.match) for r in results[:2]] == [("megatron/core/parallel_state.py:795", "exact"),
                                                       ("megatron/core/parallel_state.py:743", "likely")]
    why = explain(index, index.error(results[0].id))
    assert [code for code, _ in why.rules] == ["MEG013"] and "MEG013" in why.fix


def test_real_pastes_from_slime_issues(index):
    """Inputs as users posted them (THUDM/slime#1818 from another Megatron version, so its line differs;
    #1909 a slime raise; a part of a message typed as a question)."""
    megatron_1818 = ('  File "/data/slime/slime/backends/megatron_utils/actor.py", line 62, in init\n    init(args)\n'
                     '  File "/root/Megatron-LM/megatron/core/parallel_state.py", line 780, in initialize_model_parallel\n'
                     "    raise RuntimeError(\nRuntimeError: world_size (8) is not divisible by "
                     "expert_tensor_model_pipeline_parallel size (16)")
    first = index.ask(megatron_1818, limit=3).results[0]
    assert (first.id, first.match) == ("megatron/core/parallel_state.py:795", "exact")
    slime_1909 = ('  File "/root/work/slime/slime/backends/megatron_utils/actor.py", line 269, in fill_routing_replay\n'
                  "    raise ValueError(\nValueError: rollout_routed_experts is required in rollout_data when "
                  "use_rollout_routing_replay is set.")
    first = index.ask(slime_1909, limit=3).results[0]
    assert (first.id, first.match) == ("slime/backends/megatron_utils/actor.py:310", "exact")
    first = index.ask("rollout_routed_experts is required in rollout_data", limit=3).results[0]
    assert (first.id, first.match) == ("slime/backends/megatron_utils/actor.py:310", "likely")
    access_log = ('(SGLangEngine pid=720234, ip=11.251.213.106) [2026-01-29 06:53:43] INFO:     11.251.218.253:45400 - '
                  '"POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n')
    answer = index.ask(access_log * 2, limit=3)
    assert not answer.found and "11.251" not in answer.notice


def test_a_long_log_is_read_from_its_end_where_the_final_exception_is(index):
    log = "(RolloutManager pid=3) INFO step done\n" * 8000  # about 300,000 characters before the error
    pasted = log + "RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)\n"
    first = index.ask(pasted, limit=3).results[0]
    assert (first.id, first.match) == ("megatron/core/parallel_state.py:795", "exact")


def test_a_curated_table_hit_counts_as_found_and_outranks_a_likely_message(index, monkeypatch):
    """The seam the curated tables plug into: their exact hits go after exact messages, before likely ones,
    and a paste they answer is not reported as not found."""
    pasted = "torch.FrobnicatorError: frobnicator refused to spin the memory pool\n"
    assert not index.ask(pasted, limit=3).found
    monkeypatch.setattr(index, "table_hits", lambda text, pasted: [("rule", "MEG001")])
    answer = index.ask(pasted, limit=3)
    assert answer.found and answer.notice is None
    assert (answer.results[0].kind, answer.results[0].id, answer.results[0].match) == ("rule", "MEG001", "exact")
    assert all(r.match == "related" for r in answer.results[1:])


def test_a_bare_assertion_error_is_found_by_its_line_or_by_the_assert_the_traceback_shows(index):
    at_the_pin = ('(MegatronTrainRayActor pid=5) Traceback (most recent call last):\n'
                  '(MegatronTrainRayActor pid=5)   File "/root/slime/slime/backends/megatron_utils/actor.py", line 207, '
                  'in sleep\n(MegatronTrainRayActor pid=5)     assert self.args.offload_train\n'
                  "(MegatronTrainRayActor pid=5) AssertionError\n")
    answer = index.ask(at_the_pin, limit=3)
    first = answer.results[0]
    assert (first.id, first.match) == ("slime/backends/megatron_utils/actor.py:207", "exact") and answer.found
    assert first.title == "AssertionError (no message): assert self.args.offload_train"
    why = explain(index, index.error(first.id))
    assert why.meaning.startswith("slime checks that self.args.offload_train in MegatronTrainRayActor.sleep")
    moved = ('  File "/opt/Megatron-LM/megatron/core/num_microbatches_calculator.py", line 301, in __init__\n'
             "    assert global_batch_size % micro_batch_times_data_parallel_size == 0, (\n"
             "AssertionError: global batch size (12) is not divisible by micro batch size (1) times data "
             "parallel size (8)\n")
    first = index.ask(moved, limit=3).results[0]
    assert (first.id, first.match) == ("megatron/core/num_microbatches_calculator.py:340", "exact")
    from core.knowledge.errors import match_error

    how = match_error(moved, index.errors)[0]
    assert (how.how, how.frame) == ("message", "/opt/Megatron-LM/megatron/core/num_microbatches_calculator.py, line 301")
    bare_moved = ('  File "/opt/Megatron-LM/megatron/core/num_microbatches_calculator.py", line 290, in __init__\n'
                  "    assert running_global_batch_size % micro_batch_times_data_parallel_size == 0\n"
                  "AssertionError\n")
    found = match_error(bare_moved, index.errors)[0]
    assert (found.entry.id, found.how, found.confidence) == ("megatron/core/num_microbatches_calculator.py:329",
                                                             "traceback-code", "exact")
    # never found by words: a bare assert has none
    assert "megatron/core/num_microbatches_calculator.py:329" not in [r.id for r in index.ask(
        "running_global_batch_size micro_batch_times_data_parallel_size", limit=20).results]


def test_a_question_over_two_lines_is_a_question_not_a_paste(index):
    answer = index.ask("My reward stays at 0.\nWhat does --rollout-batch-size mean here?", limit=5)
    assert not answer.pasted_error and answer.notice is None
    assert (answer.results[0].id, answer.results[0].match) == ("--rollout-batch-size", "exact")
    log = index.ask("[2026-01-29 06:53:43] INFO something nobody logs qqzzxx", limit=3)
    assert log.pasted_error and not log.found


def test_a_generic_template_alone_is_not_an_answer(index):
    answer = index.ask("RuntimeError: hidden size 1000 is not divisible by 24 heads", limit=5)
    assert not answer.found and answer.notice.startswith("No message of slime, Megatron-LM or SGLang")
    errors = [r for r in answer.results if r.kind == "error"]
    assert errors and {r.match for r in errors} == {"closest"}
    cuda = index.ask("RuntimeError: CUDA error: an illegal memory access was encountered", limit=3)
    assert cuda.found and cuda.results[0].kind == "runtime"  # the runtime-message table answers it


def test_every_layer_is_found_first_through_ray_noise_and_moved_lines(index):
    """A sample of every layer's messages pasted as a Ray actor prints them (prefixes, timestamps, another
    version's line numbers): found first, and never an exact match of a different message."""
    import collections
    import re

    holes = re.compile(r"\{[^{}]*\}")
    entries = [e for e in load_all_messages().entries if e.template and len(e.fixed_words) >= 8]
    firsts, totals, wrong = collections.Counter(), collections.Counter(), []
    for e in entries[::15]:
        message = holes.sub("7", e.template)
        if e.kind == "log":
            level = "" if e.exception == "print" else e.exception.upper() + " "  # a print has no logger's prefix
            pasted = (f"(RolloutManager pid=123, ip=10.0.0.9) [2026-02-01 10:11:12] {level}"
                      f"{e.path.rsplit('/', 1)[-1]}:{e.line + 3} - {message}")
        else:
            prefix = "(MegatronTrainRayActor pid=99, ip=10.1.1.1)"
            pasted = (f"{prefix} Traceback (most recent call last):\n"
                      f'{prefix}   File "/usr/lib/python3/site-packages/{e.path.removeprefix("python/")}", line '
                      f"{e.line + 40}, in {e.function.rsplit('.', 1)[-1]}\n{prefix}     raise Something(\n"
                      f"{prefix} {e.exception.rsplit('.', 1)[-1]}: {message}\n")
        layer = "log" if e.kind == "log" else layer_of(e)
        totals[layer] += 1
        first = index.ask(pasted, limit=3).results[0]
        firsts[layer] += first.id == e.id
        other = index.error(first.id)
        if first.match == "exact" and first.id != e.id and (other is None or other.fixed_words != e.fixed_words):
            wrong.append((e.id, first.id))
    assert set(totals) == {"slime", "megatron", "sglang", "log"}
    assert all(firsts[k] >= 0.9 * totals[k] for k in totals), (firsts, totals)
    assert wrong == []


def test_megatron_checks_name_the_rule_that_catches_them_before_launch(index):
    pasted = ('  File "/opt/megatron/training/arguments.py", line 700, in validate_args\n'
              "    assert args.min_lr <= args.lr\nAssertionError\n")
    answer = index.ask(pasted, limit=2)
    assert answer.read_as == "AssertionError (no message)" and answer.layer == "Megatron-LM"
    first = answer.results[0]
    assert (first.id, first.match) == ("megatron/training/arguments.py:835", "exact")
    assert [code for code, _ in explain(index, index.error(first.id)).rules] == ["MEG004"]
    batch = index.ask("AssertionError: global batch size (12) is not divisible by micro batch size (1) times data "
                      "parallel size (8)", limit=1).results[0]
    assert [code for code, _ in explain(index, index.error(batch.id)).rules] == ["BATCH007", "BATCH008"]


def test_questions_as_users_write_them(index):
    """Issue titles start with `[Bug]`; a question names several flags; words are hyphenated or not."""
    titled = index.ask("[Bug] UpdateWeightFromDistributed fails for VLM models in non-colocate mode", limit=3)
    assert not titled.pasted_error and titled.notice is None and titled.results[0].match == "related"
    several = index.ask("Launching training with --num-rollout 2 --rollout-batch-size 8 --n-samples-per-prompt 8 "
                        "--global-batch-size 256 computes train_iters = 0", limit=3).results
    assert several[0].id == "--num-rollout" and [r.match for r in several[1:]] == ["related", "related"]
    assert "batch-size" in {r.id.split("#")[0] for r in several}
    vlm = index.ask("Do slime support the training of qwen2.5-vl? I have looked through the docs but did not find "
                    "multi-modal training examples", limit=3).results
    assert "vlm-multimodal" in {r.id.split("#")[0] for r in vlm}
    assert index.ask("INFO 12:00:01 arguments.py:1942 Ignoring --offload-train because x", limit=1).pasted_error
