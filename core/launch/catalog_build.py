"""Build the argument catalog by reading slime, Megatron-LM, SGLang and sglang-router sources with `ast`.

Nothing upstream is imported or run. A small interpreter walks the functions slime calls to build its
parsers (Megatron's `parse_args`, slime's extra-args provider, `sglang_parse_args`, `_pre_parse_mode`) and
records every `add_argument`, following the helpers they use: slime's `reset_arg` and `--sglang-` renaming
wrapper, Megatron's `ArgumentGroupFactory` (flags generated from config dataclasses), SGLang's
`add_cli_args_from_dataclass` (flags from `Annotated` fields), argparse `set_defaults`, and the unified
diffs slime's Dockerfile applies to Megatron and SGLang. What cannot be evaluated statically is kept as
source text (`default_repr`) or a note, never guessed.
"""

from __future__ import annotations

import ast
import json
import re
import string
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.launch.catalog import (
    Catalog,
    CatalogError,
    FlagSpec,
    ParserSemantics,
    SkippedFlag,
    load_catalog,
)
from core.pins import MEGATRON_SHORT, SGLANG_VERSION, SLIME_SHORT

LOCAL_PIN = "local"

# Parser keys, and the (function, variable) that creates each parser upstream.
PARSER_KEYS = {
    ("_pre_parse_mode", "temp_parser"): "pre",
    ("sglang_parse_args", "parser"): "sglang",
    ("sglang_parse_args", "temp_parser"): "sglang_tp",
    ("parse_args", "parser"): "main",
}
# When one option is registered by several parsers, the namespace slime finally uses takes the value from
# the parser merged last (slime/utils/arguments.py: pre and sglang results are copied over the main ones).
PARSER_PRECEDENCE = ("sglang", "pre", "main", "sglang_tp")

SLIME_ARGS = "slime/utils/arguments.py"
SLIME_SGLANG_ARGS = "slime/backends/sglang_utils/arguments.py"
SLIME_MEGATRON_ARGS = "slime/backends/megatron_utils/arguments.py"
SLIME_SERVER_ARGS = "slime/backends/megatron_utils/server/arguments.py"
MEGATRON_SERVER_ENTRY = "slime/backends/megatron_utils/server/megatron_server.py"
DOCKERFILE = "docker/Dockerfile"

# Limits that keep an unusual or hostile checkout from hanging or exhausting the static reader. The pinned
# trees need a small part of each: 54 files (1.4 MB, the largest 0.32 MB), about 15,000 steps, under 1 s.
MAX_SOURCE_BYTES = 4_000_000  # one Python file
MAX_TREE_SOURCE_BYTES = 20_000_000  # every Python file read for one build
MAX_DOCKERFILE_BYTES = 1_000_000
MAX_STEPS = 300_000  # statements run plus expressions evaluated in one build
MAX_BUILD_SECONDS = 10.0
MAX_INT_BITS = 1024  # a larger integer is left unresolved
MAX_VALUE_SIZE = 100_000  # characters plus items in one value; a larger value is left unresolved
MAX_FORMAT_WIDTH = 999  # widths and precisions in format strings

# One-line descriptions, in our own words, of the flags GRPO launch scripts use most.
DESCRIPTIONS: dict[str, str] = {
    "--rollout-batch-size": "Prompts sampled per rollout step; each yields --n-samples-per-prompt responses.",
    "--n-samples-per-prompt": "Responses generated for every prompt (the GRPO group size).",
    "--global-batch-size": "Samples per optimizer step; derived from --num-steps-per-rollout when that is set.",
    "--num-steps-per-rollout": "Optimizer steps taken on each rollout's data; sets the global batch size.",
    "--num-rollout": "Total number of rollout steps (generate, then train) to run.",
    "--num-epoch": "Passes over the prompt dataset; used to derive --num-rollout when that is unset.",
    "--prompt-data": "Path to the prompt dataset read during rollout (.jsonl, or .parquet with pyarrow).",
    "--input-key": "Field of each data row holding the prompt.",
    "--label-key": "Field of each data row holding the reference answer passed to the reward function.",
    "--metadata-key": "Field of each data row holding per-sample metadata.",
    "--apply-chat-template": "Render each prompt with the tokenizer's chat template before generation.",
    "--rollout-shuffle": "Shuffle the prompts used for rollout.",
    "--rollout-max-response-len": "Cap on generated tokens per response.",
    "--rollout-max-prompt-len": "Drop prompts longer than this many tokens when loading the data.",
    "--rollout-temperature": "Sampling temperature used by SGLang during rollout (must be above 0).",
    "--rollout-top-p": "Nucleus-sampling threshold used during rollout.",
    "--advantage-estimator": "How advantages are computed: grpo, gspo, cispo, ppo or a reinforce_plus_plus variant.",
    "--use-kl-loss": "Add a KL penalty against the reference model to the policy loss.",
    "--kl-loss-coef": "Weight of the KL loss term (only with --use-kl-loss).",
    "--kl-loss-type": "Estimator used for the KL loss term (k1, k2, k3, low_var_kl).",
    "--kl-coef": "Weight of a KL penalty folded into the reward rather than the loss.",
    "--eps-clip": "Lower PPO clip range for the importance ratio.",
    "--eps-clip-high": "Upper PPO clip range; defaults to --eps-clip when unset.",
    "--entropy-coef": "Weight of the entropy bonus in the policy loss.",
    "--actor-num-nodes": "Nodes used by the Megatron training actor.",
    "--actor-num-gpus-per-node": "GPUs per node used by the Megatron training actor.",
    "--rollout-num-gpus": "Total GPUs for SGLang engines; with --colocate it defaults to the actor's GPU count.",
    "--rollout-num-gpus-per-engine": "GPUs per SGLang engine; slime derives the engine's tensor-parallel size from it.",
    "--colocate": "Put training and rollout on the same GPUs; also turns offloading on.",
    "--hf-checkpoint": "Hugging Face model directory: tokenizer, config, and the weights SGLang starts from.",
    "--ref-load": "Megatron checkpoint of the reference model; also the starting point when --load is unset.",
    "--load": "Megatron checkpoint directory to resume the actor from.",
    "--save": "Directory where Megatron checkpoints of the actor are written.",
    "--save-interval": "Save a checkpoint every this many rollout steps.",
    "--use-dynamic-batch-size": "Pack micro-batches by token count (see --max-tokens-per-gpu) instead of sample count.",
    "--max-tokens-per-gpu": "Token budget per GPU per micro-batch when dynamic batch size is on.",
    "--micro-batch-size": "Samples per micro-batch when dynamic batch size is off.",
    "--tensor-model-parallel-size": "Megatron tensor-parallel degree for training.",
    "--pipeline-model-parallel-size": "Megatron pipeline-parallel degree for training.",
    "--context-parallel-size": "Megatron context-parallel degree (splits long sequences across GPUs).",
    "--expert-model-parallel-size": "Megatron expert-parallel degree for MoE layers.",
    "--sequence-parallel": "Megatron sequence parallelism alongside tensor parallelism.",
    "--lr": "Actor learning rate (slime lowers Megatron's default to 1e-6).",
    "--update-weights-interval": "In train_async.py, push trained weights to the engines every this many rollouts.",
    "--custom-generate-function-path": "Import path of a function that replaces the per-sample generate step.",
    "--rollout-function-path": "Import path of the function that produces a whole rollout.",
    "--custom-rm-path": "Import path of a custom reward function.",
    "--rm-type": "Built-in reward to use (e.g. math, dapo, deepscaler, f1, remote_rm) when no custom one is given.",
    "--sglang-mem-fraction-static": "Share of GPU memory SGLang reserves for weights and KV cache.",
    "--use-tensorboard": "Log training and rollout metrics to TensorBoard.",
    "--use-wandb": "Log training and rollout metrics to Weights & Biases.",
    "--offload-train": "Move the training actor to CPU while rollout runs.",
    "--offload-rollout": "Move the SGLang engines' memory to CPU while training runs.",
    "--recompute-granularity": "Activation recomputation level in Megatron (full or selective).",
    "--optimizer": "Megatron optimizer: adam, sgd, muon or dist_muon.",
    "--seq-length": "Megatron sequence length; slime fills in 4096 when unset and trains on variable lengths.",
    "--train-backend": "Training backend (only megatron at this commit); read by slime's pre-parser.",
    "--debug-rollout-only": "Run rollout only, without Megatron training (pre-parser flag).",
    "--debug-train-only": "Run training only, without SGLang engines; skips the SGLang parser (pre-parser flag).",
}

_FLAG_PREFIX_CHARS = "-"


# ---------------------------------------------------------------------------------------------------
# Source files, with slime's Docker patches applied in memory
# ---------------------------------------------------------------------------------------------------


@dataclass
class SourceFile:
    """One parsed upstream file. Line numbers of the (patched) text map back to upstream citations."""

    dotted: str
    cite_path: str
    pin: str
    owner: str
    tree: ast.Module
    original_line: dict[int, int] | None = None
    added_lines: dict[int, str] = field(default_factory=dict)

    def cite(self, line: int) -> tuple[str, bool]:
        """The citation of a line, and whether that line was added by a patch."""
        if line in self.added_lines:
            return self.added_lines[line], True
        if self.original_line is not None:
            line = self.original_line.get(line, line)
        return f"{self.cite_path}:{line}@{self.pin}", False


@dataclass
class FilePatch:
    """The hunks one unified diff applies to one file."""

    patch_cite: str
    pin: str
    hunks: list[tuple[int, list[tuple[str, str, int]]]]  # (old start, [(kind, text, patch line)])


def parse_unified_diff(text: str, patch_cite: str, pin: str) -> dict[str, FilePatch]:
    """Split a git-style unified diff into per-file hunks keyed by the target path (b/...)."""
    out: dict[str, FilePatch] = {}
    current: FilePatch | None = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("+++ "):
            target = line[4:].strip()
            target = target[2:] if target.startswith("b/") else target
            current = out.setdefault(target, FilePatch(patch_cite=patch_cite, pin=pin, hunks=[]))
        elif line.startswith("@@ ") and current is not None:
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@", line)
            if not m:
                raise ValueError(f"{patch_cite}:{i + 1}: unreadable hunk header")
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(3)) if m.group(3) is not None else 1
            body: list[tuple[str, str, int]] = []
            i += 1
            while i < len(lines) and (old_left > 0 or new_left > 0):
                row = lines[i]
                if row.startswith("\\"):
                    i += 1
                    continue
                kind = row[0] if row and row[0] in "+- " else " "
                body.append((kind, row[1:], i + 1))
                old_left -= kind in " -"
                new_left -= kind in " +"
                i += 1
            current.hunks.append((int(m.group(1)), body))
            continue
        i += 1
    return out


