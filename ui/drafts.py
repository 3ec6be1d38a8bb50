"""How every workflow page shows a drafted script: checks beside it, downloads only when ready."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from core.drafts import Draft, checkout_checker
from core.findings import Finding
from core.model_scripts import ModelScript
from ui.common import (
    flag_link,
    get_store,
    own_model_scripts,
    own_sources,
    plain,
    show_findings,
    versions_caption,
)
from ui.memory import AcceptControl, InputMemory, when_text

CHECKPOINT_FIELDS = (("ckpt_hf", "--hf-checkpoint", "Hugging Face checkpoint folder (--hf-checkpoint)"),
                     ("ckpt_ref", "--ref-load", "torch_dist copy the reference loads (--ref-load)"),
                     ("ckpt_save", "--save", "The run's own checkpoints (--load and --save)"))


@dataclass(frozen=True)
class CheckpointPaths:
    hf_checkpoint: str | None
    ref_load: str | None
    save_dir: str | None


def checkpoint_fields(memory: InputMemory, model: str) -> CheckpointPaths:
    """The draft's checkpoint paths, editable: an accepted conversion command fills them (said so); an empty
    box is the guess from the model name the draft shows."""
    base = model.strip().rstrip("/").split("/")[-1] or "model"
    hf_guess = model if model.startswith("/") else f"/root/{base}"
    converted = get_store().accepted(memory.profile.name, "model_checkpoint")
    st.markdown("**Checkpoints**")
    values = {}
    cols = st.columns(3)
    guess_base = hf_guess.rstrip("/").split("/")[-1] or "model"
    guesses = {"ckpt_hf": hf_guess, "ckpt_ref": f"/root/{guess_base}_torch_dist", "ckpt_save": f"/root/{guess_base}_slime/"}
    for col, (name, _flag, label) in zip(cols, CHECKPOINT_FIELDS, strict=True):
        values[name] = memory.widget(col.text_input, label, name, "", max_chars=4096, placeholder=guesses[name])
    hf = values["ckpt_hf"].strip() or None
    hf_base = (hf or hf_guess).rstrip("/").split("/")[-1] or "model"
    last = converted[0] if converted else None
    accepted_hf = str((last.inputs_shown or last.inputs or {}).get("hf", "")).strip() if last is not None else ""
    if last is not None and hf and accepted_hf == hf:
        st.caption(f"From the conversion command you accepted {when_text(last.accepted_at)} on Model and "
                   "checkpoint; edit them here for this draft.")
    else:
        st.caption(f"Empty boxes use the guess from the model name: {plain(hf_guess)}, "
                   f"{plain(f'/root/{hf_base}_torch_dist')}, {plain(f'/root/{hf_base}_slime/')}. Accepting a "
                   "conversion command on Model and checkpoint fills them.")
    return CheckpointPaths(hf_checkpoint=hf, ref_load=values["ckpt_ref"].strip() or None,
                           save_dir=values["ckpt_save"].strip() or None)


@dataclass(frozen=True)
class OwnCheckout:
    """What a draft page takes from the user's own slime checkout (None everywhere: the pins)."""

    slime: Path | None
    scripts: tuple[ModelScript, ...] | None
    checker: Callable[[str, int], list[Finding] | None] | None
    versions: list[dict]


def own_checkout() -> OwnCheckout:
    """The checkout (and SGLang / Megatron sources) remembered in the profile or named on the checker: its
    model scripts for the picker, a checker that judges the draft by its own code, and the versions it holds."""
    from core.launch import SourceError, UserSources, checkout_catalog, versions_of

    slime, sglang, megatron = own_sources()
    if slime is None:
        return OwnCheckout(None, None, None, [])
    try:
        catalog = checkout_catalog(UserSources(slime=slime, sglang=sglang, megatron=megatron))
        versions = [v.model_dump(mode="json") for v in versions_of(catalog)]
    except (SourceError, ValueError, OSError):  # CatalogError is a ValueError; the checker says why
        versions = []
    return OwnCheckout(slime, own_model_scripts(), checkout_checker(slime, sglang, megatron), versions)


