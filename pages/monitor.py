"""Monitor training: load slime TensorBoard or W&B runs, plot them as TensorBoard does, and answer "is it working?"."""

import json
import time
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from core.knowledge.cards import get_card
from core.monitor.archive import UploadWorkdir, content_digest, save_uploads, sweep_stale_workdirs, unpack_zip
from core.monitor.cache import CacheBatch
from core.monitor.efficiency import efficiency_verdicts
from core.monitor.follow import Follower, RunSnapshot, changes_since, snapshot
from core.monitor.plots import scalar_figure
from core.monitor.report import checklist_summary, checklist_text, evidence_rows, read_findings
from core.monitor.slime_metrics import (
    FILTER_HELP,
    SRC_TB,
    SRC_TB_ARGS,
    checklist_tags,
    draft_tensorboard_command,
    draft_tensorboard_flags,
    filter_tags,
    group_of,
    ordered_tags,
)
from core.monitor.smoothing import DEFAULT_WEIGHT, MAX_WEIGHT
from core.monitor.sources import FoundRun, describe_found, find_runs
from core.monitor.verdicts import with_gpu_verdict
from core.monitor.views import X_AXIS_LABELS, XAxis, rollout_alignment, shown_table, table_csv
from core.monitor.wandb.config import as_script_lines, check_config, config_rows, steps_per_rollout_note
from core.monitor.wandb.log import SRC_DEFINE_METRIC, SRC_WANDB_ARGS
from core.monitor.wandb.proto import WandbProtoUnavailable
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

ensure_app_frame()

MAX_CHARTS = 40
MIN_REFRESH_S = 5
MAX_SEEN = 200  # runs whose last look is remembered per profile
MISSING_NO_SCALARS = ("no scalar value could be read (not an event file or W&B run file, empty, or damaged); "
                      "load slime's event files or W&B run files")
MISSING_NOTHING_JUDGED = ("no check had enough data (no slime metrics yet, or too few points); load more of "
                          "the run")
STATUS_UI = {"ok": (st.success, ":material/check_circle:"), "warn": (st.warning, ":material/warning:"),
             "fail": (st.error, ":material/error:"), "unknown": (st.info, ":material/help:")}

st.title("Monitor training")
profile = profile_or_guest()  # works before the first-visit questions; invites them
profile_caption(profile)
memory = PageMemory("monitor", "mon", profile)
st.write("Load the TensorBoard logs or W&B run files of one or more slime runs to see their curves the way "
         "TensorBoard draws them, and a checklist that reads the curves for you. Files are only read, never changed; commands "
         "below are drafts for you to run.")

memory.done_caption()


def still_allowed(entry: object) -> bool:
    """A remembered run is read again only while its folder and files are still inside the configured roots."""
    try:
        run = FoundRun.model_validate(entry)
        resolve_allowed(run.path, want="dir")
        for file in run.files:
            resolve_allowed(file, want="file")
    except (ValueError, PathRefused):  # pydantic's ValidationError is a ValueError
        return False
    return True


if memory.reloaded or "mon_sources" not in st.session_state:  # [{"label", "path"}]: folders added, per profile
    st.session_state["mon_sources"] = [e for e in memory.remembered("sources", []) if still_allowed(e)]
if "mon_uploads" not in st.session_state:
    st.session_state["mon_uploads"] = {}  # "files" | "zip" -> the current upload of that box (one each)

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



@st.cache_data(max_entries=32, show_spinner=False)
def checked_config(config_json: str, gpus: int):
    """The argument form of a run's config and the launch checker's report on it (kept per config)."""
    return check_config(json.loads(config_json), gpus=gpus)


def upload_digest(slot: str, files: list) -> str | None:
    """Content hash of what an upload box holds now; hashed once per upload (Streamlit's file ids)."""
    if not files:
        return None
    ids = tuple(f.file_id for f in files)
    cached = st.session_state.setdefault("mon_upload_digests", {}).get(slot)
    if cached and cached[0] == ids:
        return cached[1]
    digest = content_digest([(f.name, f.getvalue()) for f in files])
    st.session_state["mon_upload_digests"][slot] = (ids, digest)
    return digest


