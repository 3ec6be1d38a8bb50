"""Issue 26, part 4: a question that names a flag gets the flag's entry plus the card section that answers,
and the sentence shown is the one that answers."""

from __future__ import annotations

from core.knowledge.search import get_index


def test_a_question_naming_a_flag_gets_its_entry_and_the_answering_section():
    results = get_index().ask("how is --n-samples-per-prompt related to the global batch size").results
    assert (results[0].kind, results[0].id) == ("flag", "--n-samples-per-prompt")
    assert results[1].kind == "section" and "--n-samples-per-prompt" in results[1].snippet


def test_the_card_for_saving_hf_checkpoints_shows_the_sentence_that_answers():
    results = get_index().ask("save HF checkpoints during training").results[:3]
    hit = next(r for r in results if r.id == "checkpoints#the-four-flags")
    assert "--save-hf" in hit.snippet and "during training" in hit.snippet


def test_the_flag_alone_stays_the_flag_alone():
    results = get_index().ask("what does --rollout-batch-size mean").results
    assert (results[0].kind, results[0].id) == ("flag", "--rollout-batch-size")
