"""Multi-turn agent: a static check of a user's custom generate function, and of the flag values naming it.

The uploaded file is parsed with `ast` and never imported or run. slime loads the function named by
`--custom-generate-function-path` with `load_function`, which splits the value on its last dot into a
module to import and an attribute to read (slime/utils/misc.py:39-48@624b824a), then awaits it as
`generate(args, sample, sampling_params)`, adding `evaluation=` when the function has a parameter of that
name (slime/rollout/sglang_rollout.py:251-258@624b824a).

What the checklist can see is what the file shows: a tool call made through a helper in another module is
invisible here, so "not seen" means "not visible in this file", never "wrong".
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath

from pydantic import BaseModel

from core.findings import Finding, Severity, sort_and_dedupe
from core.pins import slime_source

MAX_SOURCE_BYTES = 1_000_000
DEFAULT_FUNCTION = "generate"
CARD = "multi-turn-agent"
TOOL_PARSER_NAME = re.compile(r"tool_?calls?|(parse|extract)\w*(action|tool|call|predict|response|output)", re.I)
SLIME_ARGS_PASSED = ("args", "sample", "sampling_params")

LOAD_FUNCTION_SOURCE = slime_source("slime/utils/misc.py", 39)
CALL_SOURCE = slime_source("slime/rollout/sglang_rollout.py", 251)
RM_SOURCE = slime_source("slime/rollout/rm_hub/__init__.py", 55)
RETURN_SOURCE = slime_source("slime/rollout/sglang_rollout.py", 256)
EXAMPLE_SOURCE = slime_source("examples/search-r1/generate_with_search.py", 145)
COLON_DOC_SOURCES = (slime_source("docs/en/get_started/quick_start.md", 543),
                     slime_source("docs/zh/get_started/quick_start.md", 550))
TURN_LIMIT_SOURCES = (slime_source("examples/search-r1/generate_with_search.py", 16),
                      slime_source("slime/utils/arguments.py", 2013))
CUSTOM_CONFIG_SOURCE = slime_source("slime/utils/arguments.py", 2013)

TURN_LIMIT_NOTE = (
    "slime has no turn-limit flag at this commit: its argument parser defines no --max-turns. The search-r1 "
    "example keeps max_turns in a dict inside its own module. To set it from the launch script, put it in a "
    "YAML file passed with --custom-config-path: slime copies every key of that file onto args, so your "
    "function can read args.max_turns.")


class AgentCheckError(ValueError):
    """The upload cannot be read as Python source; the message says why."""


class ChecklistItem(BaseModel):
    id: str
    title: str
    why: str
    source: str


CHECKLIST: tuple[ChecklistItem, ...] = (
    ChecklistItem(id="turn_loop", title="Loops over turns, up to a bound",
                  why="an agent that never stops blocks the whole rollout batch",
                  source=slime_source("examples/search-r1/generate_with_search.py", 179)),
    ChecklistItem(id="calls_router", title="Calls the SGLang router for each model turn",
                  why="slime starts the router; its address is in args.sglang_router_ip and sglang_router_port",
                  source=slime_source("examples/search-r1/generate_with_search.py", 150)),
    ChecklistItem(id="extracts_tool_calls", title="Extracts tool calls from the model's output",
                  why="the model's text decides the next action",
                  source=slime_source("examples/search-r1/generate_with_search.py", 111)),
    ChecklistItem(id="tool_time_limits", title="Runs tools with time limits",
                  why=("slime's shared HTTP client waits with no timeout (slime/utils/http_utils.py:224), so one "
                       "hung tool call stalls its sample; the retool example gives its sandbox a timeout"),
                  source=slime_source("examples/retool/tool_sandbox.py", 96)),
    ChecklistItem(id="tool_mask_zero", title="Appends tool output with loss mask 0",
                  why="the model did not write tool output, so it must not be trained on",
                  source=slime_source("slime/utils/types.py", 253)),
    ChecklistItem(id="model_mask_one", title="Appends model tokens with loss mask 1",
                  why="only tokens the model sampled carry a policy gradient",
                  source=slime_source("examples/search-r1/generate_with_search.py", 219)),
    ChecklistItem(id="token_concat", title="Concatenates token ids turn by turn (no re-tokenising the text)",
                  why="re-tokenised text can differ from the sampled tokens and break their log-probs",
                  source=slime_source("examples/search-r1/generate_with_search.py", 206)),
    ChecklistItem(id="sets_tokens", title="Sets sample.tokens (prompt + response ids)",
                  why="training reads the token ids, not the text",
                  source=slime_source("examples/search-r1/generate_with_search.py", 256)),
    ChecklistItem(id="sets_response_length", title="Sets sample.response_length",
                  why="it splits prompt from response in sample.tokens",
                  source=slime_source("examples/search-r1/generate_with_search.py", 257)),
    ChecklistItem(id="sets_loss_mask", title="Sets sample.loss_mask (one entry per response token)",
                  why="the mask must line up with the response tokens",
                  source=slime_source("examples/search-r1/generate_with_search.py", 259)),
    ChecklistItem(id="sets_status", title="Sets sample.status (completed, truncated, aborted or failed)",
                  why="slime skips or keeps samples by status",
                  source=slime_source("examples/search-r1/generate_with_search.py", 266)),
    ChecklistItem(id="sets_reward", title="Sets sample.reward, or leaves it to --custom-rm-path",
                  why="slime computes the reward only when the function left it empty",
                  source=slime_source("slime/rollout/sglang_rollout.py", 285)),
)
CHECKLIST_BY_ID = {c.id: c for c in CHECKLIST}


class ChecklistResult(BaseModel):
    item: ChecklistItem
    seen: bool
    evidence: str


class AgentCheckReport(BaseModel):
    function_name: str
    found: bool
    is_async: bool
    parameters: list[str]
    checklist: list[ChecklistResult]
    findings: list[Finding]
    sets_reward: bool

    @property
    def ok(self) -> bool:
        return self.found and not any(f.severity == Severity.ERROR for f in self.findings)

    @property
    def seen_count(self) -> int:
        return sum(r.seen for r in self.checklist)


# -- reading the upload ---------------------------------------------------------------------------------
def decode_source(data: bytes | str) -> str:
    """Python source is UTF-8 text of sensible size; a binary or huge upload gets a specific message."""
    if isinstance(data, str):
        text = data
    else:
        if len(data) > MAX_SOURCE_BYTES:
            raise AgentCheckError(f"That file is {len(data):,} bytes; a generate-function module is rarely over "
                                  f"{MAX_SOURCE_BYTES:,}. Upload the .py file that defines the function.")
        if b"\0" in data:
            raise AgentCheckError("That file is binary (it contains NUL bytes); upload the .py source file.")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise AgentCheckError(f"That file is not UTF-8 text (byte {exc.start}); upload the .py source.") from None
    if len(text) > MAX_SOURCE_BYTES:
        raise AgentCheckError("That text is too long to be one generate-function module.")
    if not text.strip():
        raise AgentCheckError("The file is empty.")
    return text


def parse_source(text: str) -> ast.Module | Finding:
    """Rule: the file must be valid Python, or slime's import of it fails before training starts."""
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        return Finding(code="AGT001", severity=Severity.ERROR, line=exc.lineno, column=exc.offset,
                       source=LOAD_FUNCTION_SOURCE, card=CARD,
                       message=f"The file is not valid Python: {exc.msg}.",
                       fix="fix the syntax error; slime imports this module when the first rollout starts")
    except (ValueError, RecursionError, MemoryError) as exc:
        return Finding(code="AGT001", severity=Severity.ERROR, source=LOAD_FUNCTION_SOURCE, card=CARD,
                       message=f"The file cannot be parsed as Python ({type(exc).__name__}).")


