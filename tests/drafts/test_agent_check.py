"""Static check of a custom generate function: contract, checklist, and the dotted flag values."""

import textwrap

import pytest

from core.drafts.agent_check import (
    AgentCheckError,
    check_function_path,
    check_generate_source,
    check_signature,
    check_upload_name,
    custom_args_words,
    decode_source,
    find_function,
    suggested_path,
)
from core.findings import Severity

# A small multi-turn function written for these tests: every checklist item is visible in it.
FULL_AGENT = textwrap.dedent('''
    import asyncio
    import re

    from slime.utils.http_utils import post
    from slime.utils.types import Sample

    TOOL_RE = re.compile(r"<tool>(.*?)</tool>", re.S)


    async def run_tool(query):
        return await asyncio.wait_for(lookup(query), timeout=10)


    async def generate(args, sample, sampling_params):
        url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
        prompt_ids = args.tokenizer(sample.prompt)["input_ids"]
        response_ids, mask = [], []
        for _ in range(args.max_turns):
            out = await post(url, {"input_ids": prompt_ids + response_ids, "return_logprob": True})
            new_ids = [t[1] for t in out["meta_info"]["output_token_logprobs"]]
            response_ids += new_ids
            mask += [1] * len(new_ids)
            call = re.search(TOOL_RE, out["text"])
            if call is None:
                break
            obs_ids = args.tokenizer(await run_tool(call.group(1)))["input_ids"]
            response_ids += obs_ids
            mask += [0] * len(obs_ids)
        sample.tokens = prompt_ids + response_ids
        sample.response_length = len(response_ids)
        sample.loss_mask = mask
        sample.status = Sample.Status.COMPLETED
        return sample
''')

APPEND_STYLE = textwrap.dedent('''
    async def generate(args, sample, sampling_params, evaluation=False):
        for turn in range(4):
            sample.append_response_tokens(args, tokens=[1, 2], log_probs=[0.0, 0.0])
            sample.append_response_tokens(args, tokens=[3], trainable=False)
        sample.status = "completed"
        sample.reward = 1.0
        return sample
''')


def results(report) -> dict[str, bool]:
    return {r.item.id: r.seen for r in report.checklist}


def test_full_agent_shows_every_item_except_reward():
    report = check_generate_source(FULL_AGENT)
    assert report.found and report.is_async and report.ok
    seen = results(report)
    assert all(v for k, v in seen.items() if k != "sets_reward"), seen
    assert seen["sets_reward"] is False and not report.sets_reward
    assert any(f.code == "AGT009" and f.flag == "--custom-rm-path" for f in report.findings)


def test_append_response_tokens_counts_for_masks_tokens_and_lengths():
    report = check_generate_source(APPEND_STYLE)
    seen = results(report)
    for item in ("tool_mask_zero", "model_mask_one", "token_concat", "sets_tokens", "sets_response_length",
                 "sets_loss_mask", "sets_status", "sets_reward", "turn_loop"):
        assert seen[item], item
    assert report.sets_reward
    assert any(f.code == "AGT006" for f in report.findings)  # evaluation= is passed by slime


def test_missing_items_are_reported_as_not_seen_with_reason():
    src = "async def generate(args, sample, sampling_params):\n    return sample\n"
    report = check_generate_source(src)
    assert report.ok and report.seen_count == 0
    evidence = {r.item.id: r.evidence for r in report.checklist}
    assert "no loop" in evidence["turn_loop"]


@pytest.mark.parametrize(("source", "code"), [
    ("def generate(args, sample, sampling_params):\n    return sample\n", "AGT003"),
    ("async def generate(args, sample):\n    return sample\n", "AGT004"),
    ("async def generate(args, sample, sampling_params, tools):\n    return sample\n", "AGT004"),
    ("async def generate(args, sample, sampling_params, *, env):\n    return sample\n", "AGT004"),
    ("async def generate(args, sample, sampling_params):\n    sample.x = 1\n", "AGT007"),
    ("async def generate(args, sample, sampling_params):\n    return\n", "AGT007"),
    ("async def other(a, b, c):\n    return a\n", "AGT002"),
    ("class Agent:\n    async def generate(self, args, sample, sampling_params):\n        return sample\n", "AGT002"),
    ("async def generate(args, sample, sampling_params)\n    return sample\n", "AGT001"),
], ids=str)
def test_contract_errors(source, code):
    report = check_generate_source(source)
    errors = [f for f in report.findings if f.severity == Severity.ERROR]
    assert code in [f.code for f in errors]
    assert not report.ok


