"""Monitor training: load slime TensorBoard or W&B runs, plot them as TensorBoard does, and answer "is it working?"."""

import time

import streamlit as st

from core.memory import monitor_progress
from core.monitor import (
    DEFAULT_WEIGHT,
    FILTER_HELP,
    MAX_WEIGHT,
    SRC_DEFINE_METRIC,
    SRC_TB,
    SRC_TB_ARGS,
    SRC_WANDB_ARGS,
    X_AXIS_LABELS,
    MonitorProvider,
    UploadSlots,
    XAxis,
    checklist_tags,
    checklist_text,
    describe_found,
    draft_tensorboard_command,
    draft_tensorboard_flags,
    efficiency_verdicts,
    filter_tags,
    find_runs,
    group_of,
    ordered_tags,
    placeholder_figure,
    read_findings,
    still_allowed,
    table_csv,
)
from core.paths import PathRefused, resolve_allowed
from ui.common import (
    ensure_app_frame,
    get_store,
    plain,
    profile_caption,
    profile_or_guest,
    show_findings,
)
from ui.gpu import gpu_section, gpus_for, named_gpu_logs
from ui.memory import PageMemory
from ui.monitor import show_checklists, wandb_launch_arguments

ensure_app_frame()

MAX_CHARTS = 40
MIN_REFRESH_S = 5

st.title("Monitor training")
profile = profile_or_guest()  # works before the first-visit questions; invites them
profile_caption(profile)
memory = PageMemory("monitor", "mon", profile)
st.write("Load the TensorBoard logs or W&B run files of one or more slime runs to see their curves the way "
         "TensorBoard draws them, and a checklist that reads the curves for you. Files are only read, never changed; commands "
         "below are drafts for you to run.")

memory.done_caption()


if memory.reloaded or "mon_sources" not in st.session_state:  # [{"label", "path"}]: folders added, per profile
    st.session_state["mon_sources"] = still_allowed(memory.remembered("sources", []))
uploaded: UploadSlots = st.session_state.setdefault("mon_uploads", UploadSlots())  # one upload per box
provider: MonitorProvider = st.session_state.setdefault("mon_provider", MonitorProvider())  # runs read once

with st.expander("Turn TensorBoard logging on in slime", expanded=False):
    c1, c2 = st.columns(2)
    project = memory.widget(c1.text_input, "Project (--tb-project-name)", "tb_project", "slime")
    experiment = memory.widget(c2.text_input, "Experiment (--tb-experiment-name)", "tb_experiment",
                               f"{profile.model or 'my-model'}-grpo")
    st.code(draft_tensorboard_flags(project.strip() or "slime", experiment.strip() or "run1"), language="bash")
    st.caption(f"Add these to the launch script's arguments ({plain(SRC_TB_ARGS)}). slime then writes to "
               f"tensorboard_log/<project>/<experiment>, or to $TENSORBOARD_DIR when that is set "
               f"({plain(SRC_TB)}). Set the experiment name: without it each logging process stamps its own "
               "start time, so the rollout manager's and the trainer's files can land in different folders.")
    st.code(draft_tensorboard_command(f"tensorboard_log/{project.strip() or 'slime'}"), language="bash")
    st.caption("Or look at the same logs in TensorBoard itself (a draft: run it where the logs are).")

with st.expander("Where slime's W&B run files are", expanded=False):
    st.write("With `--use-wandb`, online or offline (`--wandb-mode offline`), W&B keeps every run's full history "
             "on the machine that trained: `wandb/run-<time>-<id>/run-<id>.wandb` (offline: "
             "`wandb/offline-run-<time>-<id>/`), under `--wandb-dir` or the directory slime was started from. "
             "slime's driver, rollout manager and trainer each write their own file of the same run; a resumed "
             "run adds a directory with the same id. Load the `.wandb` files, a zip of the `wandb/` folder, or "
             "the folder itself: the files are read here, W&B is never started and nothing is sent anywhere.")
    st.caption(f"Flags: {plain(SRC_WANDB_ARGS)}; each group is plotted against its own step metric "
               f"({plain(SRC_DEFINE_METRIC)}), as in TensorBoard.")

st.subheader("1. Load runs")
tab_files, tab_zip, tab_dir = st.tabs(["Upload event or W&B run files", "Upload a zip of run folders",
                                      "Folder on this machine"])
with tab_files:
    uploads = st.file_uploader("Event files (events.out.tfevents.*) of one run, or W&B run files (run-<id>.wandb)",
                               accept_multiple_files=True, key="mon_upload_files")
    upload_name = memory.widget(st.text_input, "Name for this run", "upload_name", "uploaded-run")
with tab_zip:
    zipped = st.file_uploader("A .zip of a run folder (or of tensorboard_log/<project>, or of a wandb/ folder)",
                              type=["zip"], key="mon_upload_zip")
