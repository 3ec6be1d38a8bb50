"""What a workflow page remembers: its inputs per profile, its progress, and the outputs the user accepted.

One small mechanism for every page:
- `PageMemory(workflow, prefix, profile)` loads the page's saved inputs from the store before any widget exists;
- `memory.widget(st.number_input, label, name, default, ...)` seeds `st.session_state["<prefix>_<name>"]` from
  the saved value (or the default) when the key is not already there, creates the widget WITHOUT a `value`/
  `index` argument (so Streamlit never warns about a default set twice) and saves the value on change;
- `memory.progress(...)` saves what is done and missing only on a run that follows the user's own change, so
  visiting a page writes nothing;
- `memory.accept(...)` adds an output to the workflow's history: only a user action (a button, a download, a
  check run on their input) calls it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import streamlit as st

from core.memory import ACCEPTED_KEPT, WORKFLOW_BY_ID, AcceptedOutput, Profile, WorkflowRecord, new_output_id
from ui.common import get_store, plain

_JSON_SCALARS = (str, int, float, bool, type(None))
# The widget-key prefix of each workflow page ("grpo_rbs", "ca_text", ...).
PAGE_PREFIX = {"grpo": "grpo", "async": "async", "multi_turn": "mt", "check_args": "ca", "check_data": "cd",
               "model_checkpoint": "mc", "alternatives": "alt", "monitor": "mon", "batch_calculator": "bc"}


class InputMemory:
    """One page's inputs for one profile, kept in the store (tool pages such as the batch calculator use it
    alone; workflow pages use PageMemory, which adds progress and accepted outputs)."""

    def __init__(self, page: str, prefix: str, profile: Profile) -> None:
        if PAGE_PREFIX.get(page) != prefix:
            raise ValueError(f"the widget keys of {page} start with {PAGE_PREFIX.get(page)!r}")
        self.page = page
        self.prefix = prefix
        self.profile = profile
        saved = get_store().inputs(profile.name, page)
        self.saved: dict[str, Any] = dict(saved.values) if saved else {}
        owner = f"_memory_owner_{prefix}"
        self._reload = st.session_state.get(owner) != profile.name  # first run, or another profile's values
        self._seeded: set[str] = set()
        self._assigned: set[str] = set()  # keys this run put in the session state (the widget takes them from there)
        st.session_state[owner] = profile.name

    @property
    def reloaded(self) -> bool:
        """True on this session's first run of the page for this profile: session-only state is stale."""
        return self._reload

    # -- inputs -----------------------------------------------------------------------------------
    def key(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def seed(self, name: str, default: Any, valid: Callable[[Any], bool] | None = None) -> str:
        """Put the saved value (else the default) in the session state, unless the widget holds one now."""
        key = self.key(name)
        if (self._reload and key not in self._seeded) or key not in st.session_state:
            value = self.saved.get(name, default)
            if name not in self.saved or (valid is not None and not valid(value)):
                value = default
            st.session_state[key] = value
            self._assigned.add(key)
        self._seeded.add(key)
        return key

    def widget(self, factory: Callable[..., Any], label: str, name: str, default: Any, *,
               valid: Callable[[Any], bool] | None = None, **kwargs: Any) -> Any:
        """Create a widget whose value is kept per profile; `options=`, `min_value=`, `max_value=` by keyword
        (`valid` replaces the check of a saved value that those imply).

        On a run that did not just put the value in the session state, the widget is also given that value as
        its default (`index=` or `value=`; with a key, Streamlit's widget identity does not depend on it). The
        browser falls back to a widget's default when it has lost the widget's value, as it does when two runs
        follow each other closely on a loaded machine; it then sends that default back as if the user had
        chosen it. With the default equal to the value, nothing the page holds is replaced by a stale default.
        """
        check = valid or _validator(default, kwargs)
        key = self.seed(name, default, check)
        self.labels[name] = label
        if key not in self._assigned:
            kwargs.update(_as_default(getattr(factory, "__name__", ""), st.session_state[key], kwargs, check))
        return factory(label, key=key, on_change=self._changed, args=(name,), **kwargs)

    @property
    def labels(self) -> dict[str, str]:
        """Each widget's label by input name, as last drawn in this session (for an output's changes)."""
        return st.session_state.setdefault(f"_memory_labels_{self.prefix}", {})

    def remembered(self, name: str, default: Any) -> Any:
        """A value that is not a widget's (e.g. a list of folders), as last saved."""
        value = self.saved.get(name, default)
        return value if type(value) is type(default) else default

    def remember(self, name: str, value: Any) -> None:
        """Save a value that is not a widget's after a user action changed it."""
        self.saved[name] = value
        get_store().update_inputs(self.profile.name, self.page, {name: _jsonable(value)})
        self.mark_changed()

    def mark_changed(self) -> None:
        """A user action that is not a kept input (e.g. an upload) changed the page's result."""
        st.session_state[self._changed_flag] = True

    def _changed(self, name: str) -> None:
        self.remember(name, st.session_state.get(self.key(name)))

    @property
    def _changed_flag(self) -> str:
        return f"_memory_changed_{self.prefix}"

    @property
    def user_changed(self) -> bool:
        """Whether this run follows a change the user made on the page (and no progress saved since)."""
        return bool(st.session_state.get(self._changed_flag))



class PageMemory(InputMemory):
    """One workflow page's inputs for one profile, its progress and the outputs the user accepted."""

    def __init__(self, workflow: str, prefix: str, profile: Profile) -> None:
        super().__init__(workflow, prefix, profile)
        self.workflow = WORKFLOW_BY_ID[workflow]
        self._status_slot: Any = None  # where done_caption drew the status line in this run

    # -- progress and accepted outputs ------------------------------------------------------------
    def progress(self, *, done: Iterable[str] = (), todo: Iterable[str] = (), summary: str = "") -> None:
        """Save what is done and what is missing, only on a run that follows the user's own change."""
        if not st.session_state.pop(self._changed_flag, False):
            return
        get_store().record(self.profile.name, WorkflowRecord(
            workflow=self.workflow.id, status="started", updated_at=time.time(), done_items=list(done),
            todo_items=list(todo), summary=summary))

    def accept(self, how: str, summary: str, *, output: str | None = None, output_name: str | None = None,
               output_mime: str = "text/plain", done: Iterable[str] = (), todo: Iterable[str] = ()) -> AcceptedOutput:
        """Keep an output in the workflow's history (a user action: never called by merely showing a page).

        The accepted output now stands for the user's latest change, so no progress is saved for it.
        """
        st.session_state.pop(self._changed_flag, None)
        kept = get_store().accept(self.profile.name, AcceptedOutput(
            id=new_output_id(), workflow=self.workflow.id, accepted_at=time.time(), how=how,
            summary=one_line(summary), done_items=list(done), todo_items=list(todo), output_name=output_name,
            output=output, output_mime=output_mime, inputs=dict(self.saved), inputs_shown=self.current_inputs(),
            input_labels={k: v for k, v in self.labels.items() if k in self.saved} or None))
        if self._status_slot is not None:  # accepted during this run, after the status line was drawn
            self._draw_done_caption(self._status_slot, kept)
        return kept

    def current_inputs(self) -> dict[str, Any]:
        """Every input as the page shows it now: the saved ones, and the widgets still at their defaults."""
        shown = {name: _jsonable(st.session_state[self.key(name)]) for name in self.labels
                 if self.key(name) in st.session_state}
        return {**shown, **self.saved}

    def latest_accepted(self) -> AcceptedOutput | None:
        history = get_store().accepted(self.profile.name, self.workflow.id)
        return history[0] if history else None

    def done_caption(self) -> None:
        """Say what marks this workflow done, and when it last was; an output accepted later in the same run
        (a check that just ran) redraws it, so the page never shows the state before the user's action."""
        self._status_slot = st.empty()
        self._draw_done_caption(self._status_slot, self.latest_accepted())

    def _draw_done_caption(self, slot: Any, last: AcceptedOutput | None) -> None:
        when = (f" {self.workflow.last_done} {when_text(last.accepted_at)}: {plain(last.summary)}." if last else
                " Not done yet.")
        slot.caption(f"Your answers on this page are kept for profile {plain(self.profile.name)}. "
                     f"{self.workflow.title} counts as done in What's done when {self.workflow.what_done_means}; "
                     f"visiting the page changes nothing there.{when}")


@dataclass
class AcceptControl:
    """An "Accept" button for an output on the page, with the callback a download of it also runs."""

    memory: PageMemory
    label: str
    how: str
    summary: str
    output: str
    output_name: str
    output_mime: str = "text/plain"
    done: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)
    then: Callable[[], None] | None = None  # what else accepting means on that page

    def callback(self, how: str | None = None) -> None:
        self.memory._status_slot = None  # a callback runs before the page: the page draws the new status itself
        self.memory.accept(how or self.how, self.summary, output=self.output, output_name=self.output_name,
                           output_mime=self.output_mime, done=self.done, todo=self.todo)
        if self.then is not None:
            self.then()

    def on_download(self) -> None:
        self.callback(f"downloaded {self.output_name}")

    def render(self, where: Any = st) -> None:
        """The button, or the note that this exact output is accepted already."""
        last = self.memory.latest_accepted()
        if last is not None and last.output == self.output:
            where.success(f"Accepted {when_text(last.accepted_at)}; kept in What's done "
                          f"(the last {ACCEPTED_KEPT} accepted outputs are kept).", icon=":material/task_alt:")
            return
        where.button(self.label, key=f"{self.memory.prefix}_accept", type="primary", on_click=self.callback,
                     help=f"Marks {self.memory.workflow.title} done in What's done and keeps this output there; "
                          "earlier accepted outputs stay in its history.")


