"""The argument catalog: facts of the committed catalog, the loader API, and the generator on a fake tree."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from core.knowledge.cards import SOURCE_RE
from core.launch.catalog import (
    CATALOG_PATH,
    CatalogError,
    catalog_from_json,
    catalog_to_json,
    load_catalog,
)
from core.launch.catalog_build import DESCRIPTIONS, FilePatch, apply_patch, build_catalog, parse_unified_diff
from core.pins import pinned_source_dir


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


# -- facts read from the pinned sources ------------------------------------------------------------

# (option, attribute, expected) — each checked by reading the upstream line in the flag's `source`.
FLAG_FACTS = [
    ("--rollout-batch-size", "owner", "slime"),
    ("--rollout-batch-size", "type", "int"),
    ("--rollout-batch-size", "required", True),
    ("--n-samples-per-prompt", "default", 1),
    ("--global-batch-size", "owner", "megatron"),
    ("--global-batch-size", "default", None),
    ("--global-batch-size", "reset_source", "slime/utils/arguments.py:706@624b824a"),
    ("--micro-batch-size", "default", 1),
    ("--micro-batch-size", "reset_source", "slime/utils/arguments.py:717@624b824a"),
    ("--lr", "default", 1e-6),
    ("--lr", "reset_source", "slime/utils/arguments.py:880@624b824a"),
    ("--seed", "default", 1234),
    ("--distributed-backend", "default", "nccl"),
    ("--sglang-mem-fraction-static", "owner", "sglang"),
    ("--sglang-mem-fraction-static", "type", "float"),
    ("--sglang-mem-fraction-static", "parsers", ["sglang"]),
    ("--sglang-server-concurrency", "owner", "slime"),
    ("--sglang-server-concurrency", "default", 512),
    ("--router-policy", "owner", "router"),
    ("--router-balance-abs-threshold", "default", 10),
    ("--router-balance-abs-threshold", "upstream_default", 64),
    ("--router-log-level", "default", "warn"),
    ("--sequence-parallel", "action", "store_true"),
    ("--no-tp-comm-overlap-ag", "action", "store_false"),
    ("--no-tp-comm-overlap-ag", "dest", "tp_comm_overlap_ag"),
    ("--disable-tp-comm-overlap-ag", "dest", "tp_comm_overlap_ag"),
    ("--attention-backend", "choices", ["flash", "fused", "unfused", "local", "auto"]),
    ("--train-backend", "parsers", ["pre"]),
    ("--debug-train-only", "parsers", ["pre"]),
    ("--offload-train", "action", "boolean_optional"),
    ("--no-offload-train", "dest", "offload_train"),
    ("--use-gated-attention", "patched", True),
    ("--use-gated-attention", "source", "docker/patch/latest/megatron.patch:963@624b824a"),
    ("--post-mlp-layernorm", "patched", True),
    ("--sglang-release-hicache", "patched", True),
    ("--teacher-port", "entry_point", "slime/backends/megatron_utils/server/megatron_server.py"),
    ("--custom-config-path", "owner", "slime"),
]


@pytest.mark.parametrize(("option", "attribute", "expected"), FLAG_FACTS, ids=str)
def test_flag_fact(catalog, option, attribute, expected):
    flag = catalog.lookup(option)
    assert flag is not None, option
    assert getattr(flag, attribute) == expected


ABSENT = [
    "--async-buffer-size",  # popular write-ups mention it; slime's parser does not define it at 624b824a
    "--max-turns",  # likewise
    "--sglang-tp-size",  # skipped: slime sets SGLang's TP size from --rollout-num-gpus-per-engine
    "--sglang-tensor-parallel-size",
    "--sglang-model-path",
    "--sglang-port",
    "--host",  # the router's host/port are excluded (exclude_host_port=True)
]


@pytest.mark.parametrize("option", ABSENT, ids=str)
def test_option_is_not_accepted(catalog, option):
    assert catalog.lookup(option) is None
    assert catalog.owner_of(option) == "unknown"


@pytest.mark.parametrize("option", ["--sglang-tp-size", "--sglang-tensor-parallel-size", "--sglang-model-path",
                                    "--sglang-random-seed", "--sglang-config"], ids=str)
def test_skipped_sglang_flags_are_listed(catalog, option):
    if option == "--sglang-config":
        # slime's own --sglang-config replaces SGLang's skipped --config
        assert catalog.lookup(option).owner == "slime"
    else:
        skipped = catalog.lookup_skipped(option)
        assert skipped is not None and skipped.source.startswith("python/sglang/srt/server_args.py:")


@pytest.mark.parametrize(("parser", "allow_abbrev", "ignore_unknown"),
                         [("pre", False, True), ("sglang", True, True), ("main", False, True)], ids=str)
def test_parser_semantics(catalog, parser, allow_abbrev, ignore_unknown):
    semantics = catalog.parsers[parser]
    assert (semantics.allow_abbrev, semantics.ignore_unknown) == (allow_abbrev, ignore_unknown)
    assert semantics.source


def test_pins(catalog):
    assert catalog.pins["slime"] == "624b824a"
    assert catalog.pins["megatron"] == "1dcf0daf"
    assert catalog.pins["sglang"] == "v0.5.15.post1"
    assert catalog.pins["sglang_router"] == "0.3.2"


# -- loader API ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("typo", "meant"), [("--n-sample-per-prompt", "--n-samples-per-prompt"),
                                             ("--rollout-batchsize", "--rollout-batch-size"),
                                             ("--sglang-mem-fraction", "--sglang-mem-fraction-static")], ids=str)
def test_suggest(catalog, typo, meant):
    assert meant in catalog.suggest(typo)


@pytest.mark.parametrize(("option", "expected"), [
    ("--sglang-mem-frac", ["--sglang-mem-fraction-static"]),
    ("--sglang-mem-frac=0.7", ["--sglang-mem-fraction-static"]),
    ("--router-balance-abs", ["--router-balance-abs-threshold"]),
    ("--rollout-batch", []),  # main parser: allow_abbrev=False
    ("--debug-train", []),  # pre-parser: allow_abbrev=False
    ("--sglang-mem-fraction-static", []),  # exact, not an abbreviation
], ids=str)
def test_expand_abbreviation(catalog, option, expected):
    assert [f.primary for f in catalog.expand_abbreviation(option)] == expected


def test_ambiguous_prefix_lists_every_candidate(catalog):
    matches = catalog.abbreviation_matches("--sglang-enable-")
    assert len(matches["sglang"]) > 1


def test_lookup_ignores_inline_value(catalog):
    assert catalog.lookup("--lr=1e-5").primary == "--lr"
    assert catalog.owner_of("--sglang-mem-fraction-static=0.8") == "sglang"


@pytest.mark.parametrize(("option", "takes_value"), [("--colocate", False), ("--offload-train", False),
                                                     ("--lr", True), ("--sglang-stream-output", False),
                                                     ("--sglang-cuda-graph-bs-decode", True)], ids=str)
def test_takes_value(catalog, option, takes_value):
    assert catalog.lookup(option).takes_value is takes_value


def test_catalog_is_sorted_unique_and_well_cited(catalog):
    primaries = [f.primary for f in catalog.flags]
    assert primaries == sorted(primaries)
    options = [o for f in catalog.flags for o in f.option_strings]
    assert len(options) == len(set(options))
    bad = [f.source for f in catalog.flags if not SOURCE_RE.match(f.source)]
    bad += [f.reset_source for f in catalog.flags if f.reset_source and not SOURCE_RE.match(f.reset_source)]
    assert bad == []
    assert {f.owner for f in catalog.flags} == {"slime", "megatron", "sglang", "router"}
    assert CATALOG_PATH.stat().st_size < 3_000_000


@pytest.mark.parametrize("option", sorted(DESCRIPTIONS), ids=str)
def test_described_flags_exist_and_carry_their_description(catalog, option):
    flag = catalog.lookup(option)
    assert flag is not None
    assert flag.description == DESCRIPTIONS[option]


def test_committed_file_round_trips_byte_for_byte(catalog):
    assert catalog_to_json(catalog) == CATALOG_PATH.read_bytes()


@pytest.mark.parametrize("text", [b"not json", b"[1, 2]", b'{"pins": {}}'], ids=str)
def test_bad_catalog_document_is_refused_with_a_message(text):
    with pytest.raises(CatalogError):
        catalog_from_json(text)


def test_missing_catalog_file(tmp_path):
    with pytest.raises(CatalogError, match="No argument catalog"):
        load_catalog(tmp_path / "nope.json")


# -- patch application -------------------------------------------------------------------------------

PATCH = """\
diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -2,3 +2,4 @@ def f():
     a = 1
