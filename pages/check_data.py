"""Check my data: read a prompt file the way slime's loader does and list every row it would drop or
crash on. The user uploads a sample, or names a big file inside the roots the app may read.

The keys start from the launch keys saved by the GRPO page or the launch-script checker, else from slime's
defaults.
Nothing is changed or written; uploaded text is shown only as code, plain text or tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from pydantic import ValidationError

from core.data import (
    UPLOAD_NAMES,
    CheckError,
    DataKeys,
    DataReport,
    LengthSettings,
    LoadedTokenizer,
    RowSliceError,
    TokenizerUnusable,
    check_path,
    check_stream,
    counts_frame,
    failure_sentence,
    keys_frame,
    load_tokenizer,
    prompt_length_figure,
    settings_errors,
    split_row_slice,
    startup_headline,
    status_summary,
    token_length_figure,
    tokenizer_from_files,
)
from core.findings import Severity, dumps
from core.paths import ENV_ROOTS, PathRefused, configured_roots, resolve_allowed
from ui.common import (
    ensure_app_frame,
    plain,
    profile_caption,
    profile_or_guest,
    saved_launch_keys,
    show_findings,
)
from ui.memory import PageMemory, when_text

ensure_app_frame()

UPLOAD, ON_DISK = "Upload a sample", "A file on this machine"
REPORT_NAME = "data-check.json"  # the saved record's output: the report, shown again in a new session


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
        for message in settings_errors(exc):
            st.error(plain(message))
        return None


NO_TOKENIZER, TOKENIZER_DIR, TOKENIZER_UPLOAD = ("No tokenizer", "A directory on this machine",
                                                "Upload tokenizer files")


@st.cache_resource(max_entries=4, show_spinner="Loading the tokenizer")
def cached_tokenizer_dir(path: str, stamp: float, roots: tuple[str, ...]) -> LoadedTokenizer:
    # every file the tokenizer loads is read under the roots rule (no link out of them)
    return load_tokenizer(path, roots=[Path(r) for r in roots])


@st.cache_resource(max_entries=4, show_spinner="Loading the tokenizer")
def cached_tokenizer_files(files: tuple[tuple[str, bytes], ...]) -> LoadedTokenizer:
    return tokenizer_from_files(dict(files))


def tokenizer_form() -> tuple[str, object, LengthSettings | None]:
    """The tokenizer widgets: (source, path text or uploaded files, length settings or None if invalid)."""
    with st.container(border=True):
        st.markdown("**The model's tokenizer** (optional): renders each prompt as slime does and finds the rows "
                    "it drops for length")
        source = st.radio("Tokenizer", (NO_TOKENIZER, TOKENIZER_DIR, TOKENIZER_UPLOAD), key="cd_tok_source",
                          horizontal=True, label_visibility="collapsed")
        given: object = None
        if source == TOKENIZER_DIR:
            given = st.text_input("Checkpoint or tokenizer directory (the one --hf-checkpoint names)",
                                  key="cd_tok_path")
        elif source == TOKENIZER_UPLOAD:
            given = st.file_uploader("Tokenizer files: " + ", ".join(UPLOAD_NAMES), accept_multiple_files=True,
                                     key="cd_tok_upload")
        if source == NO_TOKENIZER:
            return source, None, None
        c1, c2, c3 = st.columns(3)
        prompt_len = c1.number_input("--rollout-max-prompt-len (0: not set)", min_value=0, value=0, step=256,
                                     key="cd_prompt_len")
        response_len = c2.number_input("--rollout-max-response-len (0: not set)", min_value=0, value=0, step=256,
                                       key="cd_response_len")
        context_len = c3.number_input("Model context length (0: from config.json)", min_value=0, value=0,
                                      step=1024, key="cd_context_len")
        kwargs = st.text_input("--apply-chat-template-kwargs (JSON, empty: none)", key="cd_template_kwargs",
                               placeholder='{"enable_thinking": false}')
        st.caption("Loaded offline and never with remote code: a tokenizer that needs its own Python code or a "
                   "download is refused, and the row check still runs.")
    try:
        lengths = LengthSettings(rollout_max_prompt_len=prompt_len or None, rollout_max_response_len=response_len or None,
                                 context_length=context_len or None, apply_chat_template_kwargs=kwargs.strip() or None)
    except ValidationError as exc:
        for message in settings_errors(exc):
            st.error(plain(message))
        return source, given, None
    return source, given, lengths


def get_tokenizer(source: str, given: object) -> tuple[LoadedTokenizer | None, str | None]:
    """The loaded tokenizer, or why it could not be used (the row check runs either way)."""
    try:
        if source == TOKENIZER_DIR:
            allowed = resolve_allowed(str(given or ""), want="dir")
            roots = tuple(str(r) for r in configured_roots())
            return cached_tokenizer_dir(str(allowed.path), allowed.path.stat().st_mtime, roots), None
        if source == TOKENIZER_UPLOAD:
            if not given:
                return None, "No tokenizer files were uploaded."
            return cached_tokenizer_files(tuple(sorted((f.name, f.getvalue()) for f in given))), None
    except (PathRefused, TokenizerUnusable, OSError) as exc:
        return None, str(exc)
    return None, None


def run_check(keys: DataKeys, source: str, upload, path_text: str, tokenizer: LoadedTokenizer | None = None,
              lengths: LengthSettings | None = None, tokenizer_problem: str | None = None) -> DataReport | None:
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
            return check_stream(upload, upload.name, keys, size=upload.size, progress=progress, tokenizer=tokenizer,
                                lengths=lengths, tokenizer_problem=tokenizer_problem)
        typed = path_text.strip()
        try:
            real, _ = split_row_slice(typed)
        except RowSliceError as exc:
            st.error(plain(str(exc)))
            return None
        try:
            allowed = resolve_allowed(real)
        except PathRefused as exc:
            st.error(plain(str(exc)))
            return None
        try:
            return check_path(str(allowed.path) + typed[len(real):], keys, name=typed, progress=progress,
                              tokenizer=tokenizer, lengths=lengths, tokenizer_problem=tokenizer_problem)
        except CheckError as exc:
            st.error(plain(str(exc)))
            return None
    finally:
        bar.empty()


@dataclass
class SavedReport:
    """The report of the last check, read back from its saved record (a new session shows it again)."""

    report: DataReport
    checked_at: float


def last_saved_report(memory: PageMemory) -> SavedReport | None:
    last = memory.latest_accepted()
    if last is None or last.output_name != REPORT_NAME or not last.output:
        return None
    report = DataReport.from_json(last.output)
    return SavedReport(report, last.accepted_at) if report is not None else None


def record(profile, report: DataReport) -> None:
    s = report.summary
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    todo = [f"{f.code}: {f.message}" + (f" (line {f.line})" if f.line else "") for f in errors[:10]]
    if s.flags_to_add:
        todo.append("Add to the launch command: " + " ".join(s.flags_to_add))
    checked = (f"Checked {s.name}: {startup_headline(s)}" if s.stops_at_start
               else f"Checked {s.name}: {s.rows_used} of {s.rows} row(s) usable by slime")
    memory.accept("ran the check", status_summary(s), done=[checked], todo=todo, output_name=REPORT_NAME,
                  output=dumps(report.to_json()), output_mime="application/json")


def show_report(report: DataReport) -> None:
    s = report.summary
    name = plain(s.name)
    if s.stops_at_start:
        st.error(plain(startup_headline(s, with_name=True))
                 + (" The counts below say what each row would meet once that is fixed."
                    if s.rows_used + s.rows_crash else ""),
                 icon=":material/error:")
    elif s.would_fail:
        st.error(f"slime would {failure_sentence(s)} of {name}. "
                 "The findings below say which and why.", icon=":material/error:")
    elif not s.complete:
        st.warning(f"The check of {name} could not finish; see the findings.", icon=":material/warning:")
    else:
        st.success(f"slime would use all {s.rows_used} row(s) of {name}.", icon=":material/check_circle:")
    cols = st.columns(6 if s.tokenizer is not None else 5)
    cols[0].metric("Lines read", f"{s.lines:,}")
    cols[1].metric("Rows otherwise usable" if s.stops_at_start else "Rows that read fine", f"{s.rows_used:,}",
                   help="Rows slime reads without a problem. Any row that stops the run, or a problem of the whole "
                        "file, stops training for all of them.")
    cols[2].metric("Lines slime skips", f"{s.rows_skipped:,}", help="Printed as a decode error and dropped.")
    cols[3].metric("Rows that stop the run", f"{s.rows_crash:,}",
                   help="slime raises an error on these, at start-up or at the first rollout that meets them.")
    cols[4].metric("Not checked", f"{s.rows_unchecked:,}",
                   help=f"Lines over {s.max_line_bytes // 2**20} MiB are reported, not parsed.")
    if s.tokenizer is not None:
        cols[5].metric("Dropped for length", f"{s.dropped_for_length:,}",
                       help="Rows over --rollout-max-prompt-len: slime drops them at start-up.")
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
    if s.tokenizer is not None:
        show_tokens(report)
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


def show_tokens(report: DataReport) -> None:
    """Token lengths and the rendered prompts, as the model receives them."""
    s = report.summary
    st.subheader("With the model's tokenizer")
    st.caption(plain(f"{s.tokenizer.path}: {s.tokenizer.kind}, {s.tokenizer.vocab_size:,} tokens, "
                     + ("chat template present." if s.tokenizer.chat_template else "no chat template.")))
    if s.prompt_limit is not None and s.length_check_skipped:
        st.info(f"slime does not apply the limit of {s.prompt_limit:,} tokens: the first prompt is a message list "
                "(no --apply-chat-template), so it skips the length check.")
    elif s.prompt_limit is not None and s.dropped_for_length:
        st.warning(f"slime drops {s.dropped_for_length:,} row(s) longer than {s.prompt_limit:,} tokens at start-up "
                   "and logs only the count. Each one is listed in the findings.", icon=":material/warning:")
    elif s.prompt_limit is not None:
        st.success(f"Every prompt fits the limit of {s.prompt_limit:,} tokens.")
    tokens_tab, rendered_tab = st.tabs(["Token lengths", "Rendered prompts"])
    with tokens_tab:
        if s.prompt_tokens is None:
            st.caption("No prompt slime uses could be counted.")
        else:
            pt = s.prompt_tokens
            cols = st.columns(4)
            for col, (label, value) in zip(cols, (("Shortest", pt.min), ("Median", pt.median), ("95th percentile",
                                                  pt.p95), ("Longest", pt.max)), strict=True):
                col.metric(f"{label} (tokens)", f"{value:,}")
            st.plotly_chart(token_length_figure(s.token_histogram, s.prompt_limit), key="cd_tokens_chart")
            settings = s.length_settings
            response = settings.rollout_max_response_len if settings else None
            if response:
                total = pt.max + response
                where = (f"the model's context length is {s.context_length:,}" if s.context_length
                         else "the model's context length is unknown (no config.json)")
                st.write(f"Longest prompt {pt.max:,} + --rollout-max-response-len {response:,} = {total:,} tokens; "
                         f"{where}." + (f" {s.rows_over_context:,} prompt(s) do not fit." if s.rows_over_context
                                        else ""))
    with rendered_tab:
        if not s.rendered_prompts:
            st.caption("No prompt to show.")
        for prompt in s.rendered_prompts:
            specials = ", ".join(f"{t} x{n}" for t, n in prompt.special_tokens.items()) or "none"
            st.caption(plain(f"Line {prompt.line}: {prompt.tokens:,} tokens; special tokens in it: {specials}"))
            st.code(prompt.text + (f"\n... ({prompt.truncated:,} more characters)" if prompt.truncated else ""),
                    language=None, wrap_lines=True)


profile = profile_or_guest()  # works before the first-visit questions; invites them
st.title("Check my data")
profile_caption(profile)
memory = PageMemory("check_data", "cd", profile)
if memory.reloaded:
    st.session_state.pop("cd_report", None)  # another profile's report
if "cd_report" not in st.session_state:  # a new session, or another profile: its last check, as saved
    st.session_state["cd_report"] = last_saved_report(memory)
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

tok_source, tok_given, lengths = tokenizer_form()

if st.button("Check", key="cd_run", type="primary", disabled=keys is None or lengths is None and
             tok_source != NO_TOKENIZER):
    tokenizer, tokenizer_problem = get_tokenizer(tok_source, tok_given)
    if tokenizer_problem:
        st.warning(plain(f"The tokenizer was not used: {tokenizer_problem}"), icon=":material/warning:")
    report = run_check(keys, source, upload, path_text, tokenizer, lengths,
                       tokenizer_problem and f"The tokenizer was not used: {tokenizer_problem}") \
        if keys is not None else None
    st.session_state["cd_report"] = report  # None when refused or not checked: no other file's report below
    if report is not None:
        record(profile, report)

memory.progress(summary="keys or file chosen, not checked yet")
report = st.session_state.get("cd_report")
if isinstance(report, SavedReport):
    st.info(f"Your last check, {when_text(report.checked_at)}, as kept in What's done. Press Check to check the "
            "file again.", icon=":material/history:")
    show_report(report.report)
elif isinstance(report, DataReport):
    show_report(report)