LAUNCH_PAGES = ("grpo", "async", "multi_turn")  # the pages whose drafts take checkpoint paths


def hand_over_inputs(profile: Profile, pages: Iterable[str], values: dict[str, Any]) -> None:
    """An accepted output of one workflow feeds the next: set these inputs on each page (a user action, e.g.
    accepting the conversion command, calls it); every page shows and keeps them, and the user can edit them."""
    for page in pages:
        get_store().update_inputs(profile.name, page, {k: _jsonable(v) for k, v in values.items()})
        for name in values:
            st.session_state.pop(f"{PAGE_PREFIX[page]}_{name}", None)  # re-seeded from the store on its next run


def reopen_with_inputs(profile: Profile, output: AcceptedOutput) -> None:
    """Put an accepted output's answers back on its page; the page reloads them on its next run."""
    get_store().replace_inputs(profile.name, output.workflow, output.inputs or {})
    st.session_state.pop(f"_memory_owner_{PAGE_PREFIX[output.workflow]}", None)  # every widget re-seeded


def one_line(text: str, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def when_text(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def _validator(default: Any, kwargs: dict[str, Any]) -> Callable[[Any], bool]:
    """Whether a saved value can still be given to the widget (options and bounds may have changed)."""
    options = kwargs.get("options")
    low, high = kwargs.get("min_value"), kwargs.get("max_value")

    def valid(value: Any) -> bool:
        if options is not None:
            return value in list(options)
        if type(value) is not type(default):
            return False
        if low is not None and value < low:
            return False
        return high is None or value <= high

    return valid


_INDEX_WIDGETS = frozenset({"selectbox", "radio"})  # the widgets whose default is an option's position
_VALUE_WIDGETS = frozenset({"text_input", "text_area", "number_input", "checkbox", "toggle", "slider"})


def _as_default(kind: str, value: Any, kwargs: dict[str, Any], valid: Callable[[Any], bool]) -> dict[str, Any]:
    """The keyword that makes `value` the widget's default (`index=` or `value=`), or nothing when the widget
    kind is not one of these or the value is not one it can take."""
    if kind in _INDEX_WIDGETS:
        options = list(kwargs.get("options", ()))
        return {"index": options.index(value)} if value in options else {}
    if kind in _VALUE_WIDGETS and valid(value):
        return {"value": value}
    return {}


def _jsonable(value: Any) -> Any:
    if isinstance(value, _JSON_SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        return [v if isinstance(v, (str, dict)) else str(v) for v in value]
    return str(value)