-    b = 2
+    b = 3
+    c = 4
     return a
"""


def test_apply_patch_maps_lines_to_upstream_and_patch():
    original = "def f():\n    a = 1\n    b = 2\n    return a\n"
    patches = parse_unified_diff(PATCH, "docker/patch/x.patch", "pin")
    new_text, original_line, added = apply_patch(original, patches["pkg/mod.py"])
    assert new_text == "def f():\n    a = 1\n    b = 3\n    c = 4\n    return a\n"
    assert original_line[5] == 4  # `return a` was line 4 upstream
    assert added == {3: "docker/patch/x.patch:7@pin", 4: "docker/patch/x.patch:8@pin"}


def test_apply_patch_refuses_a_hunk_that_does_not_match():
    patches = parse_unified_diff(PATCH, "x.patch", "pin")
    with pytest.raises(ValueError, match="does not apply"):
        apply_patch("something else entirely\n", patches["pkg/mod.py"])


def test_parse_unified_diff_returns_file_patches():
    patches = parse_unified_diff(PATCH, "x.patch", "pin")
    assert isinstance(patches["pkg/mod.py"], FilePatch)
    assert len(patches["pkg/mod.py"].hunks) == 1


# -- the generator on a tiny synthetic tree ----------------------------------------------------------

FAKE_FILES = {
    "slime/slime/__init__.py": "",
    "slime/slime/utils/__init__.py": "",
    "slime/slime/utils/arguments.py": """
        import argparse

        from slime.backends.sglang_utils.arguments import sglang_parse_args


        def reset_arg(parser, name, **kwargs):
            pass


        def get_slime_extra_args_provider(add_custom_arguments=None):
            def add_slime_arguments(parser):
                def add_cluster(parser):
                    parser.add_argument("--actor-num-nodes", type=int, default=1)
                    parser.add_argument("--colocate", action="store_true")
                    parser.add_argument("--offload-train", action=argparse.BooleanOptionalAction)
                    reset_arg(parser, "--lr", type=float, default=1e-6)
                    reset_arg(parser, "--brand-new", type=int, default=3)
                    return parser

                if add_custom_arguments is not None:
                    parser = add_custom_arguments(parser)
                parser = add_cluster(parser)
                return parser

            return add_slime_arguments


        def _pre_parse_mode():
            temp_parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
            temp_parser.add_argument("--debug-train-only", action="store_true", default=False)
            temp_args, _ = temp_parser.parse_known_args()
            return temp_args
    """,
    "slime/slime/backends/__init__.py": "",
    "slime/slime/backends/sglang_utils/__init__.py": "",
    "slime/slime/backends/sglang_utils/arguments.py": """
        import argparse

        from sglang.srt.server_args import ServerArgs
        from sglang_router.router_args import RouterArgs


        def add_sglang_arguments(parser):
            RouterArgs.add_cli_args(parser, use_router_prefix=True, exclude_host_port=True)
            parser.set_defaults(router_cache_threshold=0.9)
            old_add_argument = parser.add_argument
            skipped_args = ["tp_size", "model_path", "config"]

            def wrapper(*name_or_flags, **kwargs):
                canonical = kwargs.get("dest") or name_or_flags[0][2:].replace("-", "_")
                if canonical in skipped_args:
                    return
                names = [f"--sglang-{n.lstrip('-')}" for n in name_or_flags]
                if "dest" in kwargs:
                    kwargs["dest"] = f"sglang_{kwargs['dest']}"
                old_add_argument(*names, **kwargs)

            parser.add_argument = wrapper
            ServerArgs.add_cli_args(parser)
            parser.add_argument = old_add_argument
            parser.add_argument("--sglang-config", type=str, default=None)
            return parser


        def sglang_parse_args():
            parser = argparse.ArgumentParser(add_help=False)
            add_sglang_arguments(parser)
            args, _ = parser.parse_known_args()
            return args
    """,
    "slime/slime/backends/megatron_utils/__init__.py": "",
    "slime/slime/backends/megatron_utils/arguments.py": """
        from megatron.training.arguments import parse_args as _megatron_parse_args


        def megatron_parse_args(extra_args_provider, skip_hf_validate=False):
            args = _megatron_parse_args(extra_args_provider=extra_args_provider, ignore_unknown_args=True)
            return args
    """,
    "slime/docker/Dockerfile": """
        ARG PATCH_VERSION=latest
        RUN cd Megatron-LM && git apply megatron.patch --3way
    """,
    "slime/docker/patch/latest/megatron.patch": """
        --- a/megatron/training/arguments.py
        +++ b/megatron/training/arguments.py
        @@ -14,2 +14,3 @@ def _add_training_args(parser):
             group.add_argument('--lr', type=float, default=None)
        +    group.add_argument('--patched-flag', action='store_true')
             return parser
    """,
    "megatron/megatron/__init__.py": "",
    "megatron/megatron/training/__init__.py": "",
    "megatron/megatron/training/argument_utils.py": """
        class ArgumentGroupFactory:
            pass
    """,
    "megatron/megatron/training/config.py": """
        from dataclasses import dataclass, field
        from typing import Literal, Optional


        @dataclass
        class TrainConfig:
            micro_batch_size: Optional[int] = None
            overlap_grad: bool = True
            use_thing: bool = False
            layers: list[int] = field(default_factory=list)
            mode: Literal["a", "b"] = "a"
            hidden: int = field(default=0, metadata={"argparse_meta": {"arg_names": ["--hidden-size"]}})
            skipped_field: int = 0
    """,
    "megatron/megatron/training/arguments.py": """
        import argparse

        from megatron.training.argument_utils import ArgumentGroupFactory


        def parse_args(extra_args_provider=None, ignore_unknown_args=False):
            parser = argparse.ArgumentParser(description='fake', allow_abbrev=False)
            parser = _add_training_args(parser)
            if extra_args_provider is not None:
                parser = extra_args_provider(parser)
            if ignore_unknown_args:
                args, _ = parser.parse_known_args()
            else:
                args = parser.parse_args()
            return args


        def _add_training_args(parser):
            from megatron.training.config import TrainConfig
            factory = ArgumentGroupFactory(TrainConfig, exclude=["skipped_field"])
            factory.build_group(parser, "train")
            group = parser.add_argument_group(title='training')
            group.add_argument('--lr', type=float, default=None)
            return parser
    """,
    "sglang/sglang/__init__.py": "",
    "sglang/sglang/srt/__init__.py": "",
    "sglang/sglang/srt/arg_groups/__init__.py": "",
    "sglang/sglang/srt/arg_groups/arg_utils.py": """
        from typing import Annotated

        A = Annotated


        class Arg:
            pass


        def add_cli_args_from_dataclass(parser, cls):
            pass
    """,
    "sglang/sglang/srt/server_args.py": """
        import dataclasses
        from typing import List, Optional

        from sglang.srt.arg_groups.arg_utils import A, Arg, add_cli_args_from_dataclass

        CHOICES = ["x", "y"]


        @dataclasses.dataclass
        class ServerArgs:
            model_path: A[str, Arg(help="h", aliases=["--model"])]
            tp_size: A[int, Arg(help="h", aliases=["--tensor-parallel-size"])] = 1
            mem_fraction_static: A[Optional[float], "h"] = None
            backend: A[str, Arg(help="h", choices=CHOICES)] = "x"
            cuda_graph_bs: A[Optional[List[int]], "h"] = None
            enable_thing: A[bool, "h"] = True
            internal: A[int, Arg(help="h", no_cli=True)] = 0
            plain: int = 0

            @staticmethod
            def add_cli_args(parser):
                add_cli_args_from_dataclass(parser, ServerArgs)
                parser.add_argument("--config", type=str)
    """,
    "router/sglang_router/__init__.py": "",
    "router/sglang_router/version.py": '__version__ = "9.9.9"\n',
    "router/sglang_router/router_args.py": """
        import dataclasses


        @dataclasses.dataclass
        class RouterArgs:
            host: str = "0.0.0.0"
            cache_threshold: float = 0.3

            @staticmethod
            def add_cli_args(parser, use_router_prefix=False, exclude_host_port=False):
                prefix = "router-" if use_router_prefix else ""
                if not exclude_host_port:
                    parser.add_argument("--host", type=str, default=RouterArgs.host)
                parser.add_argument(f"--{prefix}cache-threshold", type=float, default=RouterArgs.cache_threshold)
    """,
}


@pytest.fixture
def fake_tree(tmp_path) -> Path:
    for rel, text in FAKE_FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return tmp_path


@pytest.fixture
def fake_catalog(fake_tree):
    return build_catalog(fake_tree / "slime", fake_tree / "megatron", fake_tree / "sglang", fake_tree / "router",
                         pins={"slime": "s1", "megatron": "m1", "sglang": "g1"})


# (option, attribute, expected) on the synthetic tree
FAKE_FACTS = [
    ("--actor-num-nodes", "owner", "slime"),
    ("--actor-num-nodes", "source", "slime/utils/arguments.py:13@s1"),
    ("--colocate", "default", False),
    ("--no-offload-train", "dest", "offload_train"),
    ("--lr", "owner", "megatron"),
    ("--lr", "default", 1e-6),
    ("--lr", "upstream_default", None),
    ("--lr", "reset_source", "slime/utils/arguments.py:16@s1"),
    ("--brand-new", "owner", "slime"),
    ("--brand-new", "default", 3),
    ("--micro-batch-size", "type", "int"),
    ("--micro-batch-size", "source", "megatron/training/config.py:7@m1"),
    ("--no-overlap-grad", "action", "store_false"),
    ("--disable-overlap-grad", "dest", "overlap_grad"),
    ("--use-thing", "action", "store_true"),
    ("--layers", "nargs", "+"),
    ("--layers", "default", []),
    ("--mode", "choices", ["a", "b"]),
    ("--hidden-size", "dest", "hidden"),
    ("--patched-flag", "patched", True),
    ("--patched-flag", "source", "docker/patch/latest/megatron.patch:5@s1"),
    ("--help", "parsers", ["main"]),
    ("--debug-train-only", "parsers", ["pre"]),
    ("--sglang-mem-fraction-static", "owner", "sglang"),
    ("--sglang-mem-fraction-static", "source", "python/sglang/srt/server_args.py:13@g1"),
    ("--sglang-backend", "choices", ["x", "y"]),
    ("--sglang-cuda-graph-bs", "nargs", "+"),
    ("--sglang-cuda-graph-bs", "type", "int"),
    ("--sglang-enable-thing", "action", "store_true"),
    ("--sglang-enable-thing", "default", True),
    ("--sglang-config", "owner", "slime"),
    ("--router-cache-threshold", "owner", "router"),
    ("--router-cache-threshold", "default", 0.9),
    ("--router-cache-threshold", "upstream_default", 0.3),
]


@pytest.mark.parametrize(("option", "attribute", "expected"), FAKE_FACTS, ids=str)
def test_generator_on_fake_tree(fake_catalog, option, attribute, expected):
    flag = fake_catalog.lookup(option)
    assert flag is not None, option
    assert getattr(flag, attribute) == expected


@pytest.mark.parametrize("option", ["--skipped-field", "--sglang-tp-size", "--sglang-model-path", "--sglang-internal",
                                    "--sglang-plain", "--host", "--router-host"], ids=str)
def test_generator_leaves_out(fake_catalog, option):
    assert fake_catalog.lookup(option) is None


def test_generator_records_parsers_skips_and_pins(fake_catalog):
    assert fake_catalog.parsers["main"].allow_abbrev is False
    assert fake_catalog.parsers["main"].ignore_unknown is True
    assert fake_catalog.parsers["sglang"].allow_abbrev is True
    assert fake_catalog.parsers["pre"].allow_abbrev is False
    assert {s.dest for s in fake_catalog.skipped} == {"tp_size", "model_path", "config"}
    assert fake_catalog.lookup_skipped("--sglang-tensor-parallel-size").dest == "tp_size"
    assert fake_catalog.pins["sglang_router"] == "9.9.9"
    assert fake_catalog.build_notes == []


def test_generator_is_deterministic(fake_tree, fake_catalog):
    again = build_catalog(fake_tree / "slime", fake_tree / "megatron", fake_tree / "sglang", fake_tree / "router",
                          pins={"slime": "s1", "megatron": "m1", "sglang": "g1"})
    assert catalog_to_json(again) == catalog_to_json(fake_catalog)


def test_user_checkout_reuses_the_committed_parts(fake_tree, fake_catalog):
    """Only a slime checkout given: Megatron, SGLang and router flags come from a committed catalog."""
    user = build_catalog(fake_tree / "slime", committed=fake_catalog)
    assert user.pins["slime"].startswith("user checkout ")
    assert "from the committed catalog" in user.pins["megatron"]
    assert user.lookup("--micro-batch-size").owner == "megatron"
    assert user.lookup("--lr").default == 1e-6  # slime's reset_arg applied again to the Megatron flag
    assert user.lookup("--sglang-mem-fraction-static").owner == "sglang"
    assert user.lookup("--router-cache-threshold").default == 0.9
    assert user.lookup("--actor-num-nodes").source == "slime/utils/arguments.py:13@local"
    assert {s.dest for s in user.skipped} == {"tp_size", "model_path", "config"}


def test_not_a_slime_checkout(tmp_path):
    with pytest.raises(CatalogError, match="does not look like a slime checkout"):
        build_catalog(tmp_path)


# -- against the real pinned sources (only where they are present; CI has none) ---------------------

REAL = {"slime": pinned_source_dir("slime"), "megatron": pinned_source_dir("megatron"),
        "sglang": pinned_source_dir("sglang"), "router": pinned_source_dir("router")}


@pytest.mark.skipif(not all(p.is_dir() for p in REAL.values()), reason="pinned upstream sources not available")
def test_committed_catalog_matches_a_fresh_build():
    from core.launch.catalog_build import default_pins

    fresh = build_catalog(REAL["slime"], REAL["megatron"], REAL["sglang"], REAL["router"], pins=default_pins())
    assert catalog_to_json(fresh) == CATALOG_PATH.read_bytes()


# -- a user's checkout that is not shaped like upstream: one error type, a message naming the problem --

SMALL_ARGUMENTS = '''
import argparse


def _pre_parse_mode():
    temp_parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    temp_parser.add_argument("--debug-train-only", action="store_true", default=False)
    return temp_parser.parse_known_args()


def get_slime_extra_args_provider(add_custom_arguments=None):
    def add_slime_arguments(parser):
{body}
        return parser

    return add_slime_arguments
'''


def with_body(*lines: str) -> str:
    """slime/utils/arguments.py of a small checkout whose extra-args provider runs `lines`."""
    return SMALL_ARGUMENTS.format(body="\n".join(" " * 8 + line for line in lines))


def small_checkout(root: Path, arguments: str | bytes) -> Path:
    target = root / "slime" / "utils" / "arguments.py"
    target.parent.mkdir(parents=True)
    target.write_bytes(arguments if isinstance(arguments, bytes) else arguments.encode())
    return root


@pytest.mark.parametrize(("arguments", "message"), [
    ("def broken(:\n", r"slime/utils/arguments\.py:1 is not valid Python"),
    (b"import argparse\n\0\n", r"slime/utils/arguments\.py is not valid Python"),
    ("import argparse\n", "does not define a function get_slime_extra_args_provider"),
    ("_pre_parse_mode = 3\n", "does not define a function get_slime_extra_args_provider"),
    (SMALL_ARGUMENTS.replace("def get_slime_extra_args_provider", "def renamed").format(body="        pass"),
     "does not define a function get_slime_extra_args_provider"),
    (with_body("parser.add_argument()"), r"shaped unlike upstream slime \(IndexError"),
    (with_body("items = [0] * 1000", "for a in items:", "    for b in items:", "        x = b"),
     "stopped after 300,000 steps"),
    (with_body("def grow(p):", "    grow(p)", "    grow(p)", "grow(parser)"), "stopped after 300,000 steps"),
    (with_body("parser.add_argument('--deep', default=" + "+".join(["1"] * 50_000) + ")"), "too deeply"),
], ids=["syntax-error", "nul-byte", "no-parser-at-all", "pre-parse-mode-not-a-function", "no-provider",
        "add-argument-without-names", "endless-loop", "exponential-recursion", "deep-expression"])
def test_a_checkout_not_shaped_like_upstream_raises_catalog_error(tmp_path, arguments, message):
    with pytest.raises(CatalogError, match=message):
        build_catalog(small_checkout(tmp_path, arguments))


def test_an_oversized_source_file_is_refused_by_size(tmp_path, monkeypatch):
    import core.launch.catalog_build.sources as cb

    monkeypatch.setattr(cb, "MAX_SOURCE_BYTES", 100)
    with pytest.raises(CatalogError, match=r"slime/utils/arguments\.py is \d[\d,]* bytes"):
        build_catalog(small_checkout(tmp_path, with_body("pass")))


@pytest.mark.parametrize("expression", [
    "9 ** 9 ** 9",
    "2 ** 10 ** 6",
    "'x' * 10 ** 12",
    "10 ** 12 * [0]",
    "'{:>999999999}'.format(1)",
    "'{:>{}}'.format(1, 10 ** 9)",
    "'%999999999d' % 1",
    "'%*d' % (10 ** 9, 1)",
    "('a' * 50000).replace('', 'a' * 50000)",
    "[['x' * 1000] * 1000]",
    "[*'x' * 90000, *'y' * 90000]",
    "f\"{'x' * 90000}{'y' * 90000}\"",
], ids=str)
def test_oversized_values_are_left_unresolved_promptly(tmp_path, expression):
    import ast
    import time

    started = time.perf_counter()
    catalog = build_catalog(small_checkout(tmp_path, with_body(f"parser.add_argument('--big', default={expression})")))
    assert time.perf_counter() - started < 5
    flag = catalog.lookup("--big")
    assert flag.default is None and flag.default_repr == ast.unparse(ast.parse(expression, mode="eval").body)


@pytest.mark.parametrize(("expression", "value"), [
    ("2 ** 10", 1024), ("'ab' * 3", "ababab"), ("'%5.2f' % 1.5", " 1.50"), ("'{:>4}'.format(7)", "   7"),
    ("[0] * 3", [0, 0, 0]), ("(-2) ** 3", -8),
], ids=str)
def test_small_arithmetic_is_still_evaluated(tmp_path, expression, value):
    catalog = build_catalog(small_checkout(tmp_path, with_body(f"parser.add_argument('--small', default={expression})")))
    assert catalog.lookup("--small").default == value


@pytest.mark.parametrize(("value", "over"), [
    ("abc", False), ([1, 2, 3], False), (1 << 1000, False), (1 << 2000, True), ("x" * 200_000, True),
    (["x" * 1000] * 1000, True), ({i: i for i in range(60_000)}, True),
], ids=lambda v: str(v)[:30])
def test_value_size_counts_characters_items_and_integer_width(value, over):
    from core.launch.catalog_build import MAX_VALUE_SIZE, value_size

    assert (value_size(value) > MAX_VALUE_SIZE) is over
