"""Will it fit? Memory per GPU of training and rollout, host memory and time per rollout, before booking GPUs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.model_scripts import load_model_scripts, match_model
from core.plan import PlanError, load_gpus, phase_figure, plan_script, plan_values, sample_line, stage_figure
from ui.common import active_profile, cited, ensure_app_frame, plain, show_findings, show_table

ensure_app_frame()

PREFILL_KEY = "plan_prefill"  # another page (the launch-script checker) hands {"script", "gpu", "gpus"} here
GIB = 1 << 30
KNOBS = {  # widget key -> (flag, label, default)
    "tp": ("--tensor-model-parallel-size", "TP", 1), "pp": ("--pipeline-model-parallel-size", "PP", 1),
    "ep": ("--expert-model-parallel-size", "EP", 1), "cp": ("--context-parallel-size", "CP", 1),
    "tokens": ("--max-tokens-per-gpu", "Tokens per GPU (--max-tokens-per-gpu)", 9216),
    "engine": ("--rollout-num-gpus-per-engine", "GPUs per SGLang engine", 1),
    "response": ("--rollout-max-response-len", "Response length", 8192),
    "rbs": ("--rollout-batch-size", "Rollout batch size", 32),
    "n": ("--n-samples-per-prompt", "Samples per prompt", 8),
}

st.title("Will it fit?")
st.caption("Training memory per GPU (largest pipeline stage), SGLang's weights and KV pool per engine GPU, what the "
           "host keeps, and the training time of one rollout. Every term shows its formula and the upstream line "
           "it follows; the estimate carries a ±15% band (fragmentation, NCCL buffers, kernels' workspaces).")

profile = active_profile()
scripts = load_model_scripts()
names = [s.name for s in scripts]
gpu_names = [g.name for g in load_gpus()]
if "plan_model" not in st.session_state:
    match = match_model(profile.model) if profile else None
    st.session_state["plan_model"] = match.scripts[0].name if match and match.status == "exact" else "qwen3-4B"
    st.session_state["plan_gpus"] = profile.gpus_total if profile else 8
    st.session_state["plan_gpu"] = profile.gpu_model if profile and profile.gpu_model in gpu_names else "H100-80GB"
    for key, (_, _, default) in KNOBS.items():
        st.session_state[f"plan_{key}"] = default
    st.session_state["plan_fraction"] = 0.7
    st.session_state["plan_colocate"] = True

handed = st.session_state.pop(PREFILL_KEY, None)
if isinstance(handed, str):
    handed = {"script": handed}
if isinstance(handed, dict) and isinstance(handed.get("script"), str):
    st.session_state["plan_script"] = handed["script"]
    st.session_state["plan_source"] = "a launch script"
    if handed.get("gpu") in gpu_names:
        st.session_state["plan_gpu"] = handed["gpu"]
    if isinstance(handed.get("gpus"), int) and handed["gpus"] >= 1:
        st.session_state["plan_gpus"] = handed["gpus"]
    st.info("Planning the launch script you checked on the launch-script checker, with its GPUs.",
            icon=":material/input:")

top = st.columns([2, 1, 1])
gpu = top[0].selectbox("GPU", gpu_names, key="plan_gpu")
gpus = top[1].number_input("Training GPUs", min_value=1, max_value=65536, step=1, key="plan_gpus")
top[2].toggle("Colocated (--colocate)", key="plan_colocate")
source = st.radio("Plan", ["a slime model script with these numbers", "a launch script"], horizontal=True,
                  key="plan_source")

try:
    if source == "a launch script":
        text = st.text_area("Launch script (the flags are read statically; nothing runs)", key="plan_script",
                            height=200, max_chars=200_000)
        if not text.strip():
            st.info("Paste a launch script, or plan a slime model script with the numbers above.")
            st.stop()
        plan = plan_script(text, gpu, gpus=int(gpus))
    else:
        model = st.selectbox("Model script (scripts/models)", names, key="plan_model")
        cols = st.columns(5)
        numbers = {}
        for i, (key, (flag, label, _)) in enumerate(KNOBS.items()):
            numbers[flag] = str(cols[i % 5].number_input(label, min_value=1, max_value=10**7, step=1,
                                                         key=f"plan_{key}"))
        fraction = st.slider("--sglang-mem-fraction-static", 0.3, 0.95, step=0.01, key="plan_fraction")
        chosen = next(s for s in scripts if s.name == model)
        values = {f"--{k}": v for k, v in chosen.values.items()}
        values |= numbers | {"--sglang-mem-fraction-static": str(fraction), "--use-dynamic-batch-size": None,
                             "--sequence-parallel": None, "--accumulate-allreduce-grads-in-fp32": None,
                             "--actor-num-nodes": "1", "--actor-num-gpus-per-node": str(int(gpus)),
                             "--recompute-granularity": "full", "--recompute-method": "uniform",
                             "--recompute-num-layers": "1"}
        if st.session_state["plan_colocate"]:
            values["--colocate"] = None
        else:
            values["--rollout-num-gpus"] = str(int(gpus))
        plan = plan_values(values, gpu)
except PlanError as exc:
    st.error(plain(str(exc)))
    st.stop()

tr, ro = plan.training, plan.rollout
m = st.columns(4)
m[0].metric("Training peak per GPU", f"{tr.peak_bytes / GIB:.1f} GiB",
            help=f"band {tr.low_bytes / GIB:.1f}-{tr.high_bytes / GIB:.1f} GiB, stage {tr.stage}")
m[1].metric("GPU memory", f"{plan.gpu.memory_bytes / GIB:.1f} GiB")
m[2].metric("KV pool per engine (tokens)", f"{ro.kv_pool_tokens:,}" if ro else "none")
m[3].metric(f"Training s / rollout ({plan.time.mfu:.0%} MFU)", f"{plan.time.seconds_per_rollout:.0f}")
show_findings(plan.verdicts, key_prefix="plan", empty_message="It fits: no PLAN finding.")
st.plotly_chart(phase_figure(plan), key="plan_phases", config={"displaylogo": False})
if len(tr.stages) > 1:
    st.plotly_chart(stage_figure(plan), key="plan_stages", config={"displaylogo": False})

st.subheader("Training terms (largest stage)")
show_table(pd.DataFrame([{"term": t.name, "GiB": f"{t.bytes / GIB:.2f}", "how": t.formula,
                          "exact": "yes" if t.exact else "estimate"} for t in tr.detail]))
st.markdown("Sources: " + " · ".join(dict.fromkeys(cited(t.source) for t in tr.detail)))
if (longest := sample_line(plan)) is not None:
    st.caption(plain(longest))
if ro is not None:
    st.subheader("Rollout per engine GPU")
    show_table(pd.DataFrame([{"term": t.name, "value": f"{t.bytes:,} B" if t.name == "kv_bytes_per_token" else
                              f"{t.bytes / GIB:.2f} GiB", "how": t.formula} for t in ro.detail]))
    st.write(f"{ro.concurrent_sequences} sequences of {ro.context_len} tokens fit at once across {ro.engines} "
             f"engine(s); one rollout asks for {ro.requested_sequences}.")
st.subheader("Host memory per node")
show_table(pd.DataFrame([{"term": t.name, "GiB": f"{t.bytes / GIB:.1f}", "how": t.formula}
                         for t in plan.host.detail]))
for note in plan.assumptions:
    st.caption(f"Assumed: {plain(note)}")