with tab_dir:
    typed_dir = memory.widget(st.text_input, "Run folder, or a folder of runs (inside the configured roots)", "dir", "")
    if st.button("Add this folder", key="mon_dir_add"):
        try:
            allowed = resolve_allowed(typed_dir, want="dir")
        except PathRefused as exc:
            st.error(plain(str(exc)), icon=":material/block:")
        else:
            walk_notes: list[str] = []
            found = find_runs(allowed.path, notes=walk_notes)
            for note in walk_notes:
                st.warning(plain(note), icon=":material/account_tree:")
            if not found:
                st.error(f"No event files (names containing 'tfevents') and no W&B run files (*.wandb) in "
                         f"{plain(str(allowed.path))} or below.", icon=":material/folder_off:")
            else:
                st.caption(f"Found {describe_found(found)} in {plain(str(allowed.path))}.")
            for run in found:
                entry = run.model_dump()
                if entry not in st.session_state["mon_sources"]:
                    st.session_state["mon_sources"].append(entry)
            if found:
                memory.remember("sources", st.session_state["mon_sources"])
                st.session_state["mon_new_input"] = True


if uploaded.keep("files", tuple(f.file_id for f in uploads or []), lambda: [(u.name, u.getvalue()) for u in uploads]):
    st.session_state["mon_new_input"] = True  # an upload is the user's own input
if uploaded.keep("zip", (zipped.file_id,) if zipped is not None else (), lambda: [(zipped.name, zipped.getvalue())],
                 zip_name=zipped.name if zipped is not None else None):
    st.session_state["mon_new_input"] = True
upload_sources, notices = uploaded.sources(upload_name)
sources = [*st.session_state["mon_sources"], *upload_sources]
for n in notices:
    (st.error if n["level"] == "error" else st.warning)(plain(n["message"]), icon=":material/folder_zip:")

if st.session_state["mon_sources"] and st.button("Forget the folders added", key="mon_clear"):
    st.session_state["mon_sources"] = []
    memory.remember("sources", [])
    st.rerun()

if not sources:
    st.info("Upload event files or W&B run files, or a zip, or add a folder, to see the curves and the checklist.")
    st.plotly_chart(placeholder_figure("The curves appear here"), key="mon_fig_placeholder",  # loads plotly.js now
                    config={"displayModeBar": False, "staticPlot": True})
    st.stop()


def open_runs(sources: list[dict]) -> None:
    """The provider follows exactly these sources; the new ones are read with a progress bar."""
    progress = st.progress(0.0, text="Reading event files") if provider.to_open(sources) else None

    def on_progress(frac: float, name: str) -> None:
        progress.progress(frac, text=f"Reading {plain(name)}")

    for problem in provider.open(sources, cache=get_store().bulk_cache, on_progress=on_progress):
        if problem.kind == "wandb_proto":
            st.error(f"{plain(problem.label)}: {plain(problem.message)}", icon=":material/extension_off:")
        else:
            st.error(f"{plain(problem.label)}: {plain(problem.message)}.")
    if progress is not None:
        progress.empty()


open_runs(sources)

st.subheader("Follow the runs")
fc1, fc2, fc3 = st.columns([2, 2, 3])
live = memory.widget(fc1.toggle, "Refresh on its own", "follow", False,
                     help="Read what the runs wrote since the last look, every few seconds (only the new bytes are "
                          "read); switch off to pause.")
interval = memory.widget(fc2.number_input, "Every (seconds)", "follow_interval", 30, min_value=MIN_REFRESH_S,
                         max_value=3600, step=5)
if fc3.button("Refresh now", key="mon_refresh", icon=":material/refresh:"):
    pass  # the rerun itself refreshes
fc3.caption("Paused: the page shows the runs as last read." if not live else
            f"Following: every {int(interval)} s the checklist and charts update.")


named_gpu = named_gpu_logs(memory)  # GPU logs kept elsewhere (the run folders' own are found on their own)


