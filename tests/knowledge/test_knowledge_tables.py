"""The three curated tables (runtime messages, other frameworks' words, known bugs): every entry is well formed
and points at things that exist (rule codes, cards, flags, upstream lines); matching finds what a user pastes
or asks and nothing for unrelated or hostile text; the known-bug detector reads a checkout's code, inside its
roots only; `ask` and the Ask page show the entries."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from core.knowledge.bugs import KnownBug, checkout_has_fix, load_bugs, match_bugs, parse_bugs
from core.knowledge.cards import CARDS_DIR
from core.knowledge.runtime import (
    RuntimeTableError,
    load_runtime_messages,
    match_runtime,
    parse_runtime_messages,
)
from core.knowledge.search import get_index
from core.knowledge.terms import expand_terms, load_terms, match_terms, parse_terms
from core.pins import pinned_source_dir

ROOT = Path(__file__).resolve().parents[2]
SLIME = pinned_source_dir("slime")
CARD_IDS = {p.stem for p in CARDS_DIR.glob("*.md")}


def all_rule_codes() -> set[str]:
    from core.data import RULES as DATA_RULES
    from core.launch import list_rules

    return {r.code for r in list_rules()} | set(DATA_RULES)


# --------------------------------------------------------------------------------------------------
# Runtime messages
# --------------------------------------------------------------------------------------------------
def test_runtime_table_covers_every_layer_and_links_real_rules_cards_and_flags():
    from core.launch import load_catalog

    messages = load_runtime_messages()
    assert len(messages) >= 25
    assert {m.layer for m in messages} >= {"ray", "nccl", "cuda", "pytorch", "numpy", "huggingface", "http"}
    codes, catalog = all_rule_codes(), load_catalog()
    for m in messages:
        assert set(m.rules) <= codes, (m.id, set(m.rules) - codes)
        assert set(m.cards) <= CARD_IDS, (m.id, set(m.cards) - CARD_IDS)
        for flag in m.flags:
            assert catalog.lookup(flag) is not None, (m.id, flag)
        assert any("@" in s and not s.startswith("http") for s in m.sources), f"{m.id} cites no upstream line"
    assert sum(bool(m.rules) for m in messages) >= 6  # several causes are caught before launch


@pytest.mark.parametrize("paste, expected", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 58.15 GiB. GPU 0 has a total capacity of "
     "139.81 GiB of which 47.69 GiB is free.", "cuda-out-of-memory"),
    ("[rank3]:[E1016 03:31:38.919469923 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=4661, Timeout(ms)=600000) ran for 600060 "
     "milliseconds before timing out.", "nccl-watchdog-timeout"),
    ("\x1b[36m(SGLangEngine pid=22439)\x1b[0m INFO:     33.184.122.180:62932 - \"GET /health HTTP/1.1\" 200 OK",
     "sglang-get-health-lines"),
    ("ray.exceptions.ActorUnavailableError: The actor 8f1 is unavailable: The actor is temporarily unavailable",
     "ray-actor-unavailable"),
    ("ValueError: The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()",
     "numpy-array-ambiguous"),
    ("ModuleNotFoundError: No module named 'mbridge'", "module-not-found-megatron"),
    ("torch.AcceleratorError: CUDA error: an illegal memory access was encountered", "cuda-illegal-memory-access"),
], ids=lambda x: x if len(x) < 30 else x[:30])
def test_runtime_messages_match_what_users_paste(paste, expected):
    assert match_runtime(paste)[0].id == expected


def test_harmless_lines_are_not_offered_as_the_match_next_to_a_real_error():
    from core.knowledge.tables import match_tables

    alone = '(SGLangEngine pid=1) INFO:     10.0.0.1:5 - "GET /health HTTP/1.1" 200 OK'
    assert ("runtime", "sglang-get-health-lines") in match_tables(alone, pasted=True)
    mixed = alone + "\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\nFooError: unheard of\n"
    assert not [k for k in match_tables(mixed, pasted=True) if k[0] == "runtime"]


def test_the_inner_error_of_a_ray_wrapper_wins_over_the_wrapper():
    paste = ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::MegatronTrainRayActor.train() (pid=1, ip=10.0.0.1)\n"
             "  File \"/root/slime/slime/utils/ppo_utils.py\", line 672, in calculate_log_probs_and_entropy\n"
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 58.15 GiB.")
    ids = [m.id for m in match_runtime(paste)]
    assert ids[0] == "cuda-out-of-memory" and "ray-task-error-wrapper" in ids


@pytest.mark.parametrize("text", ["", "   ", "how do I set the learning rate", "x" * 300_000,
                                  "<script>alert(1)</script> Robert'); DROP TABLE docs;--"])
def test_runtime_matching_is_quiet_on_unrelated_or_hostile_text(text):
    assert match_runtime(text) == []


def test_runtime_matching_is_bounded_in_time():
    hay = ("CUDA out of memory " * 10 + "z" * 1000) * 200  # ~200k chars, every marker tested once
    start = time.perf_counter()
    for _ in range(20):
        match_runtime(hay)
    assert (time.perf_counter() - start) / 20 < 0.5


@pytest.mark.parametrize("text, problem", [
    ("messages: [", RuntimeTableError),
    ("- just a list", RuntimeTableError),
    ("messages:\n  - id: Bad Id\n    layer: ray\n    template: t\n    markers: [long enough]\n    meaning: m\n"
     "    causes: [{why: w}]\n    check_first: c\n    sources: [train.py@624b824a]\n", ValidationError),
    ("messages:\n  - id: ok\n    layer: fortran\n    template: t\n    markers: [long enough]\n    meaning: m\n"
     "    causes: [{why: w}]\n    check_first: c\n    sources: [train.py@624b824a]\n", ValidationError),
    ("messages:\n  - id: ok\n    layer: ray\n    template: t\n    markers: [abc]\n    meaning: m\n"
     "    causes: [{why: w}]\n    check_first: c\n    sources: [train.py@624b824a]\n", ValidationError),
    ("messages:\n  - id: ok\n    layer: ray\n    template: t\n    markers: [long enough]\n    meaning: m\n"
     "    causes: []\n    check_first: c\n    sources: [train.py@624b824a]\n", ValidationError),
], ids=["yaml", "not-a-mapping", "id", "layer", "short-marker", "no-cause"])
def test_malformed_runtime_tables_are_refused(text, problem):
    with pytest.raises(problem):
        parse_runtime_messages(text)


# --------------------------------------------------------------------------------------------------
# Other frameworks' words
# --------------------------------------------------------------------------------------------------
def test_terms_map_to_primary_slime_flags_or_say_there_is_none():
    from core.launch import load_catalog

    catalog, terms = load_catalog(), load_terms()
    assert len(terms) >= 30
    assert {f for t in terms for f in t.frameworks} == {"ppo", "trl", "verl", "openrlhf"}
    for t in terms:
        for flag in t.flags:
            spec = catalog.lookup(flag)
            assert spec is not None and spec.primary == flag, (t.id, flag)
        assert set(t.cards) <= CARD_IDS, t.id
        if not t.flags:
            assert "at the pin" in t.slime or "Always on" in t.slime, t.id
    absent = {t.id for t in terms if not t.flags}
    assert {"ppo-epochs", "lora-adapters"} <= absent


@pytest.mark.parametrize("question, term_id, words", [
    ("what is ppo_mini_batch_size in slime", "ppo-mini-batch-size", "global batch size"),
    ("verl actor_rollout_ref.rollout.n = 8", "rollout-n", "n samples per prompt"),
    ("TRL num_generations", "rollout-n", "n samples per prompt"),
    ("OpenRLHF micro_train_batch_size", "micro-batch-size", "micro batch size"),
    ("kl_loss_coef and kl_loss_type low_var_kl", "kl-loss", "kl loss coef"),
    ("vllm gpu_memory_utilization", "gpu-memory-utilization", "sglang mem fraction static"),
    ("init_kl_coef", "kl-in-reward", "kl coef"),
], ids=str)
def test_terms_are_found_and_expanded_to_slime_words(question, term_id, words):
    """The slime words are added unless the question already has all of them."""
    assert term_id in [t.id for t in match_terms(question)]
    have = set(re.sub(r"[^a-z0-9]+", " ", question.lower()).split())
    assert words in expand_terms(question) or set(words.split()) <= have


def test_the_longest_name_wins_and_unrelated_questions_expand_to_nothing():
    assert match_terms("ppo_mini_batch_size")[0].id == "ppo-mini-batch-size"
    assert expand_terms("how does slime save checkpoints") == []
    assert expand_terms("") == [] and match_terms("x" * 50_000) == []


def test_search_puts_the_term_and_its_flag_first():
    results = get_index().search("what is ppo_mini_batch_size in slime", limit=5)
    assert [(r.kind, r.id) for r in results[:2]] == [("term", "ppo-mini-batch-size"), ("flag", "--global-batch-size")]
    lora = get_index().search("does slime support LoRA adapters", limit=3)
    assert lora[0].kind == "term" and "no LoRA" in lora[0].snippet


def test_malformed_terms_are_refused():
    with pytest.raises(ValidationError):
        parse_terms("terms:\n  - {id: x, term: t, frameworks: [deepspeed], meaning: m, slime: s, sources: [a@b]}\n")
    with pytest.raises(ValidationError):
        parse_terms("terms:\n  - {id: x, term: t, frameworks: [trl], meaning: m, slime: s, flags: [lr],"
                    " sources: [a@b]}\n")


# --------------------------------------------------------------------------------------------------
# Known bugs
# --------------------------------------------------------------------------------------------------
def test_known_bugs_name_real_threads_and_their_fix():
    bugs = load_bugs()
    assert len(bugs) >= 10
    for b in bugs:
        assert all(t.startswith("https://github.com/THUDM/slime/") for t in b.threads), b.id
        assert set(b.cards) <= CARD_IDS, b.id
        if b.layer != "slime":  # an upstream layer's bug: keyed by its versions, no slime commit
            assert b.versions and b.upstream and b.detect is None and b.fixed_upstream.startswith(
                ("fixed upstream in ", "not fixed in the ")), b.id
            continue
        assert re.fullmatch(r"[0-9a-f]{40}", b.fix_commit), b.id
        assert re.fullmatch(r"(#\d+)?", b.fix_pr), b.id  # empty: pushed without a pull request
        assert all(t.startswith("https://github.com/THUDM/slime/") for t in b.threads), b.id
        assert b.fix_pr or any(b.fix_commit in t for t in b.threads), b.id
        assert b.fixed_upstream.startswith(f"fixed upstream in {b.fix_commit[:9]} ({b.fix_pr or 'no PR'}, ")
        assert set(b.cards) <= CARD_IDS, b.id


@pytest.mark.skipif(not SLIME.is_dir(), reason="pinned slime sources are not on this machine")
def test_the_pinned_slime_has_every_fix():
    for b in load_bugs():
        if b.layer != "slime":
            assert checkout_has_fix(b, SLIME).has_fix is None, b.id  # told by the layer's version, not the code
            continue
        status = checkout_has_fix(b, SLIME)
        assert status.has_fix is True, (b.id, status.detail)


def _bug(kind: str, markers: list[str], file: str = "slime/x.py") -> KnownBug:
    return parse_bugs(json.dumps({"bugs": [{
        "id": "b", "title": "t", "symptom": "s", "affected": "a", "fix_commit": "0" * 40, "fix_pr": "#1",
        "fix_date": "2026-01-01", "workaround": "w", "cause": "c", "threads": ["https://github.com/THUDM/slime/issues/1"],
        "detect": {"file": file, "kind": kind, "markers": markers}}]}))[0]


def test_fix_detection_reads_the_code_of_a_checkout(tmp_path):
    (tmp_path / "slime").mkdir()
    (tmp_path / "slime" / "x.py").write_text("def f():\n    return int(gpu_id)\n")
    assert checkout_has_fix(_bug("added", ["int(gpu_id)"]), tmp_path).has_fix is True
    assert checkout_has_fix(_bug("added", ["str(gpu_id)", "int(gpu_id)"]), tmp_path).has_fix is True
    assert checkout_has_fix(_bug("added", ["float(gpu_id)"]), tmp_path).has_fix is False
    assert checkout_has_fix(_bug("removed", ["int(gpu_id)"]), tmp_path).has_fix is False
    assert checkout_has_fix(_bug("file_added", []), tmp_path).has_fix is True
    assert checkout_has_fix(_bug("file_removed", []), tmp_path).has_fix is False
    gone = checkout_has_fix(_bug("added", ["x"], file="slime/moved.py"), tmp_path)
    assert gone.has_fix is None and "cannot be told" in gone.detail


def test_fix_detection_never_leaves_the_checkout(tmp_path):
    outside = tmp_path / "secret.py"
    outside.write_text("int(gpu_id)\n")
    checkout = tmp_path / "co"
    (checkout / "slime").mkdir(parents=True)
    (checkout / "slime" / "x.py").symlink_to(outside)
    status = checkout_has_fix(_bug("added", ["int(gpu_id)"]), checkout)
    assert status.has_fix is None and "could not be read" in status.detail
    for bad in ("../secret.py", "/etc/passwd", "slime\\..\\x.py"):
        with pytest.raises(ValidationError):
            _bug("added", ["x"], file=bad)
    with pytest.raises(ValidationError):
        _bug("added", [])


def test_known_bug_markers_match_pasted_messages():
    paste = ("(SGLangEngine pid=9) [2026-07-30 16:40:46 TP7] Context: self.device='cuda' self.gpu_id=16 "
             "os.environ.get('CUDA_VISIBLE_DEVICES')='0,4,8,12,1,5,9,13,6,2,10,14,7,3,11,15'")
    assert match_bugs(paste)[0].id == "gpu-order-string-sort"
    assert match_bugs("ModuleNotFoundError: No module named 'slime.backends.megatron_utils.megatron_to_hf.qwen3_vl'"
                      )[0].id == "qwen3-vl-module-hyphen"
    assert match_bugs("how do I resume training") == []


# --------------------------------------------------------------------------------------------------
# ask (command line) and the Ask page
# --------------------------------------------------------------------------------------------------
def _ask(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    return subprocess.run([sys.executable, "-m", "core", "ask", *argv], cwd=ROOT, input=stdin, text=True,
                          capture_output=True, timeout=120, preexec_fn=limit)


def test_ask_shows_fixed_upstream_and_whether_a_checkout_has_the_fix(tmp_path):
    checkout = tmp_path / "old"
    (checkout / "slime" / "utils").mkdir(parents=True)
    (checkout / "slime" / "utils" / "arguments.py").write_text("x = 1\n")
    (checkout / "slime" / "utils" / "http_utils.py").write_text("client = httpx.AsyncClient()\n")
    query = "proxy variables sent intra-cluster SGLang traffic through the proxy"
    out = _ask(query, "--limit", "3", "--slime-checkout", str(checkout))
    assert out.returncode == 0, out.stderr
    assert "fixed upstream in 5fa6755db (#1714, 2026-03-22)" in out.stdout.lower()
    assert "does NOT have the fix" in out.stdout
    as_json = json.loads(_ask(query, "--format", "json", "--slime-checkout", str(checkout)).stdout)
    bug = next(r for r in as_json["results"] if r["kind"] == "bug")
    assert bug["id"] == "proxy-env-503" and bug["checkout_has_fix"] is False
    bad = _ask("503", "--slime-checkout", str(tmp_path / "nothing"))
    assert bad.returncode == 2 and "nothing is not a directory" in bad.stderr


def test_ask_explains_a_runtime_message_with_causes_and_checks():
    out = _ask("-", stdin="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 58.15 GiB.\n")
    assert out.returncode == 0, out.stderr
    assert "Messages from the layers under slime:" in out.stdout
    assert "cause 1:" in out.stdout and "check first:" in out.stdout
    assert "caught before launch by MODE002" in out.stdout


def test_ask_page_shows_runtime_messages_terms_and_bugs(app_env, make_app, tmp_path, monkeypatch):
    at = make_app("pages/ask.py").run()
    at.text_area(key="ask_query").input("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)").run()
    assert not at.exception
    assert "Messages from the layers under slime" in [s.value for s in at.subheader]
    text = " ".join(m.value for m in at.markdown)
    assert "Usual causes in slime" in text and "distributed" in text
    at.text_area(key="ask_query").input("what is ppo_mini_batch_size").run()
    assert not at.exception
    assert at.subheader[0].value == "Other frameworks' words"
    at.text_area(key="ask_query").input("self.gpu_id=16 CUDA_VISIBLE_DEVICES 0,1,10,11,12,13,14,15,2,3").run()
    assert not at.exception
    assert at.subheader[0].value == "Known bugs fixed upstream"
    fixed = [s.value.replace("\\", "") for s in at.success]
    assert any("Fixed upstream in 95df894a9 (#2246, 2026-08-12)" in v for v in fixed), fixed


def test_ask_page_says_whether_the_named_checkout_has_a_fix(app_env, make_app, tmp_path, monkeypatch):
    from core.memory.profile import Profile
    from core.memory.store import Store

    checkout = tmp_path / "mine"
    (checkout / "slime" / "utils").mkdir(parents=True)
    (checkout / "slime" / "utils" / "arguments.py").write_text("x = 1\n")
    (checkout / "slime" / "ray").mkdir()
    (checkout / "slime" / "ray" / "placement_group.py").write_text("def sort_key(x):\n    return (ip, gpu_id)\n")
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    at = make_app("pages/check_args.py").run()
    at.text_input(key="ca_checkout").input(str(checkout)).run()
    at.switch_page("pages/ask.py").run()
    at.text_area(key="ask_query").input("sort_key GPU ordering with 10+ GPUs self.gpu_id=16").run()
    assert not at.exception
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert any("Your checkout does not have the fix" in w and "placement_group.py" in w for w in warnings), warnings


def test_plain_word_terms_do_not_take_over_long_questions():
    from core.knowledge.tables import match_tables

    long_q = "reference model OOM during the log prob computation with 8 GPUs and tensor parallel 2 on H100"
    assert not [k for k in match_tables(long_q) if k[0] == "term"]
    assert ("term", "reference-model") in match_tables("what is the reference model in slime")
    assert ("term", "lora-adapters") in match_tables(
        "LoRA Support: It looks like LoRA support would be a worthwhile addition. Is this on the horizon?")
    assert ("term", "ppo-mini-batch-size") in match_tables(
        "In the Slime framework, there is no explicit mention of a mini batch size, unlike ppo_mini_batch_size")
