"""Traceback reading that cannot be confidently wrong (issue 26, part 3): a template from one file is exact or
likely only when the paste's frames reach that file or the template is specific; otherwise the frames locate
the problem, and the names the final exception quotes join the query."""

from __future__ import annotations

from core.knowledge.errors import match_error
from core.knowledge.search import get_index

GLM_SPEC = (
    'Traceback (most recent call last):\n'
    '  File "/root/slime/slime/backends/megatron_utils/model_provider.py", line 88, in model_provider\n'
    '    transformer_layer_spec = get_spec(args, config)\n'
    '  File "/root/slime/slime_plugins/models/glm4.py", line 11, in get_glm_spec\n'
    '    post_self_attn_layernorm=args.post_self_attn_layernorm,\n'
    "AttributeError: 'Namespace' object has no attribute 'post_self_attn_layernorm'\n")


def test_a_generic_template_of_another_file_is_not_the_answer_to_a_slime_traceback():
    index = get_index()
    matches = match_error(GLM_SPEC, index.errors)
    assert not any(m.entry.path.startswith("python/sglang") for m in matches), matches
    answer = index.ask(GLM_SPEC)
    first = answer.results[0]
    assert not (first.kind in ("error", "log") and first.match in ("exact", "likely")), first
    assert "flag:--post-self-attn-layernorm" in [f"{r.kind}:{r.id}" for r in answer.results[:3]]
    assert "slime_plugins/models/glm4.py:11, in get_glm_spec" in (answer.notice or "")


def test_the_same_generic_message_without_frames_is_at_most_likely():
    matches = match_error("AttributeError: 'Namespace' object has no attribute 'post_self_attn_layernorm'",
                          get_index().errors)
    assert all(m.confidence != "exact" for m in matches)


def test_frames_that_reach_the_file_and_function_make_a_built_message_exact():
    paste = ('  File "/root/slime/slime/backends/megatron_utils/arguments.py", line 118, in megatron_parse_args\n'
             '    _hf_validate_args(args, hf_config)\n'
             '  File "/root/slime/slime/backends/megatron_utils/arguments.py", line 76, in _hf_validate_args\n'
             '    raise AssertionError("hf_validate_args failed: " + "; ".join(errors))\n'
             "AssertionError: hf_validate_args failed: tie_word_embeddings in hf config True is not equal to "
             "untie_embeddings_and_output_weights True, please check the config.\n")
    answer = get_index().ask(paste)
    assert answer.found
    assert (answer.results[0].id, answer.results[0].match) == ("slime/backends/megatron_utils/arguments.py:148",
                                                               "exact")


def test_a_specific_megatron_assert_is_found_behind_slime_frames():
    paste = ('  File "/root/slime/slime/backends/megatron_utils/checkpoint.py", line 40, in load_checkpoint\n'
             '    optimizer.load_state_dict(state_dict)\n'
             "AssertionError: Number of unpadded elements in each bucket need to be the same in current run "
             "([1024, 2048]) and checkpoint ([1024, 4096])\n")
    answer = get_index().ask(paste)
    assert answer.found
    assert answer.results[0].id == "megatron/core/optimizer/distrib_optimizer.py:1780"


def test_a_traceback_no_message_matches_is_located_by_its_innermost_own_frame():
    paste = ('Traceback (most recent call last):\n'
             '  File "/root/slime/slime/rollout/filter_hub/dynamic_sampling_filters.py", line 21, in '
             'check_reward_nonzero_std\n'
             '    rewards = torch.tensor([s.reward for s in samples])\n'
             '  File "/usr/lib/python3/dist-packages/torch/_tensor.py", line 5, in __new__\n'
             "TypeError: must be real number, not dict\n")
    answer = get_index().ask(paste)
    assert not answer.found
    assert "slime/rollout/filter_hub/dynamic_sampling_filters.py:21, in check_reward_nonzero_std" in answer.notice
    assert answer.results == [] or answer.results[0].match not in ("exact", "likely")
