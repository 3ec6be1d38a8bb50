"""Batch-size calculator: what slime and Megatron do with exactly these batch sizes and this GPU layout."""

from __future__ import annotations

import streamlit as st

from core.batch import BATCH_CARD, BatchPlan, BatchPlanInputs, plan_batch
from core.memory import MAX_GPUS
from ui.common import active_profile, cited, ensure_app_frame, plain
from ui.memory import InputMemory

ensure_app_frame()

PREFILL_KEY = "bc_prefill"  # set by other pages (e.g. the launch-script checker) before switching here
_BOX = {"ok": st.success, "info": st.info, "warning": st.warning, "error": st.error}
_ICON = {"ok": ":material/check_circle:", "info": ":material/info:", "warning": ":material/warning:",
         "error": ":material/error:"}


LINK_KEYS = ("rbs", "n", "gbs", "steps", "gpus", "tp", "pp", "cp", "mbs", "num_rollout", "dynamic")
DEFAULTS: dict[str, int | bool | None] = {"rbs": 32, "n": 8, "gbs": 256, "steps": None, "tp": 1, "pp": 1, "cp": 1,
                                          "mbs": None, "num_rollout": None, "dynamic": False}


def _kept_value(value: object) -> bool:
    return isinstance(value, bool) or value is None or (isinstance(value, int) and 0 <= value <= 10**9)


class Inputs:
    """The calculator's inputs: kept per profile in the store when there is one, else for this session.
    Every value is in session state before its widget exists, so no widget gets a second default."""

    def __init__(self) -> None:
        profile = active_profile()
        self.memory = InputMemory("batch_calculator", "bc", profile) if profile else None
        defaults = {**DEFAULTS, "gpus": profile.gpus_total if profile else None}
        for name, default in defaults.items():
            if self.memory is not None:
                self.memory.seed(name, default, valid=_kept_value)
            else:
                st.session_state.setdefault(f"bc_{name}", default)
        handed = st.session_state.pop(PREFILL_KEY, None) or numbers_from_link()
        for name, value in (handed or {}).items():
            st.session_state[f"bc_{name}"] = value
            if self.memory is not None:
                self.memory.remember(name, value)

    def number(self, column, label: str, name: str, *, minimum: int = 1, maximum: int = 10**9,
               help: str | None = None) -> int | None:
        # value=None lets a box be empty (the flag is absent); the value itself lives in session state
        return column.number_input(label, min_value=minimum, max_value=maximum, value=None, step=1,
                                   key=f"bc_{name}", help=help, placeholder="absent", on_change=self._changed,
                                   args=(name,))

    def toggle(self, column, label: str, name: str, help: str) -> bool:
        return column.toggle(label, key=f"bc_{name}", help=help, on_change=self._changed, args=(name,))

    def _changed(self, name: str) -> None:
        if self.memory is not None:
            self.memory.remember(name, st.session_state.get(f"bc_{name}"))


def numbers_from_link() -> dict[str, int | bool | None] | None:
    """Numbers carried by a link (the batch-size card's examples): `?rbs=32&n=8&steps=3&gpus=8&tp=2`.
    Applied once per distinct link; anything that is not a whole number in range is ignored, and said so."""
    query = {k: st.query_params[k] for k in LINK_KEYS if k in st.query_params}
    if not query or st.session_state.get("bc_link_applied") == query:
        return None
    st.session_state["bc_link_applied"] = query
    numbers: dict[str, int | bool | None] = {}
    for key, text in query.items():
        if key == "dynamic":
            numbers[key] = text == "1"
        elif text == "":
            numbers[key] = None  # the flag is absent
        elif text.isascii() and text.isdigit() and len(text) <= 10 and int(text) <= 10**9:
            numbers[key] = int(text)
        else:
            st.session_state["bc_link_ignored"] = key
    return numbers