def keep_current_upload(slot: str, digest: str | None, unpack: Callable[[UploadWorkdir], dict]) -> None:
    """One upload per box: when the box's content changes or is cleared, the old directory is deleted."""
    held = st.session_state["mon_uploads"]
    entry = held.get(slot)
    if entry is not None and entry["digest"] == digest and entry["workdir"].exists:
        entry["workdir"].touch()
        return
    if entry is not None:
        entry["workdir"].remove()
        del held[slot]
    if digest is None:
        return
    sweep_stale_workdirs()
    workdir = UploadWorkdir()
    held[slot] = {"digest": digest, "workdir": workdir, **unpack(workdir)}
    st.session_state["mon_new_input"] = True  # an upload is the user's own input


def unpack_event_files(workdir: UploadWorkdir) -> dict:
    unpacked = save_uploads([(u.name, u.getvalue()) for u in uploads], workdir.path, "uploaded")
    return {"found": [f.model_dump() for f in find_runs(Path(unpacked.directory))],
            "notices": [n.model_dump() for n in unpacked.notices]}


def unpack_zipped(workdir: UploadWorkdir) -> dict:
    zpath = workdir.path / "upload.zip"
    zpath.write_bytes(zipped.getvalue())
    unpacked = unpack_zip(zpath, workdir.path)
    zpath.unlink(missing_ok=True)
    root = Path(unpacked.directory)
    return {"found": [f.model_dump() for f in find_runs(root)], "root": str(root), "label": Path(zipped.name).stem,
            "notices": [n.model_dump() for n in unpacked.notices]}


keep_current_upload("files", upload_digest("files", uploads or []), unpack_event_files)
keep_current_upload("zip", upload_digest("zip", [zipped] if zipped is not None else []), unpack_zipped)

notices = []
sources = list(st.session_state["mon_sources"])
for slot, entry in st.session_state["mon_uploads"].items():
    notices.extend(entry["notices"])
    base_label = (upload_name.strip() or "uploaded") if slot == "files" else entry["label"]
    for found in entry["found"]:
        label = base_label if len(entry["found"]) == 1 else f"{base_label}/{found['label']}"
        sources.append({**found, "label": label})
    if not entry["found"]:
        where = f"{entry['label']}.zip holds" if "root" in entry else "The uploaded files hold"
        notices.append({"level": "error", "message": f"{where} no TensorBoard event files and no W&B run files."})
for n in notices:
    (st.error if n["level"] == "error" else st.warning)(plain(n["message"]), icon=":material/folder_zip:")

if st.session_state["mon_sources"] and st.button("Forget the folders added", key="mon_clear"):
    st.session_state["mon_sources"] = []
    memory.remember("sources", [])
    st.rerun()

if not sources:
    st.info("Upload event files or W&B run files, or a zip, or add a folder, to see the curves and the checklist.")
    st.stop()

def source_key(src: dict) -> str:
    return json.dumps(src, sort_keys=True, default=str)


def open_followers(sources: list[dict]) -> list[Follower]:
    """A Follower per source, kept in the session: later runs of the page read only what was appended."""
    held: dict[str, Follower] = st.session_state.setdefault("mon_followers", {})
    wanted = {source_key(s): s for s in sources}
    for key in [k for k in held if k not in wanted]:
        del held[key]  # a source removed or replaced
    missing = [k for k in wanted if k not in held]
    progress = st.progress(0.0, text="Reading event files") if missing else None
    cache = CacheBatch(get_store().bulk_cache)  # the reads' cache writes, made together below
    for i, key in enumerate(missing):
        src = wanted[key]

        def on_progress(frac: float, name: str, i=i) -> None:
            progress.progress(min(1.0, (i + frac) / len(missing)), text=f"Reading {plain(name)}")

        try:
            held[key] = Follower(FoundRun(**src), cache=cache, on_progress=on_progress)
        except OSError as exc:
            st.error(f"{plain(src['label'])}: cannot be read ({plain(str(exc))}).")
        except WandbProtoUnavailable as exc:
            st.error(f"{plain(src['label'])}: {plain(str(exc))}", icon=":material/extension_off:")
    cache.flush()
    if progress is not None:
        progress.empty()
    for follower in held.values():
        follower.cache = get_store().bulk_cache  # a follower outlives the batch it was opened with
    return [held[k] for k in wanted if k in held]


def unique_names(followers: list[Follower]) -> None:
    """Runs of the same name are told apart by a number (from each follower's own name, every time)."""
    names_seen: dict[str, int] = {}
    for follower in followers:
        base = follower.base_name
        if base in names_seen:
            names_seen[base] += 1
            follower.run.name = f"{base} ({names_seen[base]})"
        else:
            names_seen[base] = 1
            follower.run.name = base


followers = open_followers(sources)

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