def apply_patch(text: str, patch: FilePatch) -> tuple[str, dict[int, int], dict[int, str]]:
    """Apply hunks to text (searching near the stated position, as `patch` does).

    Returns the new text, a map new line -> original line for untouched lines, and a map new line ->
    patch citation for added lines. Raises ValueError when a hunk's context is not found.
    """
    old = text.split("\n")
    origin: list[int | str] = list(range(1, len(old) + 1))
    rows: list[str] = list(old)
    shift = 0
    for start, body in patch.hunks:
        before = [t for k, t, _ in body if k in " -"]
        guess = start - 1 + shift
        pos = _find_block(rows, before, guess)
        if pos is None:
            raise ValueError(f"hunk at line {start} of {patch.patch_cite} does not apply")
        new_rows: list[str] = []
        new_origin: list[int | str] = []
        j = pos
        for kind, row, patch_line in body:
            if kind == " ":
                new_rows.append(rows[j])
                new_origin.append(origin[j])
                j += 1
            elif kind == "-":
                j += 1
            else:
                new_rows.append(row)
                new_origin.append(f"{patch.patch_cite}:{patch_line}@{patch.pin}")
        rows[pos:j] = new_rows
        origin[pos:j] = new_origin
        shift += len(new_rows) - (j - pos)
    original_line = {n: o for n, o in enumerate(origin, start=1) if isinstance(o, int)}
    added = {n: o for n, o in enumerate(origin, start=1) if isinstance(o, str)}
    return "\n".join(rows), original_line, added


def _find_block(rows: list[str], block: list[str], guess: int) -> int | None:
    if not block:
        return max(0, min(guess, len(rows)))
    for delta in range(0, len(rows) + 1):
        for pos in (guess - delta, guess + delta):
            if 0 <= pos <= len(rows) - len(block) and rows[pos:pos + len(block)] == block:
                return pos
    return None


@dataclass
class PackageRoot:
    package: str
    directory: Path
    cite_prefix: str
    pin: str
    owner: str


class SourceTree:
    """Finds and parses modules of the four upstream packages by dotted name."""

    def __init__(self, roots: list[PackageRoot], patches: dict[str, list[FilePatch]] | None = None) -> None:
        self.roots = roots
        self.patches = patches or {}
        self._cache: dict[str, SourceFile | None] = {}
        self.patch_notes: list[str] = []
        self.bytes_read = 0

    def root_for(self, dotted: str) -> PackageRoot | None:
        head = dotted.split(".")[0]
        return next((r for r in self.roots if r.package == head), None)

    def module(self, dotted: str) -> SourceFile | None:
        if dotted in self._cache:
            return self._cache[dotted]
        self._cache[dotted] = None
        root = self.root_for(dotted)
        result = None
        if root is not None:
            rel = Path(*dotted.split("."))
            for candidate in (rel.with_suffix(".py"), rel / "__init__.py"):
                path = root.directory / candidate
                if path.is_file():
                    result = self._parse(dotted, root, candidate.as_posix(), path)
                    break
        self._cache[dotted] = result
        return result

    def _parse(self, dotted: str, root: PackageRoot, rel: str, path: Path) -> SourceFile:
        """Read and parse one file; CatalogError naming the file when it is too large, unreadable or not Python."""
        cite_path = f"{root.cite_prefix}{rel}"
        try:
            size = path.stat().st_size
            if size > MAX_SOURCE_BYTES:
                raise CatalogError(f"{cite_path} is {size:,} bytes; the static reader takes files of at most "
                                   f"{MAX_SOURCE_BYTES:,} bytes.")
            self.bytes_read += size
            if self.bytes_read > MAX_TREE_SOURCE_BYTES:
                raise CatalogError(f"reading {cite_path} takes the sources read past {MAX_TREE_SOURCE_BYTES:,} "
                                   "bytes, the static reader's limit for one build.")
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise CatalogError(f"{cite_path} cannot be read: {exc.strerror or exc}.") from None
        original_line: dict[int, int] | None = None
        added: dict[int, str] = {}
        for patch in self.patches.get(cite_path, []):
            try:
                text, original_line_step, added_step = apply_patch(text, patch)
            except ValueError as exc:
                self.patch_notes.append(str(exc))
                continue
            # compose with earlier patches
            if original_line is None:
                original_line = original_line_step
                added = added_step
            else:
                prev_orig, prev_added = original_line, added
                original_line, added = {}, dict(added_step)
                for new_line, mid_line in original_line_step.items():
                    if mid_line in prev_orig:
                        original_line[new_line] = prev_orig[mid_line]
                    elif mid_line in prev_added:
                        added[new_line] = prev_added[mid_line]
        try:
            tree = ast.parse(text, filename=cite_path)
        except SyntaxError as exc:  # also NUL bytes on Python 3.12+
            where = f"{cite_path}:{exc.lineno}" if exc.lineno else cite_path
            raise CatalogError(f"{where} is not valid Python ({exc.msg}).") from None
        except ValueError as exc:  # NUL bytes on Python 3.11
            raise CatalogError(f"{cite_path} is not valid Python ({exc}).") from None
        except (RecursionError, MemoryError):
            raise CatalogError(f"{cite_path} nests its code too deeply for the static reader to parse it.") from None
        return SourceFile(dotted=dotted, cite_path=cite_path, pin=root.pin, owner=root.owner, tree=tree,
                          original_line=original_line, added_lines=added)


# ---------------------------------------------------------------------------------------------------
# Values of the static interpreter
# ---------------------------------------------------------------------------------------------------


class Unresolved(Exception):
    """An expression whose value cannot be known without running upstream code."""


class BuildLimitExceeded(Exception):
    """The static reader ran past MAX_STEPS or MAX_BUILD_SECONDS; build_catalog turns it into CatalogError."""


@dataclass(frozen=True)
class Symbol:
    """A named thing we do not evaluate (a type, a function from another library, argparse.SUPPRESS)."""

    text: str


@dataclass(frozen=True)
class EnumMember:
    enum: str
    name: str


@dataclass
class Opaque:
    """An argument value that could not be evaluated; keeps its source text."""

    text: str


@dataclass
class FunctionRef:
    node: ast.FunctionDef
    module: SourceFile
    closure: dict[str, Any] | None = None
    owner_class: ClassRef | None = None


@dataclass
class ClassRef:
    node: ast.ClassDef
    module: SourceFile

    @property
    def qualname(self) -> str:
        return f"{self.module.dotted}.{self.node.name}"


@dataclass
class FieldCall:
    """A `dataclasses.field(...)` call: its evaluated keyword arguments."""

    kwargs: dict[str, Any]
    nodes: dict[str, ast.expr]


@dataclass
class FactoryValue:
    """Megatron's ArgumentGroupFactory(config_class, exclude=[...])."""

    cls: ClassRef
    exclude: set[str]
    line: int


@dataclass
class BoundAddArgument:
    """`parser.add_argument` saved in a variable (slime restores it after its sglang wrapper)."""

    parser: ParserModel


@dataclass
class RawFlag:
    names: list[str]
    kwargs: dict[str, Any]
    source: str
    patched: bool
    owner: str
    parser_key: str
    line: int
    notes: list[str] = field(default_factory=list)
    reset_source: str | None = None
    upstream_default: Any = None
    has_upstream_default: bool = False
    entry_point: str | None = None


@dataclass
class SglangWrapper:
    """slime's replacement of parser.add_argument while SGLang's ServerArgs registers its flags."""

    skip: set[str]
    flag_prefix: str
    dest_prefix: str
    source: str


@dataclass
class ParserModel:
    key: str
    source: str
    allow_abbrev: bool = True
    ignore_unknown: bool = False
    parse_source: str | None = None
    flags: list[RawFlag] = field(default_factory=list)
    wrapper: SglangWrapper | None = None
    skipped: list[tuple[list[str], str, str, str]] = field(default_factory=list)  # names, dest, source, prefixed

    def find_option(self, option: str) -> RawFlag | None:
        return next((f for f in self.flags if option in f.names), None)


@dataclass
class GroupRef:
    parser: ParserModel


UNKNOWN = object()
_BUILTIN_TYPES = {"int", "float", "str", "bool", "list", "dict", "tuple", "set", "bytes", "complex"}
_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "enum.Enum", "enum.IntEnum", "enum.StrEnum"}


# ---------------------------------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------------------------------


