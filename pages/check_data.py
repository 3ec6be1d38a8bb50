"""Check my data: read a prompt file the way slime's loader does and list every row it would drop or
crash on. The user uploads a sample, or names a big file inside the roots the app may read.

The keys start from the launch keys saved by the GRPO page or the launch-script checker, else from slime's
defaults.
Nothing is changed or written; uploaded text is shown only as code, plain text or tables.
"""

from __future__ import annotations

import json

import streamlit as st
from pydantic import ValidationError

from core.data.charts import counts_frame, keys_frame, prompt_length_figure
from core.data.rules import DataKeys, split_row_slice
from core.data.scan import CheckError, DataReport, check_path, check_stream, startup_headline
from core.findings import Severity, dumps
from core.paths import ENV_ROOTS, PathRefused, configured_roots, resolve_allowed
from ui.common import (
    ensure_app_frame,
    plain,
    profile_caption,
    require_profile,
    saved_launch_keys,
    show_findings,
)
from ui.memory import PageMemory

ensure_app_frame()

UPLOAD, ON_DISK = "Upload a sample", "A file on this machine"


def launch_defaults(profile) -> DataKeys:
    """The keys to start from: those of the user's latest draft or checked script, else slime's defaults."""
    saved = saved_launch_keys(profile)
    if saved is None:
        st.caption("Keys start from slime's defaults; a GRPO draft or a checked launch script fills them in.")
        return DataKeys()
    origin = {"grpo": "your GRPO draft", "check_args": "your last checked launch script"}.get(saved.origin,
                                                                                              saved.origin)
    st.caption(f"Keys pre-filled from {plain(origin)}.")
    return saved.keys


def keys_form(defaults: DataKeys) -> DataKeys | None:
    """The keys widgets; returns the validated keys, or None after showing what is wrong."""
    with st.container(border=True):
        st.markdown("**How your run reads each row** (the flags of your launch command)")
        c1, c2 = st.columns(2)
        input_key = memory.widget(c1.text_input, "Prompt key: --input-key", "input_key", defaults.input_key,
                                  help="slime's default is 'input', not 'prompt'.")
        label_key = memory.widget(c2.text_input, "Label key: --label-key (empty: none)", "label_key",
                                  defaults.label_key or "")
        c3, c4 = st.columns(2)
        tool_key = memory.widget(c3.text_input, "Tool key: --tool-key", "tool_key", defaults.tool_key or "",
                                 help="slime's default is 'tools'.")
        metadata_key = memory.widget(c4.text_input, "Metadata key: --metadata-key", "metadata_key",
                                     defaults.metadata_key)
        c5, c6 = st.columns([1, 2])
        template = memory.widget(c5.checkbox, "--apply-chat-template", "template", defaults.apply_chat_template)
        multimodal = memory.widget(c6.text_input, "--multimodal-keys (JSON, empty: none)", "multimodal",
                                   json.dumps(defaults.multimodal_keys) if defaults.multimodal_keys else "",
                                   placeholder='{"image": "images"}')
    try:
        return DataKeys(input_key=input_key.strip(), label_key=label_key.strip() or None,
                        tool_key=tool_key.strip() or None, metadata_key=metadata_key.strip(),
                        apply_chat_template=template, multimodal_keys=multimodal.strip() or None)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(p) for p in error.get("loc", ()))
            st.error(plain(f"{field}: {error.get('msg', 'invalid value')}"))
        return None


def run_check(keys: DataKeys, source: str, upload, path_text: str) -> DataReport | None:
    """Check the upload or the path; messages for anything that stops the check."""
    bar = st.progress(0.0, text="Reading")

    def progress(fraction: float, text: str) -> None:
        bar.progress(fraction, text=plain(text))

    try:
        if source == UPLOAD:
            if upload is None:
                st.warning("Choose a file to upload first.")
                return None
            upload.seek(0)
            return check_stream(upload, upload.name, keys, size=upload.size, progress=progress)
        typed = path_text.strip()
        real, row_slice = split_row_slice(typed)
        try:
            allowed = resolve_allowed(real)
        except PathRefused as exc:
            st.error(plain(str(exc)))
            return None
        try:
            return check_path(str(allowed.path) + typed[len(real):], keys, name=typed, progress=progress)
        except CheckError as exc:
            st.error(plain(str(exc)))
            return None
    finally:
        bar.empty()


def record(profile, report: DataReport) -> None:
    s = report.summary
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    status = "done" if s.complete and not s.would_fail else "started"
    todo = [f"{f.code}: {f.message}" + (f" (line {f.line})" if f.line else "") for f in errors[:10]]
    if s.flags_to_add:
        todo.append("Add to the launch command: " + " ".join(s.flags_to_add))
    checked = (f"Checked {s.name}: {startup_headline(s)}" if s.stops_at_start
               else f"Checked {s.name}: {s.rows_used} of {s.rows} row(s) usable by slime")
    memory.accept("ran the check", f"{s.name}: " + ("stops at start-up; " if s.stops_at_start else "")
                  + f"{s.rows_used} used, {s.rows_skipped} skipped, {s.rows_crash} crash, "
                  f"{s.rows_unchecked} unchecked; prompts {s.prompt_format}"
                  + ("" if status == "done" else " (not usable as is)"),
                  done=[checked], todo=todo, output_name="data-check.json", output=dumps(report.to_json()),
                  output_mime="application/json")


