"""Issue 26, part 2: SGLang's and Megatron-LM's log lines indexed at their pins the way slime's are (saying
which a healthy run prints), curated meanings for the lines users paste, and torch_memory_saver's and the
router's messages in the runtime table."""

from __future__ import annotations

import pytest

from core.knowledge.errors import index_to_json, load_error_index
from core.knowledge.layers import (
    MEGATRON,
    MEGATRON_LOG_LINES_PATH,
    SGLANG,
    SGLANG_LOG_LINES_PATH,
    build_layer_log_index,
    layer_of,
    log_lines_in_source,
    log_meanings,
    log_verdict,
)
from core.knowledge.search import get_index
from core.pins import pinned_source_dir


def test_both_layers_log_lines_are_indexed_at_their_pins():
    megatron, sglang = load_error_index(MEGATRON_LOG_LINES_PATH), load_error_index(SGLANG_LOG_LINES_PATH)
    assert megatron.commit == "1dcf0daf" and len(megatron.entries) > 400
    assert sglang.commit == "v0.5.15.post1" and len(sglang.entries) > 500
    assert {e.kind for e in megatron.entries + sglang.entries} == {"log"}
    assert all(e.path.startswith("python/sglang/srt/") for e in sglang.entries)
    assert {layer_of(e) for e in megatron.entries} == {"megatron"} and {layer_of(e) for e in sglang.entries} == {"sglang"}
    assert any(e.exception == "print" for e in megatron.entries)  # print_rank_0


@pytest.mark.parametrize("name,spec,path", [("megatron", MEGATRON, MEGATRON_LOG_LINES_PATH),
                                             ("sglang", SGLANG, SGLANG_LOG_LINES_PATH)])
def test_committed_log_lines_are_what_the_tool_writes_at_the_pin(name, spec, path):
    root = pinned_source_dir(name)
    if not (root / spec.marker).is_dir():
        pytest.skip(f"the pinned {name} source is not on this machine")
    assert index_to_json(build_layer_log_index(root, spec)) == path.read_bytes()


def test_megatron_printing_helpers_are_log_lines():
    source = ("import logging\nlogger = logging.getLogger(__name__)\n"
              "def build(args):\n"
              "    print_rank_0(f'building model with {args.num_layers} layers')\n"
              "    log_single_rank(logger, logging.WARNING, f'overriding {args.seq_length} from the checkpoint')\n")
    entries = log_lines_in_source(source, "megatron/training/x.py", "1dcf0daf")
    assert [(e.exception, e.normal) for e in entries] == [("print", True), ("warning", False)]
    assert entries[1].template == "overriding {args.seq_length} from the checkpoint"


def test_curated_meanings_name_lines_of_their_layer_index_and_show_in_the_verdict():
    index = get_index()
    meanings = log_meanings()
    assert len(meanings) >= 4
    logs = [e for e in index.errors.entries if e.kind == "log"]
    for meaning in meanings:
        entry = next((e for e in logs if layer_of(e) == meaning.layer and meaning.contains in e.template), None)
        assert entry is not None, meaning.id
        assert log_verdict(entry).startswith(meaning.meaning[:40])


def test_the_lines_users_paste_are_found_and_said_normal():
    index = get_index()
    answer = index.ask("(SGLangEngine pid=2) [2026-01-01 00:00:00] Dummy health check server started in background "
                       "thread at 10.0.0.2:30000")
    first = answer.results[0]
    assert (first.kind, first.id, first.match) == ("log", "python/sglang/srt/utils/common.py:3064", "exact")
    assert "node rank 1" in log_verdict(index.error(first.id))


@pytest.mark.parametrize("paste,entry", [
    ("(MegatronTrainRayActor pid=1) [torch_memory_saver.cpp] cuMemCreate CUDA_ERROR_OUT_OF_MEMORY (may not be an "
     "issue e.g. torch allocator will free cache and retry)", "torch-memory-saver-cumemcreate-oom"),
    ("[torch_memory_saver.cpp] TorchMemorySaver::malloc return OOM since memory_margin_bytes=1073741824 "
     "(alloc)size=65867350016 free_bytes=28822863872", "torch-memory-saver-cumemcreate-oom"),
    ("AssertionError: TorchMemorySaver observes invalid LD_PRELOAD. You can use configure_subprocess() utility",
     "torch-memory-saver-preload"),
    ("Version: 0.0.0.dev1+gdce8b0606", "sglang-dev-version-string"),
    ("retrying... (attempt 60/60, url=http://10.0.0.1:4674/generate, response=No available workers (all circuits "
     "open or unhealthy))", "router-no-available-workers"),
])
def test_torch_memory_saver_router_and_version_messages_are_in_the_runtime_table(paste, entry):
    ids = [f"{r.kind}:{r.id}" for r in get_index().ask(paste).results[:3]]
    assert f"runtime:{entry}" in ids, ids