class ReturnSignal(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class Interpreter:
    """Walks argparse-building functions statement by statement, recording flags on ParserModels."""

    MAX_DEPTH = 30

    def __init__(self, tree: SourceTree, fallback: Catalog | None = None) -> None:
        self.tree = tree
        self.fallback = fallback
        self.parsers: list[ParserModel] = []
        self.conditions: list[str] = []
        self.function_stack: list[str] = []
        self.entry_point: str | None = None
        self.notes: list[str] = []
        self.steps = 0
        self.deadline = time.monotonic() + MAX_BUILD_SECONDS

    def tick(self) -> None:
        """Count one step; stop the build once it runs past MAX_STEPS or MAX_BUILD_SECONDS."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise BuildLimitExceeded(f"the static reader stopped after {MAX_STEPS:,} steps "
                                     "(a loop or recursion it cannot finish)")
        if time.monotonic() > self.deadline:
            raise BuildLimitExceeded(f"the static reader stopped after {MAX_BUILD_SECONDS:.0f} s")

    # -- name resolution ----------------------------------------------------------------------------
    def module_lookup(self, module: SourceFile, name: str, seen: frozenset = frozenset()) -> Any:
        key = (module.dotted, name)
        if key in seen:
            raise Unresolved(name)
        seen = seen | {key}
        for stmt in module.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return FunctionRef(stmt, module)
            if isinstance(stmt, ast.ClassDef) and stmt.name == name:
                return ClassRef(stmt, module)
        value: Any = None
        found = False
        for stmt in module.tree.body:  # the last top-level assignment wins
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        value, found = stmt.value, True
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                if stmt.value is not None:
                    value, found = stmt.value, True
        if found:
            return self.evaluate(value, {}, module, seen)
        for stmt in module.tree.body:
            if isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if (alias.asname or alias.name) == name:
                        return self.import_lookup(module, stmt, alias.name, seen)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if (alias.asname or alias.name.split(".")[0]) == name:
                        return Symbol(alias.name if alias.asname else alias.name.split(".")[0])
        if name in _BUILTIN_TYPES or name in {"None", "True", "False", "object"}:
            return Symbol(name)
        raise Unresolved(name)

    def import_lookup(self, module: SourceFile, stmt: ast.ImportFrom, name: str, seen: frozenset) -> Any:
        base = stmt.module or ""
        if stmt.level:
            parts = module.dotted.split(".")
            is_package = module.cite_path.endswith("__init__.py")
            keep = len(parts) - stmt.level + (1 if is_package else 0)
            base = ".".join(parts[:keep] + ([base] if base else []))
        target = self.tree.module(base)
        if target is None:
            sub = self.tree.module(f"{base}.{name}")
            if sub is not None:
                return Symbol(f"{base}.{name}")
            return Symbol(f"{base}.{name}" if base else name)
        try:
            return self.module_lookup(target, name, seen)
        except Unresolved:
            return Symbol(f"{base}.{name}")

    def lookup(self, name: str, env: dict[str, Any], module: SourceFile, seen: frozenset = frozenset()) -> Any:
        scope: dict[str, Any] | None = env
        while scope is not None:
            if name in scope:
                value = scope[name]
                if value is UNKNOWN:
                    raise Unresolved(name)
                return value
            scope = scope.get("__closure__")
        return self.module_lookup(module, name, seen)

    # -- expressions --------------------------------------------------------------------------------
    def evaluate(self, node: ast.expr, env: dict[str, Any], module: SourceFile, seen: frozenset = frozenset()) -> Any:
        """The static value of an expression; Unresolved when it needs running code or exceeds the size caps."""
        self.tick()
        try:
            return self._evaluate(node, env, module, seen)
        except CatalogError:
            raise
        except (TypeError, ValueError, ArithmeticError, LookupError) as exc:  # e.g. sorted() of mixed types
            raise Unresolved(_short_source(node)) from exc

    def _evaluate(self, node: ast.expr, env: dict[str, Any], module: SourceFile, seen: frozenset) -> Any:
        if isinstance(node, ast.Constant):
            return _bounded(node.value, node)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items: list[Any] = []
            for elt in node.elts:
                if isinstance(elt, ast.Starred):
                    items.extend(self.iterate(self.evaluate(elt.value, env, module, seen)))
                else:
                    items.append(self.evaluate(elt, env, module, seen))
                if len(items) > MAX_VALUE_SIZE:
                    raise Unresolved(f"{_short_source(node)} (too large)")
            return _bounded(tuple(items) if isinstance(node, ast.Tuple) else items, node)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    extra = self.evaluate(v, env, module, seen)
                    if not isinstance(extra, dict):
                        raise Unresolved(_short_source(v))
                    out.update(extra)
                else:
                    out[self.evaluate(k, env, module, seen)] = self.evaluate(v, env, module, seen)
                if len(out) > MAX_VALUE_SIZE:
                    raise Unresolved(f"{_short_source(node)} (too large)")
            return _bounded(out, node)
        if isinstance(node, ast.Name):
            return self.lookup(node.id, env, module, seen)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.evaluate(node.value, env, module, seen), node.attr)
        if isinstance(node, ast.UnaryOp):
            operand = self.evaluate(node.operand, env, module, seen)
            if isinstance(node.op, ast.Not):
                return not _truthy(operand)
            _require_plain(operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return +operand
            raise Unresolved(ast.unparse(node))
        if isinstance(node, ast.BinOp):
            left = self.evaluate(node.left, env, module, seen)
            right = self.evaluate(node.right, env, module, seen)
            _require_plain(left)
            _require_plain(right)
            ops: dict[type, Callable[[Any, Any], Any]] = {
                ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
                ast.Pow: lambda a, b: a ** b,
            }
            op = ops.get(type(node.op))
            if op is None or not _binop_within_limits(node.op, left, right):
                raise Unresolved(_short_source(node))
            try:
                result = op(left, right)
            except Exception as exc:  # noqa: BLE001 - any failure means "not statically known"
                raise Unresolved(_short_source(node)) from exc
            return _bounded(result, node)
        if isinstance(node, ast.BoolOp):
            values = [self.evaluate(v, env, module, seen) for v in node.values]
            if isinstance(node.op, ast.And):
                return all(_truthy(v) for v in values)
            return any(_truthy(v) for v in values)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self.evaluate(node.left, env, module, seen)
            right = self.evaluate(node.comparators[0], env, module, seen)
            op = node.ops[0]
            if isinstance(op, ast.Is):
                return left is right
            if isinstance(op, ast.IsNot):
                return left is not right
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.In):
                return left in right
            if isinstance(op, ast.NotIn):
                return left not in right
            raise Unresolved(ast.unparse(node))
        if isinstance(node, ast.IfExp):
            test = self.evaluate(node.test, env, module, seen)
            return self.evaluate(node.body if _truthy(test) else node.orelse, env, module, seen)
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            length = 0
            for value in node.values:
                if isinstance(value, ast.Constant):
                    part = str(value.value)
                elif isinstance(value, ast.FormattedValue):
                    inner = self.evaluate(value.value, env, module, seen)
                    _require_plain(inner)
                    part = str(inner)
                else:
                    continue
                parts.append(part)
                length += len(part)
                if length > MAX_VALUE_SIZE:
                    raise Unresolved(f"{_short_source(node)} (too large)")
            return "".join(parts)
        if isinstance(node, ast.Subscript):
            base = self.evaluate(node.value, env, module, seen)
            index = self.evaluate(node.slice, env, module, seen)
            _require_plain(base)
            try:
                return base[index]
            except Exception as exc:  # noqa: BLE001
                raise Unresolved(ast.unparse(node)) from exc
        if isinstance(node, ast.Call):
            return self.evaluate_call(node, env, module, seen)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            gen = node.generators[0]
            if not isinstance(gen.target, ast.Name) or gen.ifs:
                raise Unresolved(ast.unparse(node))
            iterable = self.iterate(self.evaluate(gen.iter, env, module, seen))
            return _bounded([self.evaluate(node.elt, {gen.target.id: item, "__closure__": env}, module, seen)
                             for item in iterable], node)
        if isinstance(node, ast.Lambda):
            raise Unresolved(ast.unparse(node))
        raise Unresolved(ast.unparse(node))

    def iterate(self, value: Any) -> list[Any]:
        if isinstance(value, ClassRef) and self.is_enum(value):
            return [EnumMember(value.node.name, n) for n in self.enum_members(value)]
        if isinstance(value, (list, tuple, set, dict, str)):
            return list(value)
        raise Unresolved("iteration")

    def attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, Symbol):
            return Symbol(f"{base.text}.{attr}")
        if isinstance(base, ClassRef):
            if self.is_enum(base) and attr in self.enum_members(base):
                return EnumMember(base.node.name, attr)
            for stmt in base.node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == attr:
                    return FunctionRef(stmt, base.module, owner_class=base)
            for f in self.dataclass_fields(base):
                if f.name == attr:
                    if f.default_node is None or f.factory_node is not None:
                        raise Unresolved(f"{base.node.name}.{attr}")
                    return self.evaluate(f.default_node, {}, f.module)
            for stmt in base.node.body:
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        if isinstance(target, ast.Name) and target.id == attr:
                            return self.evaluate(stmt.value, {}, base.module)
            raise Unresolved(f"{base.node.name}.{attr}")
        if isinstance(base, EnumMember):
            if attr == "name":
                return base.name
            raise Unresolved(f"{base.enum}.{base.name}.{attr}")
        if isinstance(base, ParserModel) or isinstance(base, GroupRef):
            return ("method", base, attr)
        if isinstance(base, FactoryValue):
            return ("method", base, attr)
        if isinstance(base, str) and attr in {"lower", "upper", "replace", "strip", "lstrip", "rstrip", "format"}:
            return ("strmethod", base, attr)
        if isinstance(base, dict) and attr in {"keys", "values", "items", "get"}:
            return ("dictmethod", base, attr)
        raise Unresolved(attr)

    def evaluate_call(self, node: ast.Call, env: dict[str, Any], module: SourceFile, seen: frozenset) -> Any:
        func = self.evaluate(node.func, env, module, seen)
        if isinstance(func, tuple) and func and func[0] == "strmethod":
            args = [self.evaluate(a, env, module, seen) for a in node.args]
            if not _str_method_within_limits(func[1], func[2], args):
                raise Unresolved(f"{_short_source(node)} (too large)")
            return _bounded(getattr(func[1], func[2])(*args), node)
        if isinstance(func, tuple) and func and func[0] == "dictmethod":
            args = [self.evaluate(a, env, module, seen) for a in node.args]
            result = getattr(func[1], func[2])(*args)
            return _bounded(list(result), node) if func[2] != "get" else result
        if isinstance(func, Symbol):
            name = func.text
            if name in {"field", "dataclasses.field"}:
                kwargs, nodes = {}, {}
                for kw in node.keywords:
                    if kw.arg is None:
                        continue
                    nodes[kw.arg] = kw.value
                    try:
                        kwargs[kw.arg] = self.evaluate(kw.value, env, module, seen)
                    except Unresolved:
                        kwargs[kw.arg] = Opaque(ast.unparse(kw.value))
                return FieldCall(kwargs, nodes)
            args = [self.evaluate(a, env, module, seen) for a in node.args]
            if name in {"list", "tuple", "sorted", "set"} and len(args) <= 1 and not node.keywords:
                items = self.iterate(args[0]) if args else []
                return _bounded({"list": list, "tuple": tuple, "sorted": sorted, "set": list}[name](items), node)
            if name == "dict" and not args:
                return _bounded({kw.arg: self.evaluate(kw.value, env, module, seen) for kw in node.keywords
                                 if kw.arg}, node)
            if name in {"int", "float", "str", "bool"} and len(args) == 1:
                try:
                    value = {"int": int, "float": float, "str": str, "bool": bool}[name](args[0])
                except (TypeError, ValueError) as exc:
                    raise Unresolved(ast.unparse(node)) from exc
                if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
                    raise Unresolved(ast.unparse(node))
                return _bounded(value, node)
        raise Unresolved(ast.unparse(node))

    # -- statements ---------------------------------------------------------------------------------
    def call_function(self, fn: FunctionRef, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if len(self.function_stack) >= self.MAX_DEPTH:
            return UNKNOWN
        env: dict[str, Any] = {"__closure__": fn.closure}
        params = fn.node.args
        positional = list(params.posonlyargs) + list(params.args)
        if fn.owner_class is not None and not _is_static(fn.node) and positional:
            positional = positional[1:]
        defaults = list(params.defaults)
        first_default = len(positional) - len(defaults)
        for index, param in enumerate(positional):
            if index < len(args):
                env[param.arg] = args[index]
            elif param.arg in kwargs:
                env[param.arg] = kwargs[param.arg]
            elif index >= first_default:
                env[param.arg] = self.safe_evaluate(defaults[index - first_default], {}, fn.module)
            else:
                env[param.arg] = UNKNOWN
        for param, default in zip(params.kwonlyargs, params.kw_defaults, strict=True):
            if param.arg in kwargs:
                env[param.arg] = kwargs[param.arg]
            elif default is not None:
                env[param.arg] = self.safe_evaluate(default, {}, fn.module)
            else:
                env[param.arg] = UNKNOWN
        self.function_stack.append(fn.node.name)
        try:
            self.run_block(fn.node.body, env, fn.module)
        except ReturnSignal as ret:
            return ret.value
        finally:
            self.function_stack.pop()
        return None

    def safe_evaluate(self, node: ast.expr, env: dict[str, Any], module: SourceFile) -> Any:
        try:
            return self.evaluate(node, env, module)
        except Unresolved:
            return UNKNOWN

    def run_block(self, body: list[ast.stmt], env: dict[str, Any], module: SourceFile) -> None:
        for stmt in body:
            self.run_statement(stmt, env, module)

    def run_statement(self, stmt: ast.stmt, env: dict[str, Any], module: SourceFile) -> None:
        self.tick()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env[stmt.name] = FunctionRef(stmt, module, closure=env)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.run_call(stmt.value, env, module)
        elif isinstance(stmt, ast.Assign):
            value = self.run_value(stmt.value, env, module)
            for target in stmt.targets:
                self.assign(target, value, env, module, stmt)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign(stmt.target, self.run_value(stmt.value, env, module), env, module, stmt)
        elif isinstance(stmt, ast.Return):
            raise ReturnSignal(self.run_value(stmt.value, env, module) if stmt.value is not None else None)
        elif isinstance(stmt, ast.If):
            self.run_if(stmt, env, module)
        elif isinstance(stmt, ast.Try):
            self.run_block(stmt.body, env, module)
            for handler in stmt.handlers:
                for name in _assigned_names(handler.body):
                    env[name] = UNKNOWN
            self.run_block(stmt.orelse, env, module)
            self.run_block(stmt.finalbody, env, module)
        elif isinstance(stmt, ast.For):
            try:
                items = self.iterate(self.evaluate(stmt.iter, env, module))
            except Unresolved:
                items = None
            if items is not None and isinstance(stmt.target, ast.Name):
                for item in items:
                    env[stmt.target.id] = item
                    self.run_block(stmt.body, env, module)
            elif _calls_add_argument(stmt):
                self.conditions.append(f"inside a loop over {ast.unparse(stmt.iter)}")
                try:
                    self.run_block(stmt.body, env, module)
                finally:
                    self.conditions.pop()
        elif isinstance(stmt, ast.With):
            self.run_block(stmt.body, env, module)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                env[alias.asname or alias.name] = self.import_lookup(module, stmt, alias.name, frozenset())
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                env[alias.asname or alias.name.split(".")[0]] = Symbol(alias.name)

    def run_if(self, stmt: ast.If, env: dict[str, Any], module: SourceFile) -> None:
        try:
            test = self.evaluate(stmt.test, env, module)
            known = not isinstance(test, (Symbol, Opaque, FunctionRef, ClassRef))
        except Unresolved:
            known = False
        if known:
            self.run_block(stmt.body if _truthy(test) else stmt.orelse, env, module)
            return
        text = ast.unparse(stmt.test)
        for branch, label in ((stmt.body, f"only when `{text}`"), (stmt.orelse, f"only when not `{text}`")):
            if not branch:
                continue
            self.conditions.append(label)
            try:
                self.run_block(branch, env, module)
            except ReturnSignal:
                pass
            finally:
                self.conditions.pop()

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any], module: SourceFile, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, ParserModel) and value.key.startswith("?"):
                fn_name = self.function_stack[-1] if self.function_stack else ""
                value.key = PARSER_KEYS.get((fn_name, target.id), f"{fn_name}:{target.id}")
                for flag in value.flags:
                    flag.parser_key = value.key
            env[target.id] = value
        elif isinstance(target, ast.Tuple):
            for elt in target.elts:
                if isinstance(elt, ast.Name):
                    env[elt.id] = UNKNOWN
        elif isinstance(target, ast.Attribute) and target.attr == "add_argument":
            parser = self.safe_evaluate(target.value, env, module)
            if isinstance(parser, ParserModel):
                if isinstance(value, FunctionRef):
                    parser.wrapper = self.read_sglang_wrapper(value, env, module)
                elif isinstance(value, BoundAddArgument):
                    parser.wrapper = None

    def run_value(self, node: ast.expr, env: dict[str, Any], module: SourceFile) -> Any:
        if isinstance(node, ast.Call):
            return self.run_call(node, env, module)
        if isinstance(node, ast.Attribute) and node.attr == "add_argument":
            parser = self.safe_evaluate(node.value, env, module)
            if isinstance(parser, ParserModel):
                return BoundAddArgument(parser)
        return self.safe_evaluate(node, env, module)

    def run_call(self, node: ast.Call, env: dict[str, Any], module: SourceFile) -> Any:
        try:
            func = self.evaluate(node.func, env, module)
        except Unresolved:
            func = None
        if func is None and isinstance(node.func, ast.Attribute):
            text = ast.unparse(node.func)
            if text.endswith("ServerArgs.add_cli_args") or text.endswith("RouterArgs.add_cli_args"):
                func = Symbol(text)
        if isinstance(func, tuple) and func and func[0] == "method":
            return self.run_method(func[1], func[2], node, env, module)
        if isinstance(func, Symbol):
            if func.text in {"argparse.ArgumentParser", "ArgumentParser"}:
                return self.new_parser(node, env, module)
            if func.text.endswith(("ServerArgs.add_cli_args", "RouterArgs.add_cli_args")):
                return self.fallback_flags(func.text, node, env, module)
            try:
                return self.evaluate_call(node, env, module, frozenset())
            except Unresolved:
                return UNKNOWN
        if isinstance(func, ClassRef):
            if func.qualname.endswith("argument_utils.ArgumentGroupFactory"):
                args = [self.safe_evaluate(a, env, module) for a in node.args]
                kwargs = {kw.arg: self.safe_evaluate(kw.value, env, module) for kw in node.keywords if kw.arg}
                cls = args[0] if args else kwargs.get("src_cfg_class")
                exclude = args[1] if len(args) > 1 else kwargs.get("exclude")
                if isinstance(cls, ClassRef):
                    return FactoryValue(cls, set(exclude or []) if isinstance(exclude, (list, tuple)) else set(),
                                        node.lineno)
            return UNKNOWN
        if isinstance(func, FunctionRef):
            qual = f"{func.module.dotted}.{func.node.name}"
            args = [self.run_value(a, env, module) if isinstance(a, ast.Call) else self.safe_evaluate(a, env, module)
                    for a in node.args]
            kwargs = {kw.arg: self.safe_evaluate(kw.value, env, module) for kw in node.keywords if kw.arg}
            if qual == "slime.utils.arguments.reset_arg" or (func.node.name == "reset_arg" and func.closure is None
                                                            and func.module.dotted.startswith("slime")):
                return self.reset_arg(node, env, module)
            if func.node.name == "add_cli_args_from_dataclass" and "arg_groups" in func.module.dotted:
                return self.sglang_dataclass_flags(args, kwargs, node, module)
            relevant = any(isinstance(v, (ParserModel, GroupRef, FunctionRef)) for v in [*args, *kwargs.values()])
            if relevant or (func.closure is not None and not args and not kwargs):
                return self.call_function(func, args, kwargs)
            return UNKNOWN
        return UNKNOWN

    # -- argparse emulation -------------------------------------------------------------------------
    def new_parser(self, node: ast.Call, env: dict[str, Any], module: SourceFile) -> ParserModel:
        kwargs = {kw.arg: self.safe_evaluate(kw.value, env, module) for kw in node.keywords if kw.arg}
        source, _ = module.cite(node.lineno)
        allow_abbrev = kwargs.get("allow_abbrev", True)
        parser = ParserModel(key="?", source=source, allow_abbrev=allow_abbrev is not False)
        self.parsers.append(parser)
        if kwargs.get("add_help", True) is not False:
            self.add_flag(parser, ["-h", "--help"], {"action": "help"}, node, module, owner=module.owner,
                          notes=["added by argparse itself (add_help is on)"])
        return parser

    def run_method(self, target: Any, method: str, node: ast.Call, env: dict[str, Any], module: SourceFile) -> Any:
        if isinstance(target, FactoryValue):
            if method == "build_group":
                parser = self.safe_evaluate(node.args[0], env, module) if node.args else None
                parser = parser.parser if isinstance(parser, GroupRef) else parser
                if isinstance(parser, ParserModel):
                    self.megatron_dataclass_flags(parser, target, module)
                    return GroupRef(parser)
            return UNKNOWN
        parser = target.parser if isinstance(target, GroupRef) else target
        if method == "add_argument":
            names = []
            for arg in node.args:
                value = self.safe_evaluate(arg, env, module)
                if not isinstance(value, str):
                    self.notes.append(f"{module.cite(node.lineno)[0]}: option name not evaluable")
                    return None
                names.append(value)
            kwargs = self.evaluate_kwargs(node, env, module)
            self.add_flag(parser, names, kwargs, node, module, owner=module.owner)
            return None
        if method in {"add_argument_group", "add_mutually_exclusive_group"}:
            return GroupRef(parser)
        if method == "set_defaults":
            kwargs = self.evaluate_kwargs(node, env, module)
            source, _ = module.cite(node.lineno)
            for dest, value in kwargs.items():
                for flag in parser.flags:
                    if _dest_of(flag.names, flag.kwargs) == dest:
                        _reset_default(flag, value, source)
            return None
        if method in {"parse_known_args", "parse_args"}:
            parser.ignore_unknown = method == "parse_known_args"
            parser.parse_source = module.cite(node.lineno)[0]
            return UNKNOWN
        return UNKNOWN

    def evaluate_kwargs(self, node: ast.Call, env: dict[str, Any], module: SourceFile) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                value = self.safe_evaluate(kw.value, env, module)
                if isinstance(value, dict):
                    kwargs.update(value)
                continue
            try:
                kwargs[kw.arg] = self.evaluate(kw.value, env, module)
            except Unresolved:
                kwargs[kw.arg] = Opaque(ast.unparse(kw.value))
        return kwargs

    def add_flag(self, parser: ParserModel, names: list[str], kwargs: dict[str, Any], node: ast.AST,
                 module: SourceFile, owner: str, notes: list[str] | None = None, line: int | None = None) -> None:
        line = line or getattr(node, "lineno", 0)
        source, patched = module.cite(line)
        notes = list(notes or []) + list(self.conditions)
        if parser.wrapper is not None:
            wrapper = parser.wrapper
            dest = kwargs.get("dest")
            canonical = dest if "dest" in kwargs else next(
                (n[2:].replace("-", "_") for n in names if n.startswith("--")), None)
            renamed = [f"{wrapper.flag_prefix}{n.lstrip('-')}" if n.startswith("-") else n for n in names]
            if isinstance(canonical, str) and canonical in wrapper.skip:
                parser.skipped.append((names, canonical, source, renamed[0] if renamed else ""))
                return
            names = renamed
            kwargs = dict(kwargs)
            if isinstance(kwargs.get("dest"), str) and not kwargs["dest"].startswith(wrapper.dest_prefix):
                kwargs["dest"] = f"{wrapper.dest_prefix}{kwargs['dest']}"
        parser.flags.append(RawFlag(names=names, kwargs=kwargs, source=source, patched=patched, owner=owner,
                                    parser_key=parser.key, line=line, notes=notes, entry_point=self.entry_point))

    def reset_arg(self, node: ast.Call, env: dict[str, Any], module: SourceFile) -> None:
        """slime's reset_arg: change the default of an existing flag, or add the flag when it is missing."""
        args = [self.safe_evaluate(a, env, module) for a in node.args]
        parser = args[0] if args else None
        parser = parser.parser if isinstance(parser, GroupRef) else parser
        name = args[1] if len(args) > 1 else None
        if not isinstance(parser, ParserModel) or not isinstance(name, str):
            return None
        kwargs = self.evaluate_kwargs(node, env, module)
        source, _ = module.cite(node.lineno)
        existing = parser.find_option(name)
        if existing is None:
            self.add_flag(parser, [name], kwargs, node, module, owner=module.owner,
                          notes=["registered through slime's reset_arg because Megatron does not define it"])
        elif "default" in kwargs:
            _reset_default(existing, kwargs["default"], source)
        else:
            existing.notes.append(f"slime calls reset_arg on it without a default, which changes nothing ({source})")
        return None

    def read_sglang_wrapper(self, fn: FunctionRef, env: dict[str, Any], module: SourceFile) -> SglangWrapper:
        """Read the skip list and the prefixes from slime's replacement for parser.add_argument."""
        skip: set[str] = set()
        for sub in ast.walk(fn.node):
            if isinstance(sub, ast.Compare) and any(isinstance(op, ast.In) for op in sub.ops):
                for comp in sub.comparators:
                    value = self.safe_evaluate(comp, env, module)
                    if isinstance(value, (list, tuple, set)) and all(isinstance(v, str) for v in value):
                        skip.update(value)
        flag_prefix, dest_prefix = "--sglang-", "sglang_"
        for sub in ast.walk(fn.node):
            if isinstance(sub, ast.JoinedStr) and sub.values and isinstance(sub.values[0], ast.Constant):
                head = str(sub.values[0].value)
                if head.startswith("--"):
                    flag_prefix = head
                elif head.endswith("_"):
                    dest_prefix = head
        source, _ = module.cite(fn.node.lineno)
        return SglangWrapper(skip=skip, flag_prefix=flag_prefix, dest_prefix=dest_prefix, source=source)

    def fallback_flags(self, text: str, node: ast.Call, env: dict[str, Any], module: SourceFile) -> None:
        """SGLang or the router was not given: reuse their flags from the committed catalog."""
        if self.fallback is None or not node.args:
            return None
        parser = self.safe_evaluate(node.args[0], env, module)
        parser = parser.parser if isinstance(parser, GroupRef) else parser
        if not isinstance(parser, ParserModel):
            return None
        owner = "sglang" if text.endswith("ServerArgs.add_cli_args") else "router"
        for spec in self.fallback.flags:
            if spec.owner == owner and "sglang" in spec.parsers:
                parser.flags.append(raw_from_spec(spec, parser.key))
        if owner == "sglang":
            for skipped in self.fallback.skipped:
                parser.skipped.append((skipped.upstream_option_strings, skipped.dest, skipped.source,
                                       skipped.option_strings[0]))
            parser.wrapper = None
        return None

    # -- flags generated from dataclasses -----------------------------------------------------------
    def dataclass_fields(self, cls: ClassRef, seen: frozenset = frozenset()) -> list[DataclassField]:
        if cls.qualname in seen:
            return []
        seen = seen | {cls.qualname}
        ordered: dict[str, DataclassField] = {}
        for base in cls.node.bases:
            try:
                base_value = self.evaluate(base, {}, cls.module)
            except Unresolved:
                continue
            if isinstance(base_value, ClassRef):
                for f in self.dataclass_fields(base_value, seen):
                    ordered[f.name] = f
        for stmt in cls.node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            annotation = stmt.annotation
            if _annotation_head(annotation) in {"ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar"}:
                continue
            name = stmt.target.id
            default_node, factory_node, metadata_node, init = stmt.value, None, None, True
            if isinstance(stmt.value, ast.Call) and ast.unparse(stmt.value.func) in {"field", "dataclasses.field"}:
                kw = {k.arg: k.value for k in stmt.value.keywords if k.arg}
                default_node = kw.get("default")
                factory_node = kw.get("default_factory")
                metadata_node = kw.get("metadata")
                if "init" in kw and isinstance(kw["init"], ast.Constant) and kw["init"].value is False:
                    init = False
            previous = ordered.get(name)
            entry = DataclassField(name=name, annotation=annotation, default_node=default_node,
                                   factory_node=factory_node, metadata_node=metadata_node, init=init,
                                   module=cls.module, line=stmt.lineno)
            if previous is not None and previous.module is cls.module and previous.line != stmt.lineno:
                entry.notes.append(f"declared twice in {cls.node.name} (lines {cls.module.cite(previous.line)[0]} "
                                   f"and {cls.module.cite(stmt.lineno)[0]}); the later declaration wins")
            ordered[name] = entry
        return list(ordered.values())

    def field_default(self, f: DataclassField) -> Any:
        """The field's default value, Opaque when not static, or MISSING when it has none."""
        if f.factory_node is not None:
            node = f.factory_node
            if isinstance(node, ast.Name) and node.id in {"list", "dict", "set", "tuple"}:
                return {"list": [], "dict": {}, "set": [], "tuple": ()}[node.id]
            if isinstance(node, ast.Lambda):
                try:
                    return self.evaluate(node.body, {}, f.module)
                except Unresolved:
                    return Opaque(ast.unparse(node.body))
            return Opaque(f"{ast.unparse(node)}()")
        if f.default_node is None:
            return MISSING
        try:
            return self.evaluate(f.default_node, {}, f.module)
        except Unresolved:
            return Opaque(ast.unparse(f.default_node))

    def is_enum(self, cls: ClassRef) -> bool:
        for base in cls.node.bases:
            text = ast.unparse(base)
            if text in _ENUM_BASES or text.split(".")[-1] in {"Enum", "IntEnum", "StrEnum"}:
                return True
        return False

    def enum_members(self, cls: ClassRef) -> list[str]:
        names = []
        for stmt in cls.node.body:
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name) and not target.id.startswith("_"):
                        names.append(target.id)
        return names

    def megatron_dataclass_flags(self, parser: ParserModel, factory: FactoryValue, module: SourceFile) -> None:
        """Megatron's ArgumentGroupFactory: one flag per init field of a config dataclass.

        Rule (megatron/training/argument_utils.py@1dcf0daf): the flag is --<field-name>; Optional[X] uses X,
        list[X] adds nargs '+', Literal gives choices, an Enum gives its member names as choices; a bool
        field becomes store_true when its default is False and otherwise store_false spelled --no-<name>
        and --disable-<name>; metadata["argparse_meta"] overrides everything, including the names.
        """
        cls_name = factory.cls.node.name
        build_source = module.cite(factory.line)[0]
        for f in self.dataclass_fields(factory.cls):
            if f.name in factory.exclude or not f.init:
                continue
            default = self.field_default(f)
            kwargs: dict[str, Any] = {"dest": f.name, "default": None if default is MISSING else default}
            names = [_format_flag(f.name)]
            notes = [f"generated from {cls_name}.{f.name} by Megatron's ArgumentGroupFactory ({build_source})",
                     *f.notes]
            meta = self.argparse_meta(f)
            try:
                kwargs.update(self.megatron_type(f.annotation, f.module))
                if kwargs.get("type") == Symbol("bool"):
                    kwargs.pop("type")
                    is_false = not isinstance(default, Opaque) and default is not MISSING and default == False  # noqa: E712
                    kwargs["action"] = "store_true" if is_false else "store_false"
                    if kwargs["action"] == "store_false":
                        names = [_format_flag(f"no_{f.name}"), _format_flag(f"disable_{f.name}")]
            except Unresolved as exc:
                if meta is None:
                    notes.append(f"Megatron cannot infer an argparse type for this field ({exc}); "
                                 "registering it would fail")
            if meta is not None:
                meta = dict(meta)
                names = list(meta.pop("arg_names", names))
                kwargs.update(meta)
            self.add_flag(parser, names, kwargs, None, f.module, owner=f.module.owner, notes=notes, line=f.line)

    def argparse_meta(self, f: DataclassField) -> dict[str, Any] | None:
        if f.metadata_node is None:
            return None
        try:
            meta = self.evaluate(f.metadata_node, {}, f.module)
        except Unresolved:
            return None
        if isinstance(meta, dict) and isinstance(meta.get("argparse_meta"), dict):
            return meta["argparse_meta"]
        return None

    def megatron_type(self, annotation: ast.expr, module: SourceFile) -> dict[str, Any]:
        members = _union_members(annotation)
        if members is not None:
            if len(members) >= 2 and _is_none(members[1]):
                return self.megatron_type(members[0], module)
            raise Unresolved(f"union {ast.unparse(annotation)}")
        head = _annotation_head(annotation)
        if isinstance(annotation, ast.Subscript):
            args = _subscript_args(annotation)
            if head in {"Optional", "typing.Optional"}:
                return self.megatron_type(args[0], module)
            if head in {"list", "List", "typing.List"}:
                if len(args) != 1:
                    raise Unresolved(f"multi-type list {ast.unparse(annotation)}")
                inner = self.megatron_type(args[0], module)
                inner["nargs"] = "+"
                return inner
            if head in {"Literal", "typing.Literal"}:
                values = [self.evaluate(a, {}, module) for a in args]
                return {"type": Symbol(type(values[0]).__name__) if values else Symbol("str"), "choices": values}
            raise Unresolved(f"unsupported type {ast.unparse(annotation)}")
        try:
            value = self.evaluate(annotation, {}, module)
        except Unresolved:
            value = Symbol(ast.unparse(annotation))
        if isinstance(value, ClassRef) and self.is_enum(value):
            return {"type": Symbol(value.node.name), "choices": [EnumMember(value.node.name, n)
                                                                 for n in self.enum_members(value)]}
        if isinstance(value, ClassRef):
            return {"type": Symbol(value.node.name)}
        if isinstance(value, Symbol):
            return {"type": Symbol(value.text)}
        return {"type": Symbol(ast.unparse(annotation))}

    def sglang_dataclass_flags(self, args: list[Any], kwargs: dict[str, Any], node: ast.Call,
                               module: SourceFile) -> None:
        """SGLang's add_cli_args_from_dataclass: one flag per field annotated A[T, "help" | Arg(...)].

        Rule (python/sglang/srt/arg_groups/arg_utils.py@v0.5.15.post1): --<field-name> (or Arg.cli_name)
        plus Arg.aliases; dest is the field name; a custom Arg.action is used as given; Optional[X] uses X;
        Literal gives choices; List[X] gets nargs '+' (or Arg.nargs) unless a type_parser is set; bool
        becomes store_true whatever its default; other types take Arg.type_parser or str/int/float; a field
        with no default is required. Fields without Arg metadata, or with no_cli, get no flag.
        """
        parser = args[0] if args else kwargs.get("parser")
        parser = parser.parser if isinstance(parser, GroupRef) else parser
        cls = args[1] if len(args) > 1 else kwargs.get("cls")
        if not isinstance(parser, ParserModel) or not isinstance(cls, ClassRef):
            return None
        for f in self.dataclass_fields(cls):
            meta = self.sglang_arg_meta(f)
            if meta is None or meta.get("no_cli") is True:
                continue
            cli_name = meta.get("cli_name") or _format_flag(f.name)
            names = [cli_name, *(meta.get("aliases") or [])]
            default = self.field_default(f)
            auto_dest = cli_name.lstrip("-").replace("-", "_")
            flag_kwargs: dict[str, Any] = {"dest": f.name} if f.name != auto_dest else {}
            if default is not MISSING:
                flag_kwargs["default"] = default
            inner = _sglang_inner_type(f.annotation)
            if meta.get("action") is not None:
                flag_kwargs["action"] = meta["action"]
                flag_kwargs.update(meta.get("action_kwargs") or {})
            else:
                stripped = _strip_optional(inner)
                head = _annotation_head(stripped)
                if head in {"Literal", "typing.Literal"}:
                    values = [self.safe_evaluate(a, {}, f.module) for a in _subscript_args(stripped)]
                    flag_kwargs["choices"] = meta.get("choices") or values
                    flag_kwargs["type"] = meta.get("type_parser") or _sglang_scalar(
                        Symbol(type(values[0]).__name__) if values else Symbol("str"))
                    if meta.get("const") is not None:
                        flag_kwargs["const"] = meta["const"]
                elif head in {"List", "list", "typing.List"} and meta.get("type_parser") is None:
                    elem = _subscript_args(stripped)
                    flag_kwargs["type"] = _sglang_scalar(self.safe_evaluate(elem[0], {}, f.module) if elem else None)
                    flag_kwargs["nargs"] = meta.get("nargs") or "+"
                    if meta.get("choices"):
                        flag_kwargs["choices"] = meta["choices"]
                    if meta.get("const") is not None:
                        flag_kwargs["const"] = meta["const"]
                elif isinstance(stripped, ast.Name) and stripped.id == "bool":
                    flag_kwargs["action"] = "store_true"
                else:
                    scalar = self.safe_evaluate(stripped, {}, f.module) if isinstance(stripped, ast.Name) else None
                    flag_kwargs["type"] = meta.get("type_parser") or _sglang_scalar(scalar)
                    if meta.get("choices"):
                        flag_kwargs["choices"] = meta["choices"]
                    if meta.get("nargs"):
                        flag_kwargs["nargs"] = meta["nargs"]
                    if meta.get("const") is not None:
                        flag_kwargs["const"] = meta["const"]
                    required = meta.get("required")
                    if required is True or (required is None and default is MISSING):
                        flag_kwargs["required"] = True
            self.add_flag(parser, names, flag_kwargs, None, f.module, owner=f.module.owner,
                          notes=list(f.notes), line=f.line)
        return None

    def sglang_arg_meta(self, f: DataclassField) -> dict[str, Any] | None:
        annotation = f.annotation
        if not (isinstance(annotation, ast.Subscript) and _annotation_head(annotation) in {"A", "Annotated",
                                                                                          "typing.Annotated"}):
            return None
        for extra in _subscript_args(annotation)[1:]:
            if isinstance(extra, ast.JoinedStr):
                return {}
            if not isinstance(extra, ast.Call):
                try:
                    help_text = self.evaluate(extra, {}, f.module)
                except Unresolved:
                    continue
                if isinstance(help_text, str):
                    return {}
                continue
            if ast.unparse(extra.func).split(".")[-1] == "Arg":
                meta: dict[str, Any] = {}
                for kw in extra.keywords:
                    if kw.arg is None or kw.arg == "help":
                        continue
                    try:
                        meta[kw.arg] = self.evaluate(kw.value, {}, f.module)
                    except Unresolved:
                        meta[kw.arg] = Opaque(ast.unparse(kw.value))
                return meta
        return None

    def action_init_default(self, action: Any, param_name: str) -> Any:
        """A keyword default of a custom argparse.Action subclass's __init__ (e.g. nargs=0), if any."""
        if not isinstance(action, ClassRef):
            return None
        for stmt in action.node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                params = stmt.args
                positional = list(params.args)
                for param, default in zip(positional[len(positional) - len(params.defaults):], params.defaults, strict=True):
                    if param.arg == param_name:
                        return self.safe_evaluate(default, {}, action.module)
                for param, default in zip(params.kwonlyargs, params.kw_defaults, strict=True):
                    if param.arg == param_name and default is not None:
                        return self.safe_evaluate(default, {}, action.module)
        return None


