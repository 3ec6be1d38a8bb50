"""Entry point and GPU layout rules (ENTRY0xx, GPU0xx): what train.py / train_async.py accept and how many
GPUs slime's placement group asks Ray for (the count itself is `derivations.placement`, which every GPU rule
computes for itself; `gpu_layout` is re-exported here for callers of the layout).
"""

from __future__ import annotations

from collections.abc import Iterable

from core.findings import Finding
from core.launch.rules.context import RuleContext
from core.launch.rules.derivations import gpu_layout, placement
from core.launch.rules.registry import ERR, INFO, WARN, register, rule
from core.pins import slime_source


@rule("ENTRY001", slime_source("train_async.py", 11))
def async_refuses_colocate(ctx: RuleContext) -> Iterable[Finding]:
    """train_async.py asserts that --colocate is off: generation and training overlap on separate GPUs."""
    if ctx.entry == "train_async.py" and ctx.is_set("--colocate"):
        yield ctx.hit("ENTRY001", "train_async.py stops at start with --colocate: async training overlaps generation "
                      "and training, so they need separate GPUs.", flag="--colocate",
                      fix="remove --colocate and set --rollout-num-gpus, or launch train.py")


@rule("GPU001", slime_source("slime/ray/placement_group.py", 117))
def disaggregated_needs_rollout_gpus(ctx: RuleContext) -> Iterable[Finding]:
    """Without --colocate, the placement group adds --rollout-num-gpus to the actor GPUs; it must be given."""
    layout = gpu_layout(ctx)
    if layout["mode"] == "disaggregated" and layout["rollout_gpus"] is None and layout["rollout_known"]:
        yield ctx.hit("GPU001", "Without --colocate, training and generation use separate GPUs and slime needs "
                      "--rollout-num-gpus to size the placement group; without it the launch fails adding None to "
                      "the actor GPU count.", fix="add --rollout-num-gpus N, or --colocate to share the GPUs")


@rule("GPU002", slime_source("slime/ray/rollout.py", 1035))
def rollout_gpus_make_whole_engines(ctx: RuleContext) -> Iterable[Finding]:
    """slime starts rollout GPUs // min(GPUs per engine, --num-gpus-per-node) node processes (rollout.py:1035);
    an engine wider than a node is GPUs per engine // GPUs per node of them in a row, the i-th process taking
    node rank i % that (sglang_engine.py:523-524). GPUs left over idle, and node processes that do not make a
    whole engine belong to an engine that can never assemble."""
    layout = gpu_layout(ctx)
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


@rule("GPU003", slime_source("slime/ray/placement_group.py", 123))
def gpu_total_fits_profile(ctx: RuleContext) -> Iterable[Finding]:
    """The placement group asks Ray for all GPUs at once and waits (without a time limit) until they exist.

    The total comes from the layout call (slime/ray/placement_group.py:123); one bundle per GPU is requested
    in a single placement group (:47-48) and the wait loop has no time limit (:60).
    """
    have = ctx.options.gpus
    if have is None:
        return
    where = placement(ctx)
    layout = where.counts
    need = layout.get("total")
    if need is None:
        if where.unknown is not None:
            raise where.unknown
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


@rule("GPU004", slime_source("slime/ray/rollout.py", 842))
def gpus_per_node_match(ctx: RuleContext) -> Iterable[Finding]:
    """slime hands out SGLang engines' addresses and ports as if every node had --num-gpus-per-node GPUs
    (default 8): it cuts the engines into groups of --num-gpus-per-node // --rollout-num-gpus-per-engine, every
    engine of a group gets the host of the group's first engine, and each group starts its port search at the
    same base port (slime/ray/rollout.py:842-890@624b824a). An engine's GPU comes from the placement group
    (slime/ray/rollout.py:133-134@624b824a); the modulo in get_base_gpu_id is only a fallback. So with fewer
    GPUs per node than the flag says, a group spans two nodes and the engines on the second are given the first
    node's address ("Cannot assign requested address"); with more, two groups share a node and pick the same
    ports. A training actor on several nodes takes --actor-num-gpus-per-node on each, which tells how many GPUs
    a node really has; the user's profile (`CheckOptions.gpus_per_node`) says it for a single-node actor too."""
    layout = gpu_layout(ctx)
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
            yield ctx.hit("GPU004", f"{who}, but --actor-num-gpus-per-node is {actor_per_node}. Ray's PACK "
                          "placement group spreads the training GPUs over several nodes, so the run still starts, "
                          f"but each actor node is not the {actor_per_node}-GPU node the flag describes.",
                          flag="--actor-num-gpus-per-node", severity=WARN,
                          fix=f"use at most {per_node} GPUs per node for the actor (more --actor-num-nodes), or "
                          "correct " + ("the GPUs per node in your profile" if ctx.options.gpus_per_node_from ==
                                        "your profile" else ctx.options.gpus_per_node_from))
    elif nodes >= 2:
        per_node = actor_per_node
        who = f"The actor runs {per_node} GPUs on each of {nodes} nodes"
    else:
        return
    if per_node == declared:
        return
    per_engine = ctx.need("--rollout-num-gpus-per-engine", 1) or 1
    if per_engine > min(per_node, declared):
        return  # an engine spans nodes: slime places those by node, not by these groups
    per_group = max(1, declared // per_engine)
    offset = 0 if layout["mode"] == "colocated" else nodes * actor_per_node
    node_of = [(offset + rank * per_engine) // per_node for rank in range(rollout // per_engine)]
    groups = [node_of[i:i + per_group] for i in range(0, len(node_of), per_group)]
    split = next((g for g in groups if len(set(g)) > 1), None)
    if split is not None:
        yield ctx.hit("GPU004", f"{who}, but --num-gpus-per-node is {declared}{default}: slime gives the "
                      f"addresses of {per_group} engines at a time as if they shared a node, so engines on node "
                      f"{split[-1]} are told to start on node {split[0]}'s address and fail with \"Cannot assign "
                      "requested address\".", flag="--num-gpus-per-node", fix=f"add --num-gpus-per-node {per_node}")
        return
    firsts = [g[0] for g in groups]
    shared = next((n for n in firsts if firsts.count(n) > 1), None)
    if shared is not None:
        yield ctx.hit("GPU004", f"{who}, but --num-gpus-per-node is {declared}{default}: slime cuts node "
                      f"{shared}'s engines into {firsts.count(shared)} groups of {per_group} and starts each "
                      "group's port search at the same port, so two engines on that node are given the same "
                      "ports and the second cannot start (\"address already in use\").",
                      flag="--num-gpus-per-node", fix=f"add --num-gpus-per-node {per_node}")


register("ENTRY002", slime_source("train.py"))
