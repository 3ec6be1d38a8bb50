"""Entry point and GPU layout rules (ENTRY0xx, GPU0xx): what train.py / train_async.py accept and how many
GPUs slime's placement group asks Ray for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.findings import Finding
from core.launch.rules.context import RuleContext
from core.launch.rules.registry import ERR, INFO, WARN, Skip, register, rule
from core.pins import slime_source


@rule("ENTRY001", "train_async.py refuses --colocate", ERR, slime_source("train_async.py", 11))
def async_refuses_colocate(ctx: RuleContext) -> Iterable[Finding]:
    """train_async.py asserts that --colocate is off: generation and training overlap on separate GPUs."""
    if ctx.entry == "train_async.py" and ctx.is_set("--colocate"):
        yield ctx.hit("ENTRY001", "train_async.py stops at start with --colocate: async training overlaps generation "
                      "and training, so they need separate GPUs.", flag="--colocate",
                      fix="remove --colocate and set --rollout-num-gpus, or launch train.py")


def gpu_layout(ctx: RuleContext) -> dict[str, Any]:
    """How many GPUs slime's placement group asks Ray for (slime/ray/placement_group.py:100).

    Counts that cannot be resolved are None; the mode (colocated, disaggregated, ...) needs only switches.
    """
    unknown: Skip | None = None
    try:
        actor: int | None = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
    except Skip as skip:
        actor, unknown = None, skip
    colocate = ctx.is_set("--colocate")
    try:
        rollout = ctx.need("--rollout-num-gpus")
        rollout_known = True
    except Skip as skip:
        rollout, rollout_known, unknown = None, False, unknown or skip
    ctx.layout_unknown = unknown

    def total(*parts: int | None) -> int | None:
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]

    if ctx.is_set("--debug-train-only") or ctx.need("--load-debug-rollout-data") is not None:
        return {"mode": "debug-train-only", "actor_gpus": actor, "rollout_gpus": 0, "total": actor}
    if ctx.need("--rollout-external-engine-addrs") is not None:
        return {"mode": "external rollout", "actor_gpus": actor, "rollout_gpus": 0, "total": actor}
    if ctx.is_set("--debug-rollout-only"):
        r = actor if colocate and rollout is None and rollout_known else rollout
        return {"mode": "debug-rollout-only", "actor_gpus": 0, "rollout_gpus": r, "total": r}
    if colocate:
        r = actor if rollout is None and rollout_known else rollout
        both = None if actor is None or r is None else max(actor, r)
        return {"mode": "colocated", "actor_gpus": actor, "rollout_gpus": r, "total": both}
    return {"mode": "disaggregated", "actor_gpus": actor, "rollout_gpus": rollout, "rollout_known": rollout_known,
            "total": total(actor, rollout)}


@rule("GPU001", "Disaggregated run without --rollout-num-gpus", ERR,
      slime_source("slime/ray/placement_group.py", 117))
def disaggregated_needs_rollout_gpus(ctx: RuleContext) -> Iterable[Finding]:
    """Without --colocate, the placement group adds --rollout-num-gpus to the actor GPUs; it must be given."""
    layout = gpu_layout(ctx)
    ctx.layout = layout
    if layout["mode"] == "disaggregated" and layout["rollout_gpus"] is None and layout["rollout_known"]:
        yield ctx.hit("GPU001", "Without --colocate, training and generation use separate GPUs and slime needs "
                      "--rollout-num-gpus to size the placement group; without it the launch fails adding None to "
                      "the actor GPU count.", fix="add --rollout-num-gpus N, or --colocate to share the GPUs")


@rule("GPU002", "Rollout GPUs do not divide into engines", WARN, slime_source("slime/ray/rollout.py", 1035))
def rollout_gpus_make_whole_engines(ctx: RuleContext) -> Iterable[Finding]:
    """slime starts rollout GPUs // min(GPUs per engine, --num-gpus-per-node) node processes (rollout.py:1035);
    an engine wider than a node is GPUs per engine // GPUs per node of them in a row, the i-th process taking
    node rank i % that (sglang_engine.py:523-524). GPUs left over idle, and node processes that do not make a
    whole engine belong to an engine that can never assemble."""
    layout = ctx.layout or gpu_layout(ctx)
    rollout = layout.get("rollout_gpus")
    if not rollout or layout["mode"] in ("external rollout", "debug-train-only"):
        return
    if ctx.need("--sglang-config") is not None or ctx.need("--prefill-num-servers") is not None:
        return
    per_engine = ctx.need("--rollout-num-gpus-per-engine", 1)
    per_node = ctx.need("--num-gpus-per-node", 8)
    on_node = min(per_engine, per_node)
    if on_node <= 0:
        return
    processes, idle = divmod(rollout, on_node)
    nodes_per_engine = max(1, per_engine // per_node)
    engines, partial = divmod(processes, nodes_per_engine)
    if engines == 0:
        yield ctx.hit("GPU002", f"{rollout} rollout GPU(s) cannot hold one engine of {per_engine} GPUs "
                      f"(--rollout-num-gpus-per-engine {per_engine}); no SGLang engine would start.",
                      flag="--rollout-num-gpus-per-engine", severity=ERR,
                      fix=f"use --rollout-num-gpus-per-engine {rollout} or fewer, or give more rollout GPUs")
    elif partial:
        unused = rollout - engines * per_engine
        yield ctx.hit("GPU002", f"{rollout} rollout GPUs hold {engines} whole engine(s) of {per_engine} GPUs "
                      f"({nodes_per_engine} nodes of {on_node}); on the other {unused} GPUs slime starts {partial} "
                      f"node process(es) of one more engine, which needs {nodes_per_engine} and so never assembles.",
                      flag="--rollout-num-gpus-per-engine", severity=ERR,
                      source=slime_source("slime/backends/sglang_utils/sglang_engine.py", 523),
                      fix=f"use a multiple of {per_engine} rollout GPUs ({engines * per_engine} or "
                      f"{(engines + 1) * per_engine})")
    elif idle:
        yield ctx.hit("GPU002", f"{rollout} rollout GPUs make {engines} engine(s) of {on_node} GPUs; {idle} GPU(s) "
                      "stay idle.", flag="--rollout-num-gpus-per-engine",
                      fix=f"use a multiple of {on_node} rollout GPUs ({engines * on_node} or {(engines + 1) * on_node})")


@rule("GPU003", "More GPUs than the profile has", ERR, slime_source("slime/ray/placement_group.py", 123))
def gpu_total_fits_profile(ctx: RuleContext) -> Iterable[Finding]:
    """The placement group asks Ray for all GPUs at once and waits (without a time limit) until they exist.

    The total comes from the layout call (slime/ray/placement_group.py:123); one bundle per GPU is requested
    in a single placement group (:47-48) and the wait loop has no time limit (:60).
    """
    have = ctx.options.gpus
    if have is None:
        return
    layout = ctx.layout or gpu_layout(ctx)
    need = layout.get("total")
    if need is None:
        if ctx.layout_unknown is not None:
            raise ctx.layout_unknown
        return
    detail = (f"{layout['mode']}: actor {layout['actor_gpus']}" +
              (f" + rollout {layout['rollout_gpus']}" if layout["mode"] == "disaggregated" else
               f", rollout {layout['rollout_gpus']} on the same GPUs" if layout["mode"] == "colocated" else ""))
    if need > have:
        given = ctx.options.gpus_from
        yield ctx.hit("GPU003", f"The run asks Ray for {need} GPUs ({detail}) but you have {have} ({given}); the "
                      "placement group would wait for GPUs that never come.", flag="--actor-num-gpus-per-node",
                      fix="lower --actor-num-nodes / --actor-num-gpus-per-node / --rollout-num-gpus, or correct "
                      + ("the GPU count in your profile" if given == "your profile" else given))
    elif need < have:
        yield ctx.hit("GPU003", f"The run uses {need} of your {have} GPUs ({detail}).", severity=INFO)


@rule("GPU004", "--num-gpus-per-node does not match the GPUs per node the run uses", ERR,
      slime_source("slime/backends/sglang_utils/sglang_engine.py", 22))
def gpus_per_node_match(ctx: RuleContext) -> Iterable[Finding]:
    """slime places SGLang engines as if every node had --num-gpus-per-node GPUs (default 8): an engine's
    first GPU is (actor GPUs, when disaggregated, + rank x its GPUs on a node) modulo --num-gpus-per-node
    (slime/backends/sglang_utils/sglang_engine.py:21-28@624b824a), and the rollout manager splits engines
    into node processes by --num-gpus-per-node (slime/ray/rollout.py:1034-1035@624b824a). A training actor on several nodes
    takes --actor-num-gpus-per-node on each, which tells how many GPUs a node really has; when the two
    differ, engines get GPU ids the node does not have (fewer GPUs) or pile onto its first GPUs (more).
    When the user's profile says how many GPUs their nodes have (`CheckOptions.gpus_per_node`), that count is
    the one a node really has, also for a single-node actor whose rollout GPUs spread over more nodes."""
    layout = ctx.layout or gpu_layout(ctx)
    if layout["mode"] in ("external rollout", "debug-train-only", "debug-rollout-only"):
        return
    nodes, actor_per_node = ctx.need("--actor-num-nodes", 1), ctx.need("--actor-num-gpus-per-node", 8)
    declared = ctx.need("--num-gpus-per-node", 8)
    rollout = layout.get("rollout_gpus")
    profile_per_node = ctx.options.gpus_per_node
    if not actor_per_node or not declared or not rollout:
        return
    default = "" if ctx.fact("--num-gpus-per-node").present else " (its default)"
    if profile_per_node is not None:
        per_node = profile_per_node
        who = f"Your nodes have {per_node} GPUs each ({ctx.options.gpus_per_node_from})"
        if actor_per_node > per_node:
            yield ctx.hit("GPU004", f"{who}, but --actor-num-gpus-per-node is {actor_per_node}: Ray places the "
                          f"training actors {actor_per_node} to a node and waits for a node that big, which never "
                          "comes.", flag="--actor-num-gpus-per-node",
                          fix=f"use at most {per_node} GPUs per node for the actor (more --actor-num-nodes), or "
                          "correct " + ("the GPUs per node in your profile" if ctx.options.gpus_per_node_from ==
                                        "your profile" else ctx.options.gpus_per_node_from))
            return
    elif nodes >= 2:
        per_node = actor_per_node
        who = f"The actor runs {per_node} GPUs on each of {nodes} nodes"
    else:
        return
    if per_node == declared:
        return
    per_engine = ctx.need("--rollout-num-gpus-per-engine", 1) or 1
    on_node = min(declared, per_engine)
    offset = 0 if layout["mode"] == "colocated" else nodes * actor_per_node
    firsts = [(offset + rank * on_node) % declared for rank in range(rollout // max(on_node, 1))]
    spans = nodes >= 2 or offset + rollout > declared  # some engine needs a GPU id past --num-gpus-per-node
    if per_node < declared and any(first + on_node > per_node for first in firsts):
        worst = max(first + on_node - 1 for first in firsts)
        yield ctx.hit("GPU004", f"{who}, but --num-gpus-per-node is "
                      f"{declared}{default}: slime would give SGLang engines GPU ids up to {worst}, which a node of "
                      f"{per_node} GPUs does not have, so engines fail to start or land on the wrong GPUs.",
                      flag="--num-gpus-per-node", fix=f"add --num-gpus-per-node {per_node}")
    elif per_node > declared and spans:
        yield ctx.hit("GPU004", f"{who}, but --num-gpus-per-node is "
                      f"{declared}{default}: slime counts engine GPU ids modulo {declared}, so engines share GPUs 0 to "
                      f"{declared - 1} of a node and GPUs {declared} to {per_node - 1} get none.",
                      flag="--num-gpus-per-node", severity=WARN, fix=f"add --num-gpus-per-node {per_node}")


register("ENTRY002", "No entry known", INFO, slime_source("train.py"))