MISSING = Symbol("<missing>")


@dataclass
class DataclassField:
    name: str
    annotation: ast.expr
    default_node: ast.expr | None
    factory_node: ast.expr | None
    metadata_node: ast.expr | None
    init: bool
    module: SourceFile
    line: int
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------


def _truthy(value: Any) -> bool:
    if isinstance(value, (Symbol, Opaque, FunctionRef, ClassRef, ParserModel)) or value is UNKNOWN:
        raise Unresolved("truth of a non-static value")
    return bool(value)


def _require_plain(value: Any) -> None:
    if isinstance(value, (Symbol, Opaque, FunctionRef, ClassRef, ParserModel, GroupRef, EnumMember)) or value is UNKNOWN:
        raise Unresolved("arithmetic on a non-static value")


def _short_source(node: ast.AST, limit: int = 120) -> str:
    """The node's source text, cut short for messages."""
    text = ast.unparse(node)
    return text if len(text) <= limit else f"{text[:limit]}..."


def value_size(value: Any, limit: int = MAX_VALUE_SIZE) -> int:
    """Characters plus items in a plain value (an integer counts 1), counted only up to just past `limit`.

    An integer wider than MAX_INT_BITS counts as over the limit. Shared references are counted each time,
    so `["x" * 1000] * 1000` weighs a million: that is what printing or comparing it would cost.
    """
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        total += 1
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if item.bit_length() > MAX_INT_BITS:
                return limit + 1
        elif isinstance(item, (list, tuple, set, frozenset)):
            if total + len(item) > limit:
                return limit + 1
            stack.extend(item)
        elif isinstance(item, dict):
            if total + 2 * len(item) > limit:
                return limit + 1
            stack.extend(item.keys())
            stack.extend(item.values())
        if total > limit:
            return limit + 1
    return total