def remember_seen(key: str, snap: RunSnapshot) -> None:
    """What the user saw of a run, kept per profile for the next visit (not an input change)."""
    seen = dict(memory.remembered("seen", {}))
    if seen.get(key, {}).get("scalars") == snap.scalars and key in seen:
        return
    seen[key] = snap.model_dump()
    if len(seen) > MAX_SEEN:
        seen = dict(sorted(seen.items(), key=lambda kv: kv[1].get("seen_at", 0))[-MAX_SEEN:])
    memory.saved["seen"] = seen
    get_store().update_inputs(profile.name, "monitor", {"seen": seen})


named_gpu = named_gpu_logs(memory)  # GPU logs kept elsewhere (the run folders' own are found on their own)


@st.fragment(run_every=float(interval) if live else None)
def live_view() -> None:
    """The runs as they are now: refreshed (appended bytes only), then the checklist and the curves."""
    refreshes = {}
    for follower in followers:
        try:
            refreshes[id(follower)] = follower.refresh()
        except OSError as exc:
            st.warning(f"{plain(follower.run.name)}: could not be read this time ({plain(str(exc))}).")
    for follower in followers:
        if refreshes.get(id(follower)) is not None and refreshes[id(follower)].reread:
            follower.base_name = follower.run.name
    unique_names(followers)
    runs = [f.run for f in followers]
    gpus = gpus_for(runs, named_gpu)  # W&B system metrics, GPU logs in the run folders, the listed ones
    st.session_state["mon_live"] = [(f.run, with_gpu_verdict(f.verdicts, gpus[f.run.name].verdict())) for f in followers]
    now = time.time()
    baselines = st.session_state.setdefault("mon_seen_baseline", {})
    for follower in followers:
        key = source_key(follower.found.model_dump())
        if key not in baselines:  # first look in this session: compare with what the last visit saw
            saved = memory.remembered("seen", {}).get(key)
            try:
                baselines[key] = RunSnapshot.model_validate(saved) if saved else None
            except ValueError:
                baselines[key] = None
        snap = snapshot(follower.run, with_gpu_verdict(follower.verdicts, gpus[follower.run.name].verdict()), now)  # with MON012
        text = changes_since(baselines[key], snap)
        if text:
            st.info(f"{plain(follower.run.name)}: {plain(text)}", icon=":material/update:")
        remember_seen(key, snap)
    for follower in followers:
        refresh = refreshes.get(id(follower))
        if refresh is not None and refresh.events:
            st.caption(plain(f"{follower.run.name}, just now: " + "; ".join(
                f"{e.code + ' ' if e.code else ''}{e.kind}: {e.old + ' -> ' + e.new if e.old else e.message}"
                for e in refresh.events[:6])))
    st.caption(f"Loaded {describe_found([FoundRun(**s) for s in sources])}. " + " · ".join(
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
    alignments = {run.name: rollout_alignment(run, int(steps_override) or None) for run in runs}
    results = st.session_state["mon_live"] = [  # judged as each refresh left them, the GPU check, MFU and ETA
        (r, vs + efficiency_verdicts(r, profile.gpu_model, int(num_rollout) or None)) for r, vs in st.session_state["mon_live"]]
    for run in runs:
        if not run.scalar_count():
            st.warning(f"{plain(run.name)}: {MISSING_NO_SCALARS}, so its checklist has nothing to judge.",
                       icon=":material/block:")
    for run, verdicts in results:
        counts = {s: sum(v.status == s for v in verdicts) for s in ("fail", "warn", "ok", "unknown")}
        label = (f"{plain(run.name)}: {counts['fail']} fail, {counts['warn']} warn, {counts['ok']} ok, "
                 f"{counts['unknown']} not enough data")
        with st.expander(label, expanded=len(results) == 1 or counts["fail"] > 0):
            st.caption(plain(f"Rollout index: {alignments[run.name].how}."))
            for v in verdicts:
                box, icon = STATUS_UI[v.status]
                if v.status in ("ok", "unknown") and not v.commands:
                    st.markdown(f"{icon} **{plain(v.code)} · {plain(v.title)}**: {plain(v.message)}")
                    continue
                lines = [f"{v.code} · {v.title}", v.message]
                if v.fix and v.status in ("warn", "fail"):
                    lines.append(f"Adjust: {v.fix}")
                if v.source:
                    lines.append(f"Source: {v.source}")
                titles = [c.title for c in (get_card(cid) for cid in v.cards) if c]
                if titles:
                    lines.append("Read more: " + ", ".join(f"knowledge card '{t}'" for t in titles))
                box(plain("\n\n".join(lines)), icon=icon)
                if v.evidence:
                    st.dataframe(evidence_rows(v.evidence), hide_index=True, width="stretch",
                                 column_config={"what": "Evidence", "value": "Value"})
                for command in v.commands:
                    st.code(command, language="bash")
            cols = st.columns(max(1, len({c for v in verdicts for c in v.cards})))
            for col, cid in zip(cols, sorted({c for v in verdicts for c in v.cards}), strict=False):
                card = get_card(cid)
                if card:
                    col.page_link("pages/knowledge.py", label=card.title, icon=":material/menu_book:",
                                  query_params={"card": cid})

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
        fig = scalar_figure(runs, tag, axis=axis, weight=weight, ignore_outliers=ignore_outliers, alignments=alignments)
        st.plotly_chart(fig, key=f"mon_fig_{tag}", config={"displaylogo": False})

    table = shown_table(runs, shown_tags, axis, weight, alignments)
    st.download_button("Download what is shown (CSV)", table_csv(table), file_name="monitor.csv",
                       mime="text/csv", key="mon_csv", disabled=table.empty)
    gpu_section(runs, gpus, memory)


live_view()
results = st.session_state.get("mon_live", [])
runs = [r for r, _ in results]

wandb_runs = [r for r in runs if r.source == "wandb" and r.wandb is not None]
if wandb_runs:
    st.subheader("4. Launch arguments of the W&B runs")
    st.caption("slime logs its parsed arguments as the run's W&B config; they are written back here as launch "
               "arguments (values equal to a flag's default left out) and checked like a launch script. Values "
               "slime computes at start-up count as given.")
for ri, run in enumerate(wandb_runs):
    info = run.wandb
    with st.container(border=True):
        meta = [f"W&B run {info.run_id or '?'}"]
        meta += [f"project {info.project}"] if info.project else []
        meta += [f"name {info.display_name}"] if info.display_name else []
        meta += ["offline" if info.offline else "online"] if info.offline is not None else []
        meta += [f"host {info.host}"] if info.host else []
        meta += [f"exit code {info.exit_code}"] if info.exit_code is not None else ["no exit recorded (running, "
                                                                                    "or stopped abruptly)"]
        st.markdown(f"**{plain(run.name)}**")
        st.caption(plain(" · ".join(meta)))
        if not info.config:
            st.info("This run's files hold no config (slime logs its arguments when it opens the run).")
            continue
        note = steps_per_rollout_note(info.config)
        if note:
            st.caption(plain(note))
        with st.expander(f"All {len(info.config)} config values, as logged"):
            st.dataframe(config_rows(info.config), hide_index=True, width="stretch")
        form, report = checked_config(json.dumps(info.config, sort_keys=True, default=str), profile.gpus_total)
        if not form.args:
            st.info("The config sets no launch flag away from its default.")
        else:
            st.code(as_script_lines(form.args), language="bash")
        skipped = len(form.not_flags) + len(form.not_representable)
        if skipped:
            st.caption(plain(f"{skipped} config key(s) are not launch flags or cannot be written back as words: "
                             + ", ".join((form.not_flags + form.not_representable)[:12])
                             + (" ..." if skipped > 12 else "")))
        if report is not None:
            show_findings(report.findings, key_prefix=f"mon_cfg_{ri}",
                          empty_message="The launch checker finds nothing wrong with these arguments.")

text = checklist_text(results)
judged = [(r, vs) for r, vs in results if r.scalar_count() and any(v.status != "unknown" for v in vs)]
status = "done" if judged else "started"
done = [f"{r.name}: checklist read ({sum(v.status == 'ok' for v in vs)} ok)" for r, vs in judged]
todo = [f"{r.name}: {v.code} {v.title} ({v.status})" for r, vs in judged for v in vs if v.status in ("warn", "fail")]
judged_names = {r.name for r, _ in judged}  # names were made unique above
todo += [f"{r.name}: {MISSING_NO_SCALARS if not r.scalar_count() else MISSING_NOTHING_JUDGED}"
         for r, _ in results if r.name not in judged_names]
summary = checklist_summary(results)
if st.session_state.pop("mon_new_input", False):  # runs the user just loaded, not the remembered folders shown again
    if status == "done":
        memory.accept("read the runs and produced the checklist", summary, output=text, done=done, todo=todo,
                      output_name="monitor-checklist.txt")
    else:
        memory.mark_changed()
memory.progress(done=done, todo=todo, summary=summary)