@st.fragment(run_every=float(interval) if live else None)
def live_view() -> None:
    """The runs as they are now: refreshed (appended bytes only), then the checklist and the curves."""
    for name, reason in provider.refresh():
        st.warning(f"{plain(name)}: could not be read this time ({plain(reason)}).")
    runs = provider.runs()
    gpus = gpus_for(runs, named_gpu)  # W&B system metrics, GPU logs in the run folders, the listed ones
    gpu_verdicts = {name: g.verdict() for name, g in gpus.items()}
    st.session_state["mon_live"] = provider.verdicts(gpu_verdicts)
    changes, seen = provider.since_last_look(memory.remembered("seen", {}), gpu_verdicts, time.time())
    for name, text in changes:
        st.info(f"{plain(name)}: {plain(text)}", icon=":material/update:")
    if seen is not None:  # what the user saw of each run, kept per profile for the next visit (not an input change)
        memory.saved["seen"] = seen
        get_store().update_inputs(profile.name, "monitor", {"seen": seen})
    for name, line in provider.events():
        st.caption(plain(f"{name}, just now: {line}"))
    st.caption(f"Loaded {provider.described()}. " + " · ".join(
        f"{plain(r.name)}: {'W&B' if r.source == 'wandb' else 'TensorBoard'}, {len(r.files)} file(s), "
        f"{r.scalar_count()} scalars" for r in runs) + f" · read at {time.strftime('%H:%M:%S')}")

    findings = [f for run in runs for f in read_findings(run)]
    if findings:
        with st.expander(f"What could not be read, restarts, notes ({len(findings)})",
                         expanded=any(f.severity.value != "info" for f in findings)):
            show_findings(findings, key_prefix="mon_read")

    st.subheader("2. Is it working?")
    steps_override = memory.widget(st.number_input, "Optimizer steps per rollout (0 = work it out from the logs)",
                                   "steps_per_rollout", 0, min_value=0, max_value=100_000, step=1)
    num_rollout = memory.widget(st.number_input, "Rollouts in the run (--num-rollout, for the time to finish; 0 = "
                                "not said)", "num_rollout", 0, min_value=0, max_value=10**9, step=1)
    alignments = provider.alignments(int(steps_override) or None)
    results = st.session_state["mon_live"] = [  # judged as the refresh left them, the GPU check, MFU and ETA
        (r, vs + efficiency_verdicts(r, profile.gpu_model, int(num_rollout) or None)) for r, vs in st.session_state["mon_live"]]
    show_checklists(results, alignments)

    st.subheader("3. Curves")
    c1, c2, c3 = st.columns([2, 2, 1])
    pattern = memory.widget(c1.text_input, "Filter tags (words, * and ? wildcards)", "filter", "",
                            placeholder="reward kl entropy", help=FILTER_HELP)
    axis_labels = [X_AXIS_LABELS[a] for a in XAxis]
    axis_label = memory.widget(c2.selectbox, "x axis", "xaxis", axis_labels[0], options=axis_labels)
    axis = next(a for a in XAxis if X_AXIS_LABELS[a] == axis_label)
    ignore_outliers = memory.widget(c3.checkbox, "Ignore outliers", "outliers", False,
                                    help="y range from the 5th to the 95th percentile, as TensorBoard's option does")
    weight = memory.widget(st.slider, "Smoothing", "smoothing", DEFAULT_WEIGHT, min_value=0.0, max_value=MAX_WEIGHT,
                           step=0.001, help="TensorBoard's debiased exponential moving average; 0 = raw values")
    all_tags = ordered_tags(sorted({t for run in runs for t in run.tags}))
    tags, filter_problem = filter_tags(all_tags, pattern)
    if filter_problem:
        st.warning(plain(filter_problem))
    if not tags:
        st.info("No tag matches that filter.")
    checked = checklist_tags(tags)
    if not pattern.strip() and len(checked) < len(tags):  # the checklist's curves first, the rest on demand
        show_all = memory.widget(st.toggle, f"Show the other {len(tags) - len(checked)} curves", "show_all", False,
                                 help="The curves the checklist reads are drawn first; the others when asked "
                                      "(or type a filter).")
        if not show_all:
            tags = checked
    shown_tags = tags[:MAX_CHARTS]
    if len(tags) > MAX_CHARTS:
        st.caption(f"Showing the first {MAX_CHARTS} of {len(tags)} tags; narrow the filter to see the others.")
    current_group = None
    for tag in shown_tags:
        group = group_of(tag)
        if group != current_group:
            st.markdown(f"#### {plain(group)}/")
            current_group = group
        fig = provider.figure(tag, axis=axis, weight=weight, ignore_outliers=ignore_outliers, alignments=alignments)
        st.plotly_chart(fig, key=f"mon_fig_{tag}", config={"displaylogo": False})

    table = provider.table(shown_tags, axis=axis, weight=weight, alignments=alignments)
    st.download_button("Download what is shown (CSV)", table_csv(table), file_name="monitor.csv",
                       mime="text/csv", key="mon_csv", disabled=table.empty)
    gpu_section(runs, gpus, memory)


live_view()
results = st.session_state.get("mon_live", [])
runs = [r for r, _ in results]

wandb_launch_arguments(runs, profile.gpus_total)

outcome = monitor_progress(results)
if st.session_state.pop("mon_new_input", False):  # runs the user just loaded, not the remembered folders shown again
    if outcome.status == "done":
        memory.accept("read the runs and produced the checklist", outcome.summary, output=checklist_text(results),
                      done=outcome.done, todo=outcome.todo, output_name="monitor-checklist.txt")
    else:
        memory.mark_changed()
memory.progress(done=outcome.done, todo=outcome.todo, summary=outcome.summary)