# -- the function and its signature ---------------------------------------------------------------------
def find_function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The module-level definition slime's getattr would find (the last one wins, as in Python)."""
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def check_function_exists(tree: ast.Module, name: str) -> Finding | None:
    """Rule: the function must be defined at module level, since slime reads it as a module attribute
    (slime/utils/misc.py:46-48@624b824a)."""
    if find_function(tree, name) is not None:
        return None
    candidates = [n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef)]
    nested = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.name == name]
    hint = ""
    if nested:
        hint = f" A function of that name exists at line {nested[0]} but inside a class or another function."
    elif candidates:
        hint = f" Module-level async functions here: {', '.join(candidates[:8])}."
    return Finding(code="AGT002", severity=Severity.ERROR, source=LOAD_FUNCTION_SOURCE, card=CARD,
                   message=f"No module-level function named {name!r}.{hint}",
                   fix="define it at the top level of the module, or name the right function in the flag")


def check_is_async(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Finding | None:
    """Rule: the function must be `async def`: slime awaits its result
    (slime/rollout/sglang_rollout.py:255-258@624b824a)."""
    if isinstance(fn, ast.AsyncFunctionDef):
        return None
    return Finding(code="AGT003", severity=Severity.ERROR, line=fn.lineno, source=CALL_SOURCE, card=CARD,
                   message=f"{fn.name} is a plain def; slime awaits it, so it must be 'async def'.",
                   fix=f"async def {fn.name}(args, sample, sampling_params):")


def check_signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Finding]:
    """Rule: slime passes exactly (args, sample, sampling_params) by position, plus `evaluation=` by name
    when the function declares it; any other parameter needs a default
    (slime/rollout/sglang_rollout.py:251-258@624b824a)."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    out: list[Finding] = []
    if len(positional) < 3 and a.vararg is None:
        names = ", ".join(p.arg for p in positional) or "none"
        out.append(Finding(code="AGT004", severity=Severity.ERROR, line=fn.lineno, source=CALL_SOURCE, card=CARD,
                           message=(f"{fn.name} takes {len(positional)} positional parameter(s) ({names}); slime "
                                    "passes three: args, sample, sampling_params."),
                           fix=f"async def {fn.name}(args, sample, sampling_params):"))
    first_defaulted = len(positional) - len(a.defaults)
    extra_required = [p.arg for i, p in enumerate(positional) if i >= 3 and i < first_defaulted]
    if positional[3:4] and positional[3].arg == "evaluation":
        extra_required = [n for n in extra_required if n != "evaluation"]
    kw_required = [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=False)
                   if d is None and p.arg != "evaluation"]
    missing = extra_required + kw_required
    if missing:
        out.append(Finding(code="AGT004", severity=Severity.ERROR, line=fn.lineno, source=CALL_SOURCE, card=CARD,
                           message=(f"{fn.name} requires {', '.join(missing)}, which slime never passes; "
                                    "the call fails with a TypeError."),
                           fix="give those parameters defaults, or read the values from args"))
    if len(positional) >= 3 and a.vararg is None:
        names = [p.arg for p in positional[:3]]
        if names != list(SLIME_ARGS_PASSED):
            out.append(Finding(code="AGT005", severity=Severity.INFO, line=fn.lineno, source=CALL_SOURCE, card=CARD,
                               message=(f"Parameters are named {', '.join(names)}; slime passes them by position "
                                        "as args, sample, sampling_params, so the order is what matters.")))
    all_names = {p.arg for p in [*positional, *a.kwonlyargs]}
    if "evaluation" in all_names:
        out.append(Finding(code="AGT006", severity=Severity.INFO, line=fn.lineno, source=CALL_SOURCE, card=CARD,
                           message="The function declares 'evaluation'; slime passes evaluation=True during "
                                   "evaluation rollouts and False otherwise."))
    return out


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function's body, not descending into nested functions, classes or lambdas."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def check_returns_sample(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Finding | None:
    """Rule: the function must return the sample (or a list of samples): slime replaces its sample with
    whatever comes back (slime/rollout/sglang_rollout.py:256-258@624b824a)."""
    if any(isinstance(n, ast.Return) and n.value is not None and not
           (isinstance(n.value, ast.Constant) and n.value.value is None) for n in _own_nodes(fn)):
        return None
    return Finding(code="AGT007", severity=Severity.ERROR, line=fn.lineno, source=RETURN_SOURCE, card=CARD,
                   message=f"{fn.name} never returns a value; slime uses the returned Sample, so it would get None.",
                   fix="end with 'return sample'")


# -- the checklist: what the file visibly does -----------------------------------------------------------
def _attr_chain(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


class ModuleIndex:
    """One pass over the module, keeping the nodes the checklist looks at (so a large file is walked once)."""

    def __init__(self, tree: ast.Module) -> None:
        self.calls: list[tuple[str, ast.Call]] = []
        self.strings: list[tuple[str, int]] = []
        self.attr_loads: list[tuple[str, int]] = []
        self.attr_stores: dict[str, list[int]] = {}
        self.loops: list[ast.For | ast.AsyncFor | ast.While] = []
        self.mults: list[ast.BinOp] = []
        self.aug_adds: list[ast.AugAssign] = []
        self.named: list[tuple[str, int]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self.calls.append((_attr_chain(node.func), node))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.strings.append((node.value, node.lineno))
            elif isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Store):
                    self.attr_stores.setdefault(node.attr, []).append(node.lineno)
                else:
                    self.attr_loads.append((node.attr, node.lineno))
                self.named.append((node.attr, node.lineno))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                self.loops.append(node)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                self.mults.append(node)
            elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
                self.aug_adds.append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.named.append((node.name, node.lineno))
            elif isinstance(node, ast.Name):
                self.named.append((node.id, node.lineno))

    def call_lines(self, *names: str, last_part: bool = False) -> list[int]:
        wanted = set(names)
        return [c.lineno for n, c in self.calls if (n.split(".")[-1] if last_part else n) in wanted]

    def keyword_lines(self, keyword_name: str, value: object = ...) -> list[int]:
        lines = []
        for _, c in self.calls:
            for kw in c.keywords:
                if kw.arg == keyword_name and (value is ... or (isinstance(kw.value, ast.Constant)
                                                               and kw.value.value is value)):
                    lines.append(c.lineno)
        return lines

    def append_calls(self) -> list[ast.Call]:
        return [c for n, c in self.calls if n.endswith("append_response_tokens")]

    def mask_list_lines(self, value: int) -> list[int]:
        """Lines building a mask like [value] * n."""
        lines = []
        for n in self.mults:
            for side in (n.left, n.right):
                if (isinstance(side, ast.List) and len(side.elts) == 1 and isinstance(side.elts[0], ast.Constant)
                        and side.elts[0].value == value and not isinstance(side.elts[0].value, bool)):
                    lines.append(n.lineno)
        return lines


def _evidence(lines: list[int], what: str) -> str:
    uniq = sorted(set(lines))
    shown = ", ".join(str(n) for n in uniq[:5]) + (" ..." if len(uniq) > 5 else "")
    return f"{what} (line{'s' if len(uniq) > 1 else ''} {shown})"


def _see_turn_loop(ix: ModuleIndex) -> tuple[bool, str]:
    range_loops = [n.lineno for n in ix.loops if isinstance(n, (ast.For, ast.AsyncFor))
                   and isinstance(n.iter, ast.Call) and _attr_chain(n.iter.func) == "range"]
    if range_loops:
        return True, _evidence(range_loops, "a for loop over range(...)")
    bounded_while = [n.lineno for n in ix.loops if isinstance(n, ast.While)
                     and any(isinstance(s, ast.Compare) for s in ast.walk(n.test))]
    if bounded_while:
        return True, _evidence(bounded_while, "a while loop with a comparison in its condition")
    if ix.loops:
        return False, _evidence([n.lineno for n in ix.loops], "loops without a visible bound")
    return False, "no loop in the file"


def _see_router(ix: ModuleIndex) -> tuple[bool, str]:
    lines = [ln for a, ln in ix.attr_loads if a in ("sglang_router_ip", "sglang_router_port")]
    lines += [ln for s, ln in ix.strings if "/generate" in s or "/v1/chat/completions" in s]
    lines += ix.call_lines("OpenAIAdapter", "AnthropicAdapter", last_part=True)
    if lines:
        return True, _evidence(lines, "the router address or its /generate endpoint")
    return False, "no router address, /generate URL or slime agent adapter in this file"


def _see_tool_calls(ix: ModuleIndex) -> tuple[bool, str]:
    lines = ix.call_lines("re.search", "re.findall", "re.finditer", "re.match", "re.fullmatch", "json.loads")
    lines += [ln for name, ln in ix.named if TOOL_PARSER_NAME.search(name)]
    if lines:
        return True, _evidence(lines, "parsing of the model output (regex, JSON or a tool-call parser)")
    return False, "no regex, JSON parsing or tool-call parser in this file"


def _see_time_limits(ix: ModuleIndex) -> tuple[bool, str]:
    lines = ix.call_lines("wait_for", "timeout", "timeout_at", "ClientTimeout", last_part=True)
    lines += ix.keyword_lines("timeout")
    if lines:
        return True, _evidence(lines, "a timeout (asyncio.wait_for / asyncio.timeout / timeout=)")
    return False, "no asyncio.wait_for, asyncio.timeout or timeout= argument in this file"


def _see_mask_zero(ix: ModuleIndex) -> tuple[bool, str]:
    lines = ix.mask_list_lines(0) + ix.keyword_lines("trainable", False)
    if lines:
        return True, _evidence(lines, "loss mask 0 for appended tool tokens ([0] * n or trainable=False)")
    return False, "no [0] * n mask and no append_response_tokens(..., trainable=False)"


def _see_mask_one(ix: ModuleIndex) -> tuple[bool, str]:
    lines = ix.mask_list_lines(1) + ix.keyword_lines("trainable", True)
    lines += [c.lineno for c in ix.append_calls() if not any(k.arg == "trainable" for k in c.keywords)]
    if lines:
        return True, _evidence(lines, "loss mask 1 for model tokens ([1] * n or trainable tokens)")
    return False, "no [1] * n mask and no trainable append_response_tokens(...)"


def _see_token_concat(ix: ModuleIndex) -> tuple[bool, str]:
    lines = [ln for s, ln in ix.strings if s in ("output_token_logprobs", "output_ids")]
    lines += [c.lineno for c in ix.append_calls()]
    lines += [n.lineno for n in ix.aug_adds if "token" in _attr_chain(n.target).lower()]
    if lines:
        return True, _evidence(lines, "token ids appended turn by turn")
    return False, "no token-id list grown turn by turn (e.g. from meta_info['output_token_logprobs'])"


def _see_attr(attr: str) -> Callable[[ModuleIndex], tuple[bool, str]]:
    def see(ix: ModuleIndex) -> tuple[bool, str]:
        lines = list(ix.attr_stores.get(attr, []))
        if attr in ("tokens", "response_length", "loss_mask"):
            appended = [c.lineno for c in ix.append_calls()]
            if appended and not lines:
                return True, _evidence(appended, f"sample.append_response_tokens(...), which updates {attr}")
            lines += appended
        if lines:
            return True, _evidence(lines, f"an assignment to .{attr}")
        return False, f"no assignment to .{attr} in this file"
    return see


SEERS: dict[str, Callable[[ModuleIndex], tuple[bool, str]]] = {
    "turn_loop": _see_turn_loop,
    "calls_router": _see_router,
    "extracts_tool_calls": _see_tool_calls,
    "tool_time_limits": _see_time_limits,
    "tool_mask_zero": _see_mask_zero,
    "model_mask_one": _see_mask_one,
    "token_concat": _see_token_concat,
    "sets_tokens": _see_attr("tokens"),
    "sets_response_length": _see_attr("response_length"),
    "sets_loss_mask": _see_attr("loss_mask"),
    "sets_status": _see_attr("status"),
    "sets_reward": _see_attr("reward"),
}


def check_unbounded_while(tree: ast.Module) -> list[Finding]:
    """Rule: a `while True` loop needs a visible way out (a break or return); without one, one sample can
    hold its rollout slot forever (turn bound as in examples/search-r1/generate_with_search.py:179@624b824a)."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.While) and isinstance(n.test, ast.Constant) and n.test.value is True:
            exits = [s for s in ast.walk(n) if isinstance(s, (ast.Break, ast.Return, ast.Raise))]
            if not exits:
                out.append(Finding(code="AGT008", severity=Severity.WARNING, line=n.lineno, card=CARD,
                                   source=CHECKLIST_BY_ID["turn_loop"].source,
                                   message="'while True' loop with no break, return or raise: it never ends.",
                                   fix="loop over range(max_turns) instead"))
    return out