def show_plan(plan: BatchPlan) -> None:
    if plan.problem:
        st.error(plain(plan.problem), icon=":material/error:")
        return
    eq = plan.equation
    headline = {"ok": "slime and Megatron accept these numbers.", "info": "Accepted, with a note below.",
                "warning": "Accepted, but not what you probably want: see below.",
                "error": "slime or Megatron would stop at start-up with these numbers."}[plan.status]
    _BOX[plan.status](headline, icon=_ICON[plan.status])
    st.markdown("#### The batch equation")
    st.code(eq.equation, language=None)
    st.markdown(plain(eq.slime_behaviour))
    for note in eq.assumptions:
        st.caption(plain(note))
    if eq.fixes:
        st.markdown("**Exact fixes** (each one, alone or with the flag it names, makes the numbers fit):")
        st.markdown("\n".join(f"- {plain(f.message)}" for f in eq.fixes))
    st.caption(f"Source: {cited(eq.source)}")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Samples per rollout", eq.samples_per_rollout)
    m2.metric("Global batch slime uses", eq.effective_global_batch_size if eq.effective_global_batch_size is not None
              else "unknown")
    m3.metric("Optimizer steps per rollout", eq.steps_per_rollout if eq.steps_per_rollout is not None else "unknown")
    m4.metric("Samples dropped per rollout", eq.dropped_samples_per_rollout
              if eq.dropped_samples_per_rollout is not None else "unknown")
    if plan.layout:
        st.markdown("#### Megatron's start-up checks for this layout")
        for check in plan.layout:
            _BOX[check.status](plain(check.message), icon=_ICON[check.status])
            if check.fixes:
                st.markdown("\n".join(f"- {plain(f)}" for f in check.fixes))
            st.caption(f"Source: {cited(check.source)}")
    if plan.total_optimizer_steps is not None:
        st.metric(f"Optimizer steps over {plan.inputs.num_rollout} rollouts", plan.total_optimizer_steps)
    for note in plan.notes:
        st.caption(plain(note))


st.title("Batch-size calculator")
st.markdown(
    "One rollout makes `--rollout-batch-size` x `--n-samples-per-prompt` samples; training splits them into "
    "optimizer steps of `--global-batch-size`. Enter what your launch sets (leave a box empty when the flag is "
    "absent) and see exactly what slime derives, what it drops, and whether Megatron accepts the layout.")
st.page_link("pages/knowledge.py", label="Read the batch-size card", icon=":material/menu_book:",
             query_params={"card": BATCH_CARD})
inputs = Inputs()
if handed_from := st.session_state.pop("bc_prefill_from", None):
    st.info(f"Every field below is set from {plain(handed_from)}: an empty box is a flag it does not set "
            "(slime's or Megatron's default applies).", icon=":material/input:")
if ignored := st.session_state.pop("bc_link_ignored", None):
    st.caption(f"The link's value for '{plain(ignored)}' is not a whole number in range, so it was left out.")

st.markdown("#### Batch sizes")
c1, c2, c3, c4 = st.columns(4)
rbs = inputs.number(c1, "--rollout-batch-size", "rbs", help="prompts per rollout (required by slime)")
n = inputs.number(c2, "--n-samples-per-prompt", "n", help="responses per prompt; slime's default is 1")
gbs = inputs.number(c3, "--global-batch-size", "gbs", help="samples per optimizer step; empty when absent")
steps = inputs.number(c4, "--num-steps-per-rollout", "steps", help="empty when absent")
st.markdown("#### Training layout")
l1, l2, l3, l4 = st.columns(4)
gpus = inputs.number(l1, "Training GPUs", "gpus", maximum=MAX_GPUS,
              help="GPUs the actor trains on (all of them when colocated); pre-filled from your profile")
tp = inputs.number(l2, "TP (--tensor-model-parallel-size)", "tp")
pp = inputs.number(l3, "PP (--pipeline-model-parallel-size)", "pp")
cp = inputs.number(l4, "CP (--context-parallel-size)", "cp")
o1, o2, o3 = st.columns(3)
mbs = inputs.number(o1, "--micro-batch-size", "mbs", help="empty: slime's default 1")
num_rollout = inputs.number(o2, "--num-rollout", "num_rollout", minimum=0, help="rollouts in the run, for total steps")
dynamic = inputs.toggle(o3, "--use-dynamic-batch-size", "dynamic",
                        help="Megatron still checks the global batch against --micro-batch-size at start-up")

plan = plan_batch(BatchPlanInputs(
    rollout_batch_size=rbs, n_samples_per_prompt=n, global_batch_size=gbs, num_steps_per_rollout=steps,
    training_gpus=gpus, tensor_parallel=tp or 1, pipeline_parallel=pp or 1, context_parallel=cp or 1,
    micro_batch_size=mbs, dynamic_batching=dynamic, num_rollout=num_rollout))
show_plan(plan)
st.caption("The same calculation from a shell: `slime-assistant batch --rollout-batch-size N ... --format json`.")