def own_checkout_caption(own: OwnCheckout) -> None:
    """Say that the draft was checked against the user's own checkout, and with which versions."""
    if own.slime is None:
        st.caption("Checked against the versions slime pins. Name your own slime checkout on the launch-script "
                   "checker or your profile to check drafts against the code you run.")
        return
    st.caption(f"This draft is checked against your own slime checkout {plain(str(own.slime))}, and its model "
               "scripts are the ones of that checkout.")
    if own.versions:
        versions_caption(own.versions)
    else:
        st.caption("Your checkout's arguments could not be read; the findings below say why and what the draft "
                   "was checked against instead.")


@dataclass(frozen=True)
class ExtraFile:
    """A file drafted alongside the script (e.g. a YAML config), offered with it."""

    label: str
    data: str
    filename: str
    mime: str
    language: str
    caption: str


def show_draft(draft: Draft, *, key_prefix: str, extra_files: tuple[ExtraFile, ...] = (),
               summary_expanded: bool = True, accept: AcceptControl | None = None,
               still_open: tuple[str, ...] = ()) -> None:
    """The draft's status, its checker findings, then the script across the full width; a draft with an error
    is shown for reference only. `still_open` lists what the user has not confirmed yet (e.g. prerequisites):
    a draft that passes its checks is then "checked", not "ready", and says what is open.

    With `accept`, a ready draft gets an "Accept this draft" button, and downloading its script accepts it too.
    """
    if not draft.ready:
        st.error("Not ready: fix the errors listed below first. The draft is shown for reference only.",
                 icon=":material/error:")
    elif still_open:
        st.info("The script passes its checks. Still open before you run it: "
                + "; ".join(plain(item) for item in still_open) + ".", icon=":material/pending_actions:")
    else:
        st.success("Ready for your review. Read every line marked YOUR CHOICE, then run it yourself.",
                   icon=":material/check_circle:")
    with st.expander(f"Checks on this draft ({len(draft.findings)})", expanded=not draft.ready or bool(
            [f for f in draft.findings if f.severity.value != "info"])):
        show_findings(draft.findings, key_prefix=key_prefix,
                      empty_message="No findings: the checker passed this draft.")
    if draft.ready:
        downloads = [("Download the script (.sh)", draft.script, draft.filename, "text/x-shellscript", "sh"),
                     ("Download the summary (.md)", draft.summary_markdown,
                      draft.filename.removesuffix(".sh") + ".md", "text/markdown", "md"),
                     *((e.label, e.data, e.filename, e.mime, e.filename) for e in extra_files)]
        cols = st.columns(len(downloads))
        for col, (label, data, filename, mime, suffix) in zip(cols, downloads, strict=True):
            on_click = accept.on_download if accept and suffix == "sh" else "rerun"
            col.download_button(label, data, file_name=filename, mime=mime, key=f"{key_prefix}_download_{suffix}",
                                on_click=on_click, width="stretch")
        if accept:
            accept.render()
    if draft.script:
        st.code(draft.script, language="bash")
    flags_in_draft(draft.script)
    for extra in extra_files:
        st.caption(f"{plain(extra.caption)}:")
        st.code(extra.data, language=extra.language)
    if draft.summary_markdown:
        with st.expander("Configuration summary", expanded=summary_expanded):
            st.markdown(draft.summary_markdown)


def flags_in_draft(script: str) -> None:
    """Every catalog flag the draft names (command and comments), each linked to the flag reference."""
    import re

    from core.launch import load_catalog

    if not script:
        return
    catalog = load_catalog()
    named = [f for f in dict.fromkeys(re.findall(r"--[a-z0-9][a-z0-9\-]*", script)) if catalog.lookup(f)]
    if named:
        with st.expander(f"Flag reference for the {len(named)} flag(s) in this draft"):
            st.markdown(" · ".join(flag_link(f) for f in named))
