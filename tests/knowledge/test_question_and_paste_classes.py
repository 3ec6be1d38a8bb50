"""Classes of misses of the drawn and held-out sets, each closed by a general rule of `ask`'s ranking or by a
table entry (branch realprobs2): these tests pin the rules with inputs of their own, not the sets' cases."""

from __future__ import annotations

from core.knowledge.query_words import CONTEXT_WORD_RE, camel_parts
from core.knowledge.search import get_index
from core.knowledge.tables import match_tables


def _top(query: str, n: int = 3) -> list[str]:
    return [f"{r.kind}:{r.id}" for r in get_index().search(query, limit=10)[:n]]


def test_issue_template_tags_are_not_search_words():
    question = "how do I add my own metrics to the wandb dashboard"
    assert _top(f"[Question] {question}") == _top(question)
    assert _top(f"[Bug] {question}") == _top(question)


def test_a_question_in_words_never_starts_with_a_code_template_matched_by_words():
    index = get_index()
    for question in ("is there a plan for torch_npu devices and torchair",
                     "does the router support jwt roles for tenants",
                     "will MindSpore models be supported"):
        results = index.search(question, limit=10)
        if results:
            first = results[0]
            assert not (first.kind in {"error", "log"} and first.match == "related"), (question, first)


def test_ray_wrapper_alone_is_not_claimed_as_the_answer():
    """Ray's wrapper says nothing about the cause (its record is marked normal): a paste that is only the wrapper
    line is an honest not-found, the wrapper's record a candidate, never "your message"."""
    alone = ("  File \"/root/slime/train.py\", line 79, in train\n"
             "    ray.get(actor_model.async_train(rollout_id, rollout_data_ref))\n"
             "ray.exceptions.RayTaskError(RuntimeError): ray::MegatronTrainRayActor.train() (pid=1, ip=10.0.0.1)\n")
    assert ("runtime", "ray-task-error-wrapper") not in match_tables(alone, pasted=True)
    answer = get_index().ask(alone)
    assert answer.pasted_error and not answer.found
    assert "ray-task-error-wrapper" in [r.id for r in answer.results]
    assert answer.results[0].kind not in {"error", "log", "runtime", "bug"}


def test_cuda_wordings_of_a_kernel_missing_for_the_gpu_find_the_no_kernel_image_record():
    for line in ("host:1:2 [0] enqueue.cc:42 NCCL WARN Cuda failure 'named symbol not found'",
                 "RuntimeError: CUDA error: invalid device function"):
        assert ("runtime", "cuda-no-kernel-image") in match_tables(line, pasted=True), line


def test_camel_cased_error_names_add_their_words():
    assert camel_parts("cudaError while offloading") == ["cuda", "error"]
    assert camel_parts("ncclUnhandledCudaError") == ["nccl", "unhandled", "cuda", "error"]
    assert camel_parts("plain words only, snake_case too") == []


def test_a_paste_without_a_known_message_leads_with_the_flag_its_words_name():
    paste = ("After turning on --use-dynamic-batch-size the actor dies at the first step:\n"
             "(MegatronTrainRayActor pid=42) [2026-01-02 03:04:05] something went wrong in the packing loop\n")
    answer = get_index().ask(paste)
    assert answer.pasted_error and not answer.found
    assert f"{answer.results[0].kind}:{answer.results[0].id}" == "flag:--use-dynamic-batch-size"


def test_model_and_gpu_names_do_not_choose_the_section_a_flag_question_gets():
    assert all(CONTEXT_WORD_RE.fullmatch(w) for w in ("qwen3", "glm5", "235b", "a22b", "h20", "h800", "16x8", "141g"))
    assert not any(CONTEXT_WORD_RE.fullmatch(w) for w in ("offload", "memory", "cuda", "error", "step"))

    def sections(query: str) -> list[str]:
        return [r.id for r in get_index().search(query, limit=3) if r.kind == "section"]

    plain = "why does --use-dynamic-batch-size run out of memory after the first step"
    assert sections(plain + " with Qwen3-235B-A22B on 32x8 H800") == sections(plain)


def test_httpx_wording_of_nothing_listening_finds_the_connection_record():
    assert ("runtime", "http-max-retries") in match_tables("httpx.ConnectError: All connection attempts failed",
                                                           pasted=True)


def test_a_cut_traceback_inside_a_tool_leads_with_the_card_citing_that_file():
    paste = ("converting my checkpoint stops here\n"
             '[rank0]:   File "/data/me/slime/tools/convert_torch_dist_to_hf.py", line 120, in main\n'
             "[rank0]:     state = load(args)\n")
    answer = get_index().ask(paste)
    assert answer.pasted_error and not answer.found
    assert answer.results[0].kind == "card" and answer.results[0].id == "checkpoints"
    index = get_index()
    from core.knowledge.traceback import read_paste
    entry = read_paste('  File "/root/slime/train.py", line 79, in train\n    ray.get(x)\n').frames
    assert index.cards_citing(entry) == []  # an entry point many cards cite locates nothing


def test_a_ray_wrapper_is_searched_by_its_inner_type_and_the_words_around_it_not_by_pid_and_ip():
    paste = ("my custom reward function crashes on the label of each sample\n"
             '  File "/root/slime/train.py", line 70, in train\n'
             "    rollout_data_ref = ray.get(rollout_manager.generate.remote(rollout_id))\n"
             "ray.exceptions.RayTaskError(KeyError): ray::RolloutManager.generate() (pid=1234, ip=10.1.2.3)\n")
    top = [r.id.split("#", 1)[0] for r in get_index().search(paste, limit=3)]
    assert "multi-node" not in top and {"sample-object", "reward-functions", "customization", "data-formats"} & set(top)