def _bounded(value: Any, node: ast.AST) -> Any:
    """The value itself, or Unresolved when it is larger than MAX_VALUE_SIZE / MAX_INT_BITS."""
    if value_size(value) > MAX_VALUE_SIZE:
        raise Unresolved(f"{_short_source(node)} (too large to evaluate statically)")
    return value


def _binop_within_limits(op: ast.operator, left: Any, right: Any) -> bool:
    """Whether computing `left op right` stays cheap: checked before the operation runs, by its result size."""
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0:
        return abs(left) <= 1 or (abs(left).bit_length() - 1) * right <= MAX_INT_BITS
    if isinstance(op, ast.Mult):
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(count, int):
                return len(seq) * max(count, 0) <= MAX_VALUE_SIZE
    if isinstance(op, ast.Mod) and isinstance(left, str):
        return _printf_widths_ok(left)
    return True


_PRINTF_FIELD = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?")


def _printf_widths_ok(text: str) -> bool:
    """No `*` or oversized width/precision in a %-format string (they would pad without limit)."""
    for m in _PRINTF_FIELD.finditer(text.replace("%%", "")):
        for part in m.groups():
            if part is not None and (part == "*" or _too_wide(part)):
                return False
    return True


def _too_wide(digits: str) -> bool:
    return len(digits) > len(str(MAX_FORMAT_WIDTH)) or int(digits) > MAX_FORMAT_WIDTH