def test_nested_return_does_not_count():
    src = ("async def generate(args, sample, sampling_params):\n"
           "    def helper():\n        return sample\n    helper()\n")
    assert "AGT007" in [f.code for f in check_generate_source(src).findings]


def test_optional_extras_and_varargs_are_accepted():
    import ast

    for src in ("async def generate(args, sample, sampling_params, retries=3, *, evaluation=False): pass",
                "async def generate(*a, **k): pass"):
        fn = find_function(ast.parse(src), "generate")
        assert not [f for f in check_signature(fn) if f.severity == Severity.ERROR], src


def test_other_parameter_names_are_only_a_note():
    report = check_generate_source("async def generate(a, s, p):\n    return s\n")
    assert report.ok and any(f.code == "AGT005" for f in report.findings)


def test_while_true_without_exit_warns():
    src = ("async def generate(args, sample, sampling_params):\n"
           "    while True:\n        await step()\n    return sample\n")
    report = check_generate_source(src)
    assert any(f.code == "AGT008" and f.line == 2 for f in report.findings)
    assert results(report)["turn_loop"] is False


def test_custom_function_name():
    src = "async def agent_loop(args, sample, sampling_params):\n    return sample\n"
    assert check_generate_source(src, "agent_loop").ok
    assert not check_generate_source(src).found


@pytest.mark.parametrize(("data", "words"), [
    (b"", "empty"),
    (b"\x00\x01binary\x00", "binary"),
    (b"\xff\xfe bad", "UTF-8"),
    (b"#" * 1_500_000, "bytes"),
], ids=["empty", "binary", "not-utf8", "huge"])
def test_unreadable_uploads(data, words):
    with pytest.raises(AgentCheckError, match=words):
        decode_source(data)


def test_file_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    src = f"open({str(marker)!r}, 'w').write('x')\nasync def generate(args, sample, sampling_params):\n    return sample\n"
    assert check_generate_source(src).ok
    assert not marker.exists()


@pytest.mark.parametrize(("value", "code"), [
    ("generate_with_search.generate", None),
    ("examples.multi_agent.rollout_with_multi_agents.generate_with_multi_agents", None),
    ("your_module.multiturn_logic:generate", "FP002"),
    ("examples/search-r1/generate_with_search.py", "FP003"),
    ("my_agent.py", "FP003"),
    ("generate", "FP004"),
    ("my-agent.generate", "FP005"),
    ("pkg.class.generate", "FP005"),
    ("", "FP001"),
], ids=str)
def test_function_path_rules(value, code):
    codes = [f.code for f in check_function_path(value)]
    assert codes == ([code] if code else [])


def test_colon_form_fix_suggests_dots():
    finding = check_function_path("your_module.multiturn_logic:generate")[0]
    assert finding.fix.endswith("your_module.multiturn_logic.generate")
    assert "quick_start.md:550" in finding.message


@pytest.mark.parametrize(("filename", "expected"), [
    ("my_agent.py", "my_agent.generate"), ("dir/agent2.py", "agent2.generate"), ("my-agent.py", None),
    ("class.py", None), ("agent.txt", None),
], ids=str)
def test_suggested_path_from_upload_name(filename, expected):
    assert suggested_path(filename) == expected
    assert (check_upload_name(filename) is None) is (expected is not None)


def test_custom_args_words():
    assert custom_args_words("m.generate", "m.reward", None) == [
        "--custom-generate-function-path", "m.generate", "--custom-rm-path", "m.reward"]
    assert custom_args_words("m.generate", None, "/cfg/agent.yaml")[-2:] == ["--custom-config-path",
                                                                            "/cfg/agent.yaml"]
