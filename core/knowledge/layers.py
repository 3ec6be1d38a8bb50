"""The messages of every layer a slime run passes through, read with the same `ast` tool as slime's own
error index (`core.knowledge.errors`): Megatron-LM's `assert`/`raise` messages under megatron/core and
megatron/training, SGLang's server-argument validation and the errors a client of its engine sees, and
slime's own log lines (`logger.*`, `print`) that users paste because they look alarming.

Each layer's index is generated data in knowledge/catalog/ (written by tools/build_layer_index.py at the
pinned commits; templates and conditions only, never upstream code) and cited as `path:line@pin`. Nothing
is imported or run; pasted text is only matched against the templates.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from core.knowledge.errors import (
    ERRORS_PATH,
    KNOWLEDGE_DIR,
    MAX_FILE_BYTES,
    ErrorEntry,
    ErrorIndex,
    _Collector,
    _short,
    _template,
    _template_pieces,
    checkout_reader,
    errors_in_source,
    load_error_index,
    source_files,
)
from core.pins import MEGATRON_SHORT, SGLANG_VERSION, SLIME_SHORT

CATALOG_DIR = KNOWLEDGE_DIR / "catalog"
MEGATRON_ERRORS_PATH = CATALOG_DIR / "errors_megatron.json"
SGLANG_ERRORS_PATH = CATALOG_DIR / "errors_sglang.json"
LOG_LINES_PATH = CATALOG_DIR / "log_lines.json"
MEGATRON_LOG_LINES_PATH = CATALOG_DIR / "log_lines_megatron.json"
SGLANG_LOG_LINES_PATH = CATALOG_DIR / "log_lines_sglang.json"
LOG_MEANINGS_PATH = KNOWLEDGE_DIR / "log_meanings.yaml"
LAYER_PATHS = (ERRORS_PATH, MEGATRON_ERRORS_PATH, SGLANG_ERRORS_PATH, LOG_LINES_PATH, MEGATRON_LOG_LINES_PATH,
               SGLANG_LOG_LINES_PATH)
MAX_LAYER_FILES = 3000

LAYER_TITLES = {"slime": "slime", "megatron": "Megatron-LM", "sglang": "SGLang"}
PIN_LAYER = {SLIME_SHORT: "slime", MEGATRON_SHORT: "megatron", SGLANG_VERSION: "sglang"}


class LayerSpec(BaseModel):
    """What one layer's index reads from its checkout: directories (recursively) and single files, relative
    to the checkout, and the prefix its citations carry (the SGLang wheel holds `sglang/`, cited as
    `python/sglang/...` like the argument catalog does)."""

    layer: str
    pin: str
    dirs: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    cite_prefix: str = ""
    marker: str = Field(description="a directory that tells a checkout of this layer apart")


MEGATRON = LayerSpec(layer="megatron", pin=MEGATRON_SHORT, dirs=("megatron/core", "megatron/training"),
                     marker="megatron/core")
# Server arguments, the HTTP server and Engine slime talks to, the managers that validate requests and
# weight updates, the model runner and loader (memory, weights), and sampling parameters.
SGLANG = LayerSpec(
    layer="sglang", pin=SGLANG_VERSION, cite_prefix="python/", marker="sglang/srt",
    dirs=("sglang/srt/arg_groups", "sglang/srt/entrypoints", "sglang/srt/weight_sync", "sglang/srt/model_loader",
          "sglang/srt/sampling"),
    files=("sglang/srt/server_args.py", "sglang/srt/server_args_config_parser.py",
           "sglang/srt/managers/tokenizer_manager.py", "sglang/srt/managers/scheduler.py",
           "sglang/srt/managers/io_struct.py", "sglang/srt/managers/schedule_batch.py",
           "sglang/srt/managers/tp_worker.py", "sglang/srt/managers/detokenizer_manager.py",
           "sglang/srt/managers/template_manager.py", "sglang/srt/managers/data_parallel_controller.py",
           "sglang/srt/model_executor/model_runner.py", "sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
           "sglang/srt/model_executor/pool_configurator.py", "sglang/srt/model_executor/cuda_graph_runner.py",
           "sglang/srt/utils/common.py", "sglang/srt/utils/hf_transformers_utils.py"),
)


def layer_of(entry: ErrorEntry) -> str:
    """slime, megatron or sglang: the layer whose code holds the message (a user's checkout is slime)."""
    return PIN_LAYER.get(entry.commit, "slime")


def layer_files(root: Path, spec: LayerSpec) -> list[Path]:
    """The Python files of a layer's checkout that its index reads (tests excluded, no symlinks), sorted."""
    root = Path(root)
    found = [root / f for f in spec.files if (root / f).is_file()]
    for sub in spec.dirs:
        base = root / sub
        if base.is_dir():
            found += sorted(p for p in base.rglob("*.py") if not p.is_symlink()
                            and not {"tests", "test"} & set(p.relative_to(root).parts))
    return sorted(dict.fromkeys(found))[:MAX_LAYER_FILES]


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def build_layer_index(root: Path, spec: LayerSpec) -> ErrorIndex:
    """Megatron's or SGLang's messages at a checkout, cited at the layer's pin."""
    return _index_layer(root, spec, errors_in_source)


def _index_layer(root: Path, spec: LayerSpec, extract: Callable[[str, str, str], list[ErrorEntry]]) -> ErrorIndex:
    """The entries `extract` finds in each file the layer's index reads, cited at the layer's pin."""
    root = Path(root)
    files = layer_files(root, spec)
    entries: list[ErrorEntry] = []
    for path in files:
        text = _read(path)
        if text is not None:
            entries += extract(text, spec.cite_prefix + path.relative_to(root).as_posix(), spec.pin)
    return ErrorIndex(commit=spec.pin, files=len(files), entries=entries)


# --------------------------------------------------------------------------------------------------
# slime's log lines
# --------------------------------------------------------------------------------------------------
LOG_LEVELS = ("debug", "info", "warning", "warn", "error", "exception", "critical")
# Megatron's own printing helpers: print_rank_0(message) and log_single_rank(logger, logging.LEVEL, message).
PRINT_HELPERS = frozenset({"print_rank_0", "print_rank_last"})
LOGGER_NAMES = frozenset({"logger", "log", "logging", "_logger", "LOGGER", "LOG"})
NORMAL_LEVELS = frozenset({"debug", "info", "print"})


class _LogCollector(_Collector):
    """`logger.<level>(message, ...)` and `print(message)` calls with a literal or f-string message."""

    def __init__(self, path: str, commit: str) -> None:
        super().__init__(path, commit)
        self.handling: list[str] = []

    def visit_Assert(self, node: ast.Assert) -> None:
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.handling.append(_short(ast.unparse(node.type), 80) if node.type is not None else "any exception")
        self.generic_visit(node)
        self.handling.pop()

    def visit_Call(self, node: ast.Call) -> None:
        level = _log_level(node)
        offset = 2 if level is not None and _func_name(node) == "log_single_rank" else 0
        if level is not None and len(node.args) > offset:
            template = _template(node.args[offset])
            if template is not None and len(node.args) > offset + 1 and level != "print":
                template = _percent_holes(template)
            if template and _template_pieces(template) is not None:
                condition = self.guards[-1] if self.guards else None
                if self.handling:
                    condition = f"while handling {self.handling[-1]}" + (f", when {condition}" if condition else "")
                normal = level in NORMAL_LEVELS and not self.handling
                self._add(node, "log", level, template, condition)
                self.entries[-1].normal = normal
        self.generic_visit(node)


def _func_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _log_level(node: ast.Call) -> str | None:
    func = node.func
    name = _func_name(node)
    if name == "print" and isinstance(func, ast.Name) or name in PRINT_HELPERS:
        return "print"
    if name == "log_single_rank" and len(node.args) >= 3:  # (logger, logging.INFO, message)
        level = node.args[1]
        attr = level.attr.lower() if isinstance(level, ast.Attribute) else ""
        return ("warning" if attr == "warn" else attr) if attr in LOG_LEVELS else "info"
    if isinstance(func, ast.Attribute) and func.attr in LOG_LEVELS:
        owner = func.value
        name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        if name in LOGGER_NAMES or name.endswith("logger"):
            return "warning" if func.attr == "warn" else func.attr
    return None


def _percent_holes(template: str) -> str:
    """A logging call's `%s`-style placeholders (filled from its other arguments) shown as holes."""
    return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdifrx]", "{…}", template)