def _str_method_within_limits(base: str, method: str, args: list[Any]) -> bool:
    """Whether a str.replace / str.format call stays within MAX_VALUE_SIZE, checked before it runs."""
    if method == "replace":
        if len(args) < 2 or not all(isinstance(a, str) for a in args[:2]):
            return True  # argument errors are reported by the call itself
        old, new = args[0], args[1]
        hits = base.count(old) if old else len(base) + 1
        return len(base) + hits * len(new) <= MAX_VALUE_SIZE
    if method == "format":
        for arg in args:
            _require_plain(arg)
        widest = max((len(str(a)) for a in args), default=0)
        fields = 0
        for _literal, name, spec, _conversion in string.Formatter().parse(base):
            if name is None:
                continue
            fields += 1
            if any(c in name for c in ".[") or "{" in (spec or "") or any(
                    _too_wide(n) for n in re.findall(r"\d+", spec or "")):
                return False
        return len(base) + fields * (widest + MAX_FORMAT_WIDTH) <= MAX_VALUE_SIZE
    return True


def _is_static(fn: ast.FunctionDef) -> bool:
    return any(ast.unparse(d) == "staticmethod" for d in fn.decorator_list)


def _assigned_names(body: list[ast.stmt]) -> Iterator[str]:
    for stmt in body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                yield sub.id


def _calls_add_argument(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
               for n in ast.walk(stmt))


def _format_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _annotation_head(annotation: ast.expr) -> str:
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return ast.unparse(node)


