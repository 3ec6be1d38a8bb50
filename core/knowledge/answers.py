"""What `ask` returns: a result, the answer with what was read from a paste, and the kinds of records (their
titles as the front-ends show them); the search itself is core/knowledge/search.py."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from core.knowledge.documents import _short

KINDS = ("card", "section", "flag", "rule", "error", "log", "model_script", "runtime", "term", "bug")
KIND_TITLES = {"card": "Knowledge cards", "section": "Card sections", "flag": "Flags", "rule": "Our checks",
               "error": "Error messages (slime, Megatron-LM, SGLang)", "log": "slime log lines",
               "model_script": "Model scripts", "runtime": "Messages from the layers under slime",
               "term": "Other frameworks' words", "bug": "Known bugs fixed upstream"}
# How sure a result is: what the UI and `ask` show beside it.
MATCH_TITLES = {"exact": "matches", "likely": "probably", "related": "related", "closest": "closest, not a match"}
READ_AS_CHARS = 300


class Result(BaseModel):
    kind: str = Field(description="card | section | flag | rule | error | log | model_script")
    id: str
    title: str
    snippet: str
    source: str
    match: str = Field(default="related", description="exact | likely | related | closest (see MATCH_TITLES)")
    also: list[str] = Field(default_factory=list, description="the sources of results that read the same, "
                            "folded into this one (`distinct`)")

    def public(self) -> dict[str, Any]:
        out = self.model_dump()
        if not self.also:
            del out["also"]
        return out


def distinct(results: list[Result]) -> list[Result]:
    """The results with those that read the same as an earlier one (the same kind and title: one message
    written in two files, say) folded into it, their sources kept in `also`; order kept."""
    out: list[Result] = []
    first: dict[tuple[str, str], Result] = {}
    for r in results:
        seen = first.get((r.kind, r.title))
        if seen is None:
            first[(r.kind, r.title)] = copy = r.model_copy(update={"also": list(r.also)})
            out.append(copy)
        elif r.source != seen.source and r.source not in seen.also:
            seen.also.append(r.source)
    return out


class Answer(BaseModel):
    """What `ask` answers: the results best first, and for a pasted error what was read from it and whether
    an indexed message matched (an honest "not found" rather than an unrelated record shown as a match)."""

    results: list[Result]
    pasted_error: bool = False
    error_type: str | None = None
    error_message: str | None = None
    layer: str | None = Field(default=None, description="where the traceback's frames say it was raised")
    raised_in: str | None = Field(default=None, description="the library of the traceback's innermost frame")
    own_frame: str | None = Field(default=None, description="the innermost frame in slime, Megatron-LM or SGLang, "
                                  "as `path, line N, in function` (None: no such frame)")
    own_layer: str | None = None
    found: bool = Field(default=True, description="for a pasted error: an indexed message matched it")
    notice: str | None = None
    cut_chars: int = Field(default=0, description="a paste longer than MAX_PASTE_CHARS: its beginning, cut")

    @property
    def read_as(self) -> str:
        """What was read from the paste, in one line: `Type: message`, or `Type (no message)`; a long message
        cut at a word, with an ellipsis."""
        message = _short(self.error_message or "", READ_AS_CHARS)
        if self.error_type:
            return f"{self.error_type}: {message}" if message else f"{self.error_type} (no message)"
        return message

    @property
    def where_raised(self) -> str:
        """Who raised it and where the innermost frame of slime (or Megatron-LM, SGLang) is, in words; empty
        without frames."""
        if not self.raised_in:
            return ""
        if self.own_frame is None:
            return f"raised in {self.raised_in}; no frame of slime, Megatron-LM or SGLang in the traceback"
        if self.own_layer == self.raised_in:
            return f"raised in {self.raised_in}, at {self.own_frame}"
        return f"raised in {self.raised_in}, called from {self.own_layer}: its innermost frame is {self.own_frame}"

    def public(self) -> dict[str, Any]:
        return {"results": [r.public() for r in self.results], "found": self.found, "notice": self.notice,
                **({"cut_chars": self.cut_chars} if self.cut_chars else {}),
                "error": {"type": self.error_type, "message": self.error_message, "layer": self.layer}
                if self.pasted_error else None}


def grouped(results: list[Result]) -> dict[str, list[Result]]:
    """Results by kind, kinds in the order of their best result."""
    out: dict[str, list[Result]] = {}
    for r in results:
        out.setdefault(r.kind, []).append(r)
    return out