def show_report(report: DataReport) -> None:
    s = report.summary
    name = plain(s.name)
    if s.stops_at_start:
        st.error(plain(startup_headline(s, with_name=True))
                 + (" The counts below say what each row would meet once that is fixed."
                    if s.rows_used + s.rows_crash else ""),
                 icon=":material/error:")
    elif s.would_fail:
        st.error(f"slime would skip {s.rows_skipped} line(s) and crash on {s.rows_crash} row(s) of {name}. "
                 "The findings below say which and why.", icon=":material/error:")
    elif not s.complete:
        st.warning(f"The check of {name} could not finish; see the findings.", icon=":material/warning:")
    else:
        st.success(f"slime would use all {s.rows_used} row(s) of {name}.", icon=":material/check_circle:")
    cols = st.columns(5)
    cols[0].metric("Lines read", f"{s.lines:,}")
    cols[1].metric("Rows otherwise usable" if s.stops_at_start else "Rows slime uses", f"{s.rows_used:,}")
    cols[2].metric("Lines skipped", f"{s.rows_skipped:,}")
    cols[3].metric("Rows it crashes on", f"{s.rows_crash:,}")
    cols[4].metric("Not checked", f"{s.rows_unchecked:,}",
                   help=f"Lines over {s.max_line_bytes // 2**20} MiB are reported, not parsed.")
    st.write(f"Format: {s.file_format}; prompts: {s.prompt_format} ("
             + plain(", ".join(f"{k} {n:,}" for k, n in s.prompt_formats.items())) + ")"
             + (f"; row slice {plain(s.row_slice)}" if s.row_slice else "")
             + f"; checked in {s.seconds:.2f} s.")
    if s.flags_to_add:
        st.markdown("**Flags to add to your launch command**")
        st.code(" \\\n  ".join(s.flags_to_add), language="bash")
    if s.launch_flags:
        st.caption("Checked with: " + plain(" ".join(s.launch_flags)))
    show_findings(report.findings, key_prefix="cd_findings",
                  empty_message="No findings: every row reads the way slime expects.")
    if s.omitted_by_code:
        st.caption(plain(f"Not listed (at most {s.max_listed_per_code} per code): "
                         + ", ".join(f"{n:,} more {code}" for code, n in s.omitted_by_code.items())))
    keys_tab, labels_tab, lengths_tab, samples_tab = st.tabs(["Keys", "Labels", "Prompt lengths", "Sample rows"])
    with keys_tab:
        if s.keys:
            st.dataframe(keys_frame(s), hide_index=True, key="cd_keys_table")
        else:
            st.caption("No row was read as an object.")
        if s.other_keys:
            st.caption(f"{s.other_keys:,} more key occurrence(s) beyond the first {len(s.keys)} distinct keys.")
    with labels_tab:
        if s.label_types:
            st.dataframe(counts_frame(s.label_types, "label type"), hide_index=True, key="cd_labels_table")
        else:
            st.caption("No --label-key set: slime gives every sample the label None.")
    with lengths_tab:
        pc = s.prompt_chars
        if pc.rows:
            st.caption(f"{pc.rows:,} prompt(s): min {pc.min:,}, mean {pc.mean:,.0f}, max {pc.max:,} characters.")
            st.plotly_chart(prompt_length_figure(pc), key="cd_lengths_chart")
        else:
            st.caption("No prompt was read.")
    with samples_tab:
        if not s.samples:
            st.caption("No usable row to show.")
        for sample in s.samples:
            st.caption(f"Line {sample.line}")
            st.code(sample.text, language="json", wrap_lines=True)
    st.download_button("Download the report (JSON)", data=dumps(report.to_json()), file_name="data-check.json",
                       mime="application/json", key="cd_download")


profile = require_profile()
st.title("Check my data")
profile_caption(profile)
memory = PageMemory("check_data", "cd", profile)
if memory.reloaded:
    st.session_state.pop("cd_report", None)  # another profile's report
st.write("Reads your prompt file the way slime's loader does and lists every row it would drop or crash on, "
         "before you launch. Nothing is changed.")
memory.done_caption()

keys = keys_form(launch_defaults(profile))
source = memory.widget(st.radio, "The file", "source", UPLOAD, options=(UPLOAD, ON_DISK), horizontal=True)
upload = None
path_text = ""
if source == UPLOAD:
    upload = st.file_uploader("A .jsonl or .parquet file (a sample is enough; up to 200 MB)", key="cd_upload")
else:
    roots = configured_roots()
    path_text = memory.widget(st.text_input, "Path of the data file on this machine", "path", profile.data_path,
                              help="A trailing @[start:end] is slime's row slice.")
    if roots:
        st.caption("This app may read files under: " + plain(", ".join(str(r) for r in roots)))
    else:
        st.caption(f"No directories are configured for reading ({ENV_ROOTS}); upload a sample instead.")

if st.button("Check", key="cd_run", type="primary", disabled=keys is None):
    report = run_check(keys, source, upload, path_text) if keys is not None else None
    if report is not None:
        st.session_state["cd_report"] = report
        record(profile, report)

memory.progress(summary="keys or file chosen, not checked yet")
report = st.session_state.get("cd_report")
if isinstance(report, DataReport):
    show_report(report)