def _subscript_args(annotation: ast.expr) -> list[ast.expr]:
    if not isinstance(annotation, ast.Subscript):
        return []
    inner = annotation.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def _is_none(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or ast.unparse(node) in {"None", "type(None)"}


def _union_members(annotation: ast.expr) -> list[ast.expr] | None:
    """Members of X | Y | ... or Union[X, Y, ...] in order; None when the annotation is not a union."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        left = _union_members(annotation.left) or [annotation.left]
        return [*left, annotation.right]
    if isinstance(annotation, ast.Subscript) and _annotation_head(annotation) in {"Union", "typing.Union"}:
        return _subscript_args(annotation)
    return None


def _sglang_inner_type(annotation: ast.expr) -> ast.expr:
    args = _subscript_args(annotation)
    return args[0] if args else annotation


def _strip_optional(annotation: ast.expr) -> ast.expr:
    """SGLang's _unwrap_optional: Optional[X] / Union[X, None] / X | None with exactly one non-None member."""
    if isinstance(annotation, ast.Subscript) and _annotation_head(annotation) in {"Optional", "typing.Optional"}:
        return _subscript_args(annotation)[0]
    members = _union_members(annotation)
    if members is not None:
        rest = [m for m in members if not _is_none(m)]
        if len(rest) == 1 and len(members) > 1:
            return rest[0]
    return annotation


def _sglang_scalar(value: Any) -> Symbol:
    """SGLang's _infer_type_func: str, int and float map to themselves, anything else to str."""
    if isinstance(value, Symbol) and value.text in {"int", "float", "str"}:
        return value
    return Symbol("str")


def _dest_of(names: list[str], kwargs: dict[str, Any]) -> str:
    dest = kwargs.get("dest")
    if isinstance(dest, str):
        return dest
    long = next((n for n in names if n.startswith("--")), None)
    chosen = long or (names[0] if names else "")
    return chosen.lstrip(_FLAG_PREFIX_CHARS).replace("-", "_")


def _reset_default(flag: RawFlag, value: Any, source: str) -> None:
    if not flag.has_upstream_default:
        flag.upstream_default = flag.kwargs.get("default", _IMPLICIT)
        flag.has_upstream_default = True
    flag.kwargs = dict(flag.kwargs)
    flag.kwargs["default"] = value
    flag.reset_source = source


_IMPLICIT = Symbol("<argparse default>")


def raw_from_spec(spec: FlagSpec, parser_key: str) -> RawFlag:
    """Rebuild a recorded flag from a committed catalog entry (with slime's default changes undone)."""
    kwargs: dict[str, Any] = {"dest": spec.dest, "action": spec.action}
    if spec.reset_source and spec.upstream_default_known:
        kwargs["default"] = spec.upstream_default
    elif spec.default_repr is not None:
        kwargs["default"] = Opaque(spec.default_repr)
    else:
        kwargs["default"] = spec.default
    if spec.type is not None:
        kwargs["type"] = Symbol(spec.type)
    if spec.choices is not None:
        kwargs["choices"] = spec.choices
    if spec.nargs is not None:
        kwargs["nargs"] = spec.nargs
    if spec.required:
        kwargs["required"] = True
    notes = [n for n in spec.notes if not n.startswith("slime sets the default")]
    return RawFlag(names=list(spec.option_strings), kwargs=kwargs, source=spec.source, patched=spec.patched,
                   owner=spec.owner, parser_key=parser_key, line=0, notes=notes, entry_point=spec.entry_point)


# ---------------------------------------------------------------------------------------------------
# From recorded flags to catalog entries
# ---------------------------------------------------------------------------------------------------


def to_json_value(value: Any) -> Any:
    """A JSON-ready copy of a statically evaluated value; raises Unresolved for anything else."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise Unresolved("non-finite float")
        return value
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, set):
        return sorted(to_json_value(v) for v in value)
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, EnumMember):
        return value.name
    raise Unresolved(repr(value))


def _value_text(value: Any) -> str:
    if isinstance(value, Opaque):
        return value.text
    if isinstance(value, Symbol):
        return value.text
    if isinstance(value, EnumMember):
        return f"{value.enum}.{value.name}"
    if isinstance(value, FunctionRef):
        return value.node.name
    if isinstance(value, ClassRef):
        return value.node.name
    return repr(value)


_ACTION_NAMES = {
    "argparse.BooleanOptionalAction": "boolean_optional",
    "BooleanOptionalAction": "boolean_optional",
    "argparse._StoreTrueAction": "store_true",
}


def spec_from_raw(raw: RawFlag, interp: Interpreter) -> FlagSpec:
    kwargs = raw.kwargs
    notes = list(raw.notes)
    names = list(raw.names)
    action_value = kwargs.get("action", "store")
    nargs_value = kwargs.get("nargs")
    if isinstance(action_value, str):
        action = action_value
    elif isinstance(action_value, Symbol) and action_value.text in _ACTION_NAMES:
        action = _ACTION_NAMES[action_value.text]
    elif isinstance(action_value, ClassRef):
        action = action_value.node.name
        if nargs_value is None:
            nargs_value = interp.action_init_default(action_value, "nargs")
        if "default" not in kwargs:
            implied = interp.action_init_default(action_value, "default")
            if implied is not None and implied is not UNKNOWN:
                kwargs = {**kwargs, "default": implied}
        if action.startswith("Deprecated"):
            new_flag = kwargs.get("new_flag")
            if isinstance(new_flag, str) and raw.owner == "sglang" and "sglang" in raw.parser_key:
                new_flag = re.sub(r"(?<![\w-])--(?!sglang-)", "--sglang-", new_flag)
            notes.append(f"deprecated upstream; use {new_flag} instead" if isinstance(new_flag, str)
                         else "deprecated upstream; accepted and ignored with a warning")
    else:
        action = _value_text(action_value)
        notes.append(f"custom action {action} could not be read")
    if action == "boolean_optional":
        names = names + [f"--no-{n[2:]}" for n in names if n.startswith("--")]

    type_value = kwargs.get("type")
    if action in {"store_true", "store_false", "boolean_optional"} or action.startswith("DeprecatedStoreTrue"):
        type_name: str | None = "bool"
    elif action in {"count"}:
        type_name = "int"
    elif action in {"help", "version", "store_const", "append_const"} or action.startswith("DeprecatedStoreConst"):
        type_name = None
    elif type_value is None:
        type_name = "str" if nargs_value != 0 else None
    else:
        type_name = _value_text(type_value)

    default_repr: str | None = None
    if "default" in kwargs:
        raw_default = kwargs["default"]
    elif action == "store_true":
        raw_default = False
    elif action == "store_false":
        raw_default = True
    else:
        raw_default = None
    try:
        default = to_json_value(raw_default)
        if isinstance(raw_default, EnumMember):
            default_repr = _value_text(raw_default)
    except Unresolved:
        default = None
        default_repr = _value_text(raw_default)
    if type_name == "json.loads" and isinstance(default, str) and action == "store":
        try:
            default, default_repr = json.loads(default), repr(default)
            notes.append("argparse passes a string default through type, so the value is the parsed JSON")
        except ValueError:
            pass
    if isinstance(raw_default, Symbol) and raw_default.text.endswith("SUPPRESS"):
        notes.append("argparse.SUPPRESS: the attribute is absent unless the flag is given")

    choices_value = kwargs.get("choices")
    choices: list | None = None
    if choices_value is not None:
        try:
            converted = to_json_value(choices_value)
            choices = converted if isinstance(converted, list) else None
        except Unresolved:
            choices = None
        if choices is None:
            notes.append(f"choices are computed at run time ({_value_text(choices_value)})")

    nargs: str | int | None
    if nargs_value is None or isinstance(nargs_value, (str, int)):
        nargs = nargs_value
    else:
        nargs = _value_text(nargs_value)
    required = kwargs.get("required") is True
    dest = _dest_of(raw.names, kwargs)

    reset_source = raw.reset_source
    upstream_default: Any = None
    upstream_known = False
    if reset_source is not None:
        upstream = raw.upstream_default
        if upstream is _IMPLICIT:
            upstream = {"store_true": False, "store_false": True}.get(action)
        try:
            upstream_default = to_json_value(upstream)
            upstream_known = True
        except Unresolved:
            upstream_default = None
        shown = repr(upstream_default) if upstream_known else _value_text(upstream)
        notes.append(f"slime sets the default ({reset_source}); the {raw.owner} default is {shown}")

    description = DESCRIPTIONS.get(names[0]) if raw.parser_key in {"main", "pre", "sglang"} else None
    return FlagSpec(option_strings=names, dest=dest, owner=raw.owner, type=type_name, default=default,
                    default_repr=default_repr, choices=choices, action=action, nargs=nargs, required=required,
                    source=raw.source, reset_source=reset_source, patched=raw.patched, description=description,
                    parsers=[raw.parser_key], entry_point=raw.entry_point, notes=_dedupe(notes),
                    upstream_default=upstream_default, upstream_default_known=upstream_known)


def _dedupe(items: list[str]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def merge_specs(specs: list[FlagSpec]) -> list[FlagSpec]:
    """One entry per option: a flag several parsers register keeps the definition whose value slime uses."""
    groups: list[list[FlagSpec]] = []
    index: dict[str, int] = {}
    for spec in specs:
        hits = sorted({index[o] for o in spec.option_strings if o in index})
        if not hits:
            groups.append([spec])
            gid = len(groups) - 1
        else:
            gid = hits[0]
            for other in hits[1:]:
                groups[gid].extend(groups[other])
                groups[other] = []
            groups[gid].append(spec)
        for member in groups[gid]:
            for o in member.option_strings:
                index[o] = gid
    merged: list[FlagSpec] = []
    for group in groups:
        if not group:
            continue
        group.sort(key=lambda s: PARSER_PRECEDENCE.index(s.parsers[0]) if s.parsers[0] in PARSER_PRECEDENCE else 99)
        winner = group[0].model_copy(deep=True)
        for other in group[1:]:
            for p in other.parsers:
                if p not in winner.parsers:
                    winner.parsers.append(p)
            if other.parsers[0] == winner.parsers[0]:
                winner.notes.append(f"registered twice in the {other.parsers[0]} parser ({other.source} and "
                                    f"{winner.source}); argparse rejects the duplicate at start-up")
            else:
                winner.notes.append(f"also registered by the {other.parsers[0]} parser ({other.source}, default "
                                    f"{other.default!r}); the {winner.parsers[0]} parser's value is the one slime keeps")
                for o in other.option_strings:
                    if o not in winner.option_strings:
                        winner.option_strings.append(o)
        merged.append(winner)
    return sorted(merged, key=lambda s: s.option_strings[0])


# ---------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------


def _read_dockerfile_patches(slime_dir: Path) -> tuple[str, list[str], list[str], list[str]]:
    """PATCH_VERSION and the Megatron and SGLang patch files slime's Dockerfile applies, in order."""
    notes: list[str] = []
    dockerfile = slime_dir / DOCKERFILE
    version = "latest"
    megatron: list[str] = []
    sglang: list[str] = []
    if not dockerfile.is_file():
        notes.append(f"{DOCKERFILE} not found: no Docker patches applied")
        return version, megatron, sglang, notes
    if dockerfile.stat().st_size > MAX_DOCKERFILE_BYTES:
        notes.append(f"{DOCKERFILE} is larger than {MAX_DOCKERFILE_BYTES:,} bytes: no Docker patches applied")
        return version, megatron, sglang, notes
    text = dockerfile.read_text(encoding="utf-8", errors="replace")
    m = re.search(r"^ARG PATCH_VERSION=(\S+)", text, re.M)
    if m:
        version = m.group(1)
    for name in re.findall(r"git apply (megatron[\w.-]*\.patch)", text):
        if name not in megatron:
            megatron.append(name)
    loop = re.search(r"for patch in ([^;\n]{1,4000});", text)
    if loop:
        sglang = [p for p in loop.group(1).split() if p.startswith("sglang")]
    return version, megatron, sglang, notes


def _load_patches(slime_dir: Path, version: str, names: list[str], strip: str, slime_pin: str,
                  target_prefix: str) -> dict[str, list[FilePatch]]:
    out: dict[str, list[FilePatch]] = {}
    for name in names:
        rel = f"docker/patch/{version}/{name}"
        path = slime_dir / rel
        if not path.is_file():
            continue
        for target, patch in parse_unified_diff(path.read_text(encoding="utf-8", errors="replace"), rel,
                                                slime_pin).items():
            key = target[len(strip):] if strip and target.startswith(strip) else target
            out.setdefault(f"{target_prefix}{key}", []).append(patch)
    return out


def _router_version(router_dir: Path) -> str:
    path = router_dir / "sglang_router" / "version.py"
    if path.is_file():
        m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", path.read_text(encoding="utf-8"))
        if m:
            return m.group(1)
    return "unknown"


def build_catalog(slime_dir: Path, megatron_dir: Path | None = None, sglang_dir: Path | None = None,
                  router_dir: Path | None = None, *, pins: dict[str, str] | None = None,
                  committed: Catalog | None = None) -> Catalog:
    """Read the source trees and return the catalog of every flag slime's parsers accept.

    `sglang_dir` is an unpacked SGLang wheel (holding `sglang/`), `router_dir` an unpacked sglang-router
    wheel (holding `sglang_router/`). Parts not given are taken from the committed catalog (or
    `committed`), and the returned pins say so. `pins` overrides the pin labels used in citations.

    Raises CatalogError, and nothing else, when the trees cannot be read into a catalog: a missing,
    unreadable or oversized file, Python that does not parse (a syntax error, NUL bytes), an entry
    function slime's parsers need that is not defined, or code the static reader cannot follow within
    its limits (MAX_STEPS, MAX_BUILD_SECONDS). The message names the file or function and what was wrong.
    """
    slime_dir = Path(slime_dir)
    reading = ["the source trees"]
    try:
        return _build_catalog(slime_dir, megatron_dir, sglang_dir, router_dir, pins, committed, reading)
    except CatalogError:
        raise
    except BuildLimitExceeded as exc:
        raise CatalogError(f"{slime_dir}: while reading {reading[-1]}, {exc}.") from exc
    except RecursionError as exc:
        raise CatalogError(f"{slime_dir}: while reading {reading[-1]}, the code nests calls, expressions or "
                           "names too deeply for the static reader.") from exc
    except OSError as exc:
        raise CatalogError(f"{slime_dir}: cannot read {exc.filename or 'a file'}: {exc.strerror or exc}.") from exc
    except Exception as exc:  # noqa: BLE001 - code shaped unlike upstream; the caller gets one error type
        detail = str(exc)
        detail = detail if len(detail) <= 200 else f"{detail[:200]}..."
        raise CatalogError(f"{slime_dir}: while reading {reading[-1]}, the static reader met code shaped unlike "
                           f"upstream slime ({type(exc).__name__}: {detail}).") from exc


def _build_catalog(slime_dir: Path, megatron_dir: Path | None, sglang_dir: Path | None, router_dir: Path | None,
                   pins: dict[str, str] | None, committed: Catalog | None, reading: list[str]) -> Catalog:
    """build_catalog's work; `reading` gets the phase in progress, for error messages."""
    if not (slime_dir / SLIME_ARGS).is_file():
        raise CatalogError(f"{slime_dir} does not look like a slime checkout: {SLIME_ARGS} is missing.")
    pins = dict(pins or {})
    slime_pin = pins.get("slime", LOCAL_PIN)
    fallback = committed
    if fallback is None and (megatron_dir is None or sglang_dir is None or router_dir is None):
        fallback = load_catalog()

    version, megatron_patches, sglang_patches, notes = _read_dockerfile_patches(slime_dir)
    patches: dict[str, list[FilePatch]] = {}
    roots = [PackageRoot("slime", slime_dir, "", slime_pin, "slime")]
    out_pins: dict[str, str] = {"slime": pins.get("slime_label", slime_pin if slime_pin != LOCAL_PIN
                                                   else f"user checkout {slime_dir}")}
    if megatron_dir is not None:
        megatron_pin = pins.get("megatron", MEGATRON_SHORT)
        roots.append(PackageRoot("megatron", Path(megatron_dir), "", megatron_pin, "megatron"))
        patches.update(_load_patches(slime_dir, version, megatron_patches, "", slime_pin, ""))
        out_pins["megatron"] = megatron_pin
    else:
        out_pins["megatron"] = f"{fallback.pins.get('megatron', MEGATRON_SHORT)} (from the committed catalog)"
    if sglang_dir is not None:
        sglang_pin = pins.get("sglang", SGLANG_VERSION)
        roots.append(PackageRoot("sglang", Path(sglang_dir), "python/", sglang_pin, "sglang"))
        for key, plist in _load_patches(slime_dir, version, sglang_patches, "", slime_pin, "").items():
            patches.setdefault(key, []).extend(plist)
        out_pins["sglang"] = sglang_pin
    else:
        out_pins["sglang"] = f"{fallback.pins.get('sglang', SGLANG_VERSION)} (from the committed catalog)"
    if router_dir is not None:
        router_version = _router_version(Path(router_dir))
        router_pin = pins.get("sglang_router", router_version)
        roots.append(PackageRoot("sglang_router", Path(router_dir), "", f"sglang-router-{router_pin}", "router"))
        out_pins["sglang_router"] = router_pin
    else:
        out_pins["sglang_router"] = f"{fallback.pins.get('sglang_router', '?')} (from the committed catalog)"
    out_pins["docker_patch_version"] = version

    tree = SourceTree(roots, patches)
    interp = Interpreter(tree, fallback)
    slime_args = tree.module("slime.utils.arguments")
    if slime_args is None:
        raise CatalogError(f"{slime_dir}: {SLIME_ARGS} could not be read.")
    sglang_args = tree.module("slime.backends.sglang_utils.arguments")
    megatron_entry = tree.module("slime.backends.megatron_utils.arguments")

    # Phase 0: slime's pre-parser.
    reading.append(f"{SLIME_ARGS} (_pre_parse_mode)")
    interp.call_function(_function(interp, slime_args, "_pre_parse_mode"), [], {})
    # Phase 1: the SGLang parser (and its small helper parser).
    if sglang_args is not None:
        reading.append(f"{SLIME_SGLANG_ARGS} (sglang_parse_args)")
        interp.call_function(_function(interp, sglang_args, "sglang_parse_args"), [], {})
    # Phase 2: Megatron's parser with slime's extra arguments, as train.py builds it.
    reading.append(f"{SLIME_ARGS} (get_slime_extra_args_provider)")
    provider = interp.call_function(_function(interp, slime_args, "get_slime_extra_args_provider"), [None], {})
    main_parser = _run_main(interp, megatron_entry, provider, fallback, megatron_dir is not None)

    parsers = {p.key: p for p in interp.parsers if p.key in {"pre", "sglang", "sglang_tp", "main"}}
    raw_flags = [f for p in parsers.values() for f in p.flags]

    # The Megatron teacher server adds its own flags through add_custom_arguments.
    server_module = tree.module("slime.backends.megatron_utils.server.arguments")
    if server_module is not None and main_parser is not None:
        reading.append(SLIME_SERVER_ARGS)
        known = {n for f in main_parser.flags for n in f.names}
        interp.entry_point = MEGATRON_SERVER_ENTRY
        interp.parsers = []
        server_fn = _function(interp, server_module, "add_megatron_server_arguments")
        provider2 = interp.call_function(_function(interp, slime_args, "get_slime_extra_args_provider"),
                                         [server_fn], {})
        server_parser = _run_main(interp, megatron_entry, provider2, fallback, megatron_dir is not None)
        if server_parser is not None:
            raw_flags.extend(f for f in server_parser.flags if not (set(f.names) & known))
        interp.entry_point = None

    reading.append("the recorded flags")
    specs = merge_specs([spec_from_raw(r, interp) for r in raw_flags])
    skipped = _skipped_flags(parsers.get("sglang"))
    semantics = _semantics(parsers, slime_args)
    notes.extend(tree.patch_notes)
    notes.extend(interp.notes)
    catalog = Catalog(pins=out_pins, parsers=semantics, flags=specs, skipped=skipped, build_notes=notes)
    return catalog


def _function(interp: Interpreter, module: SourceFile | None, name: str) -> FunctionRef:
    """The function `name` of `module`; CatalogError when the module or the function is missing."""
    if module is None:
        raise CatalogError(f"cannot find the module that defines {name}")
    try:
        value = interp.module_lookup(module, name)
    except Unresolved:
        value = None
    if not isinstance(value, FunctionRef):
        raise CatalogError(f"{module.cite_path} does not define a function {name}, which slime's parsers need")
    return value


def _run_main(interp: Interpreter, megatron_entry: SourceFile | None, provider: Any, fallback: Catalog | None,
              have_megatron: bool) -> ParserModel | None:
    """Build the main parser: Megatron's parse_args through slime's megatron_parse_args, or a seeded copy."""
    before = len(interp.parsers)
    if have_megatron and megatron_entry is not None:
        interp.call_function(_function(interp, megatron_entry, "megatron_parse_args"), [provider], {})
        created = [p for p in interp.parsers[before:] if p.key == "main"]
        return created[0] if created else None
    if fallback is None or "main" not in fallback.parsers:
        return None
    semantics = fallback.parsers["main"]
    parser = ParserModel(key="main", source=semantics.source, allow_abbrev=semantics.allow_abbrev,
                         ignore_unknown=semantics.ignore_unknown, parse_source=semantics.source)
    parser.flags = [raw_from_spec(s, "main") for s in fallback.flags if s.owner == "megatron" and "main" in s.parsers]
    interp.parsers.append(parser)
    if isinstance(provider, FunctionRef):
        interp.call_function(provider, [parser], {})
    return parser


def _skipped_flags(parser: ParserModel | None) -> list[SkippedFlag]:
    if parser is None:
        return []
    out = []
    for names, dest, source, prefixed in parser.skipped:
        renamed = [f"--sglang-{n.lstrip('-')}" for n in names if n.startswith("-")] or [prefixed]
        out.append(SkippedFlag(option_strings=renamed, upstream_option_strings=list(names), dest=dest,
                               source=source))
    return sorted(out, key=lambda s: s.option_strings[0])


_PARSER_NOTES = {
    "pre": "slime's pre-parser reads a few mode flags (--train-backend, --debug-*) before anything else.",
    "sglang": "Skipped entirely when --debug-train-only or --load-debug-rollout-data is given; its values are "
              "copied over the main parser's. Abbreviations are on: a unique prefix of one of its flags is taken "
              "as that flag without a word, and a prefix shared by several of them stops slime with an "
              "'ambiguous option' error.",
    "sglang_tp": "A throwaway parser inside sglang_parse_args that only computes the default SGLang TP size; "
                 "its values are not kept.",
    "main": "Megatron's parser plus slime's own flags; --sglang-* and pre-parser flags are unknown here and "
            "dropped silently.",
}


def _semantics(parsers: dict[str, ParserModel], slime_args: SourceFile) -> dict[str, ParserSemantics]:
    out: dict[str, ParserSemantics] = {}
    for key, parser in sorted(parsers.items()):
        source = parser.source if parser.parse_source is None else f"{parser.source}; {parser.parse_source}"
        out[key] = ParserSemantics(allow_abbrev=parser.allow_abbrev, ignore_unknown=parser.ignore_unknown,
                                   source=source, note=_PARSER_NOTES.get(key))
    return out


def default_pins() -> dict[str, str]:
    return {"slime": SLIME_SHORT, "megatron": MEGATRON_SHORT, "sglang": SGLANG_VERSION}