def reward_finding(sets_reward: bool) -> Finding:
    """Rule: if the function leaves sample.reward empty, slime computes it with --custom-rm-path (or the
    built-in --rm-type); with neither set it stops with NotImplementedError
    (slime/rollout/sglang_rollout.py:284-287, slime/rollout/rm_hub/__init__.py:55-90@624b824a)."""
    if sets_reward:
        return Finding(code="AGT009", severity=Severity.INFO, source=RM_SOURCE, card=CARD,
                       message="The file assigns .reward; slime skips its own reward step for samples whose "
                               "reward is already set, so --custom-rm-path is optional.")
    return Finding(code="AGT009", severity=Severity.INFO, source=RM_SOURCE, card=CARD, flag="--custom-rm-path",
                   message="The file never assigns .reward, so slime will compute it: set --custom-rm-path "
                           "(an async reward function) or a built-in --rm-type.")


def check_generate_source(data: bytes | str, function_name: str = DEFAULT_FUNCTION) -> AgentCheckReport:
    """Parse (never import) a generate-function module and report the contract and the checklist."""
    text = decode_source(data)
    parsed = parse_source(text)
    empty = [ChecklistResult(item=c, seen=False, evidence="not checked") for c in CHECKLIST]
    if isinstance(parsed, Finding):
        return AgentCheckReport(function_name=function_name, found=False, is_async=False, parameters=[],
                                checklist=empty, findings=[parsed], sets_reward=False)
    tree = parsed
    missing = check_function_exists(tree, function_name)
    if missing:
        return AgentCheckReport(function_name=function_name, found=False, is_async=False, parameters=[],
                                checklist=empty, findings=[missing], sets_reward=False)
    fn = find_function(tree, function_name)
    assert fn is not None
    findings: list[Finding] = []
    for rule in (check_is_async, check_returns_sample):
        f = rule(fn)
        if f:
            findings.append(f)
    findings += check_signature(fn)
    findings += check_unbounded_while(tree)
    index = ModuleIndex(tree)
    results = []
    for item in CHECKLIST:
        seen, evidence = SEERS[item.id](index)
        results.append(ChecklistResult(item=item, seen=seen, evidence=evidence))
    sets_reward = next(r.seen for r in results if r.item.id == "sets_reward")
    findings.append(reward_finding(sets_reward))
    params = [p.arg for p in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    return AgentCheckReport(function_name=function_name, found=True, is_async=isinstance(fn, ast.AsyncFunctionDef),
                            parameters=params, checklist=results, findings=sort_and_dedupe(findings),
                            sets_reward=sets_reward)


# -- the flag values -------------------------------------------------------------------------------------
def check_function_path(value: str, flag: str = "--custom-generate-function-path") -> list[Finding]:
    """Rule: the value is a dotted path `package.module.function`; slime imports everything before the last
    dot and reads the rest as an attribute, so `module:function`, a file path or a bare name fail
    (slime/utils/misc.py:39-48@624b824a; one doc shows the colon form: docs/zh/get_started/quick_start.md:550)."""
    v = (value or "").strip()
    if not v:
        return [Finding(code="FP001", severity=Severity.ERROR, flag=flag, source=LOAD_FUNCTION_SOURCE, card=CARD,
                        message="No function path given.")]
    if ":" in v:
        fixed = v.replace(":", ".")
        return [Finding(code="FP002", severity=Severity.ERROR, flag=flag, source=LOAD_FUNCTION_SOURCE, card=CARD,
                        message=(f"'{v}' uses a colon. slime splits on the last dot only, so it would import "
                                 f"'{v.rpartition('.')[0] or v}' and look for an attribute with a colon in it. "
                                 f"One of slime's docs shows this form ({COLON_DOC_SOURCES[1]}); it fails."),
                        fix=f"{flag} {fixed}")]
    if "/" in v or "\\" in v or v.endswith(".py"):
        return [Finding(code="FP003", severity=Severity.ERROR, flag=flag, source=LOAD_FUNCTION_SOURCE, card=CARD,
                        message=f"'{v}' looks like a file path; slime needs an importable module path.",
                        fix=("put the file's folder on PYTHONPATH (the ray job's runtime env) and give "
                             "module.function, e.g. my_agent.generate"))]
    if "." not in v:
        return [Finding(code="FP004", severity=Severity.ERROR, flag=flag, source=LOAD_FUNCTION_SOURCE, card=CARD,
                        message=f"'{v}' has no module part; slime would try to import an empty module name.",
                        fix=f"{flag} your_module.{v}")]
    bad = [p for p in v.split(".") if not p.isidentifier() or keyword.iskeyword(p)]
    if bad:
        return [Finding(code="FP005", severity=Severity.ERROR, flag=flag, source=LOAD_FUNCTION_SOURCE, card=CARD,
                        message=f"'{v}' has parts that are not Python names: {', '.join(repr(b) for b in bad)}.",
                        fix="module and function names use letters, digits and underscores (no dashes)")]
    return []


def module_name_for(filename: str) -> str | None:
    """The import name of an uploaded file ('my_agent.py' -> 'my_agent'), or None if Python cannot import it."""
    stem = PurePosixPath(filename.replace("\\", "/")).name
    if not stem.endswith(".py"):
        return None
    stem = stem[:-3]
    return stem if stem.isidentifier() and not keyword.iskeyword(stem) else None


def suggested_path(filename: str | None, function_name: str = DEFAULT_FUNCTION) -> str | None:
    """The flag value for a function in an uploaded file, assuming the file's folder is on PYTHONPATH."""
    if not filename:
        return None
    module = module_name_for(filename)
    return f"{module}.{function_name}" if module else None


def check_upload_name(filename: str) -> Finding | None:
    """Rule: the module file must have an importable name (letters, digits, underscores; ends in .py)."""
    if module_name_for(filename) is not None:
        return None
    return Finding(code="FP006", severity=Severity.ERROR, source=LOAD_FUNCTION_SOURCE, card=CARD,
                   message=(f"'{PurePosixPath(filename).name}' is not an importable module name, so no dotted "
                            "path can reach it."),
                   fix="rename it to letters, digits and underscores ending in .py, e.g. my_agent.py")


def custom_args_words(generate_path: str, rm_path: str | None, config_path: str | None) -> list[str]:
    """The CUSTOM_ARGS words: the generate function, the reward function, and an optional YAML config."""
    words = ["--custom-generate-function-path", generate_path]
    if rm_path:
        words += ["--custom-rm-path", rm_path]
    if config_path:
        words += ["--custom-config-path", config_path]
    return words