def log_lines_in_source(text: str, path: str, commit: str = SLIME_SHORT) -> list[ErrorEntry]:
    """Every log call with a literal or f-string message in one Python file, as entries of kind `log`
    (`exception` holds the level: debug, info, warning, error, exception, critical or print)."""
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return []
    collector = _LogCollector(path, commit)
    collector.visit(tree)
    return collector.entries


def build_log_index(root: Path, commit: str = SLIME_SHORT) -> ErrorIndex:
    """slime's log lines at a checkout (the same files as its error index)."""
    reader = checkout_reader(Path(root))
    files = source_files(root, reader)
    entries: list[ErrorEntry] = []
    for path in files:
        text = reader.read_text(path)
        if text is not None:
            entries += log_lines_in_source(text, reader.rel(path), commit)
    return ErrorIndex(commit=commit, files=len(files), entries=entries)


def build_layer_log_index(root: Path, spec: LayerSpec) -> ErrorIndex:
    """Megatron's or SGLang's log lines (`logger.*`, `print`, `print_rank_0`, `log_single_rank`) in the files
    the layer's index reads, cited at the layer's pin."""
    return _index_layer(root, spec, log_lines_in_source)


class LogMeaning(BaseModel):
    """What a log line users paste means in a slime run, in our words (knowledge/log_meanings.yaml)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]{2,60}$")
    layer: str = Field(pattern=r"^(slime|megatron|sglang)$")
    contains: str = Field(min_length=8, description="a fixed piece of the line's template that identifies it")
    meaning: str = Field(min_length=20)
    sources: list[str] = Field(min_length=1)


@lru_cache(maxsize=2)
def _meanings(path_text: str, mtime_ns: int) -> tuple[LogMeaning, ...]:
    from core.knowledge.table_file import parse_table

    return parse_table(Path(path_text).read_text(encoding="utf-8"), "lines", LogMeaning, "log meanings", ValueError)


def log_meanings(path: Path = LOG_MEANINGS_PATH) -> tuple[LogMeaning, ...]:
    try:
        return _meanings(str(path), path.stat().st_mtime_ns)
    except OSError:
        return ()


def curated_meaning(entry: ErrorEntry) -> LogMeaning | None:
    """The curated meaning of a log line, when one is written for it."""
    return next((m for m in log_meanings() if m.layer == layer_of(entry) and m.contains in entry.template), None)


def log_verdict(entry: ErrorEntry) -> str:
    """Whether a log line is part of a normal run, in plain words (a curated meaning first, when written)."""
    who = LAYER_TITLES.get(layer_of(entry), "slime")
    where = f"{entry.function} ({entry.path}:{entry.line} at {who} {entry.commit})"
    curated = curated_meaning(entry)
    if curated is not None:
        return f"{curated.meaning} ({who} logs it in {where}.)"
    if entry.normal:
        return (f"Normal: {who} prints this {'line' if entry.exception == 'print' else entry.exception + ' line'} "
                f"in {where} as part of a healthy run; it is not an error.")
    if entry.condition and entry.condition.startswith("while handling"):
        return (f"Not normal: {who} logs this ({entry.exception}) in {where} {entry.condition}; the real error "
                "is usually printed just before or after it.")
    if entry.exception == "warning":
        return (f"A warning, not an error by itself: {who} logs it in {where}"
                + (f" when {entry.condition}" if entry.condition else "") + ". The run goes on; check whether "
                "the setting it names is what you meant.")
    return f"Not normal: {who} logs this ({entry.exception}) in {where}" + (
        f" when {entry.condition}" if entry.condition else "") + "."


# --------------------------------------------------------------------------------------------------
# Loading everything
# --------------------------------------------------------------------------------------------------
def _stamp() -> tuple[int, ...]:
    out = []
    for path in LAYER_PATHS:
        try:
            out.append(Path(path).stat().st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


@lru_cache(maxsize=2)
def _all(stamp: tuple[int, ...]) -> ErrorIndex:
    parts = [load_error_index(path) for path in LAYER_PATHS]
    return ErrorIndex(commit=SLIME_SHORT, files=sum(p.files for p in parts),
                      entries=[e for p in parts for e in p.entries])


def load_all_messages() -> ErrorIndex:
    """slime's, Megatron's and SGLang's messages and slime's log lines, in one index (slime's first)."""
    return _all(_stamp())
