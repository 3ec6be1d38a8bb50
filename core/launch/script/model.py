"""What the bash reader returns: the words of the train command, notes, stray commands; and its limits."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

MAX_SCRIPT_CHARS = 262_144  # launch scripts are a few kilobytes; larger input is refused with a finding
MAX_EXPANDED_WORDS = 20_000
MAX_SOURCE_DEPTH = 4
MAX_NESTING = 64  # nested ${...:-...}, quotes or parentheses deeper than this are refused, not recursed into
MAX_NOTES_PER_KIND = 20
MAX_BLOCK_DEPTH = 200  # if, loop, function and subshell blocks nested deeper stop the reader with a finding
MAX_INT_DIGITS = 19  # bash integers are 64-bit: a longer number is left unresolved, never converted
MAX_VALUE_CHARS = 100_000  # one expanded value (a word, a variable); a longer one is left unresolved
# Total work of all expansions in one read: characters produced plus WORD_COST per word. The largest pinned
# slime script needs about 14,000, a train command of MAX_SCRIPT_CHARS of short flags about 360,000; a
# variable doubled again and again reaches it in a few lines.
MAX_EXPANSION_WORK = 4_000_000
WORD_COST = 16


class ScriptWord(BaseModel):
    """One word of the final command after expansion, located where its text was written."""

    text: str
    line: int | None = None
    resolved: bool = True
    spread: bool = False  # an unquoted unresolved expansion: it may stand for any number of words
    conditional: bool = False
    origin: str | None = None  # e.g. "scripts/models/qwen3-4B.sh" when the word came from a sourced script
    reason: str | None = None  # why it is unresolved
    split_from: str | None = None  # "$VAR=value" when an unquoted variable's value was split into this and other words


class ScriptNote(BaseModel):
    """Something the reader noticed: an unterminated quote, a value it could not resolve, a sourced file..."""

    kind: str
    line: int | None = None
    message: str
    subject: str | None = None  # the variable, file or text concerned


class StrayCommand(BaseModel):
    """A command that begins with flags: words that were meant for the train command but never reach it."""

    line: int
    raw: str
    flags: list[str]
    cause: str


class LaunchCommand(BaseModel):
    """A `python ... train.py` / `train_async.py` command and its arguments."""

    entry: str
    line: int
    args: list[ScriptWord]
    conditional: bool = False  # inside an if/loop/function: it may not run


class ReadScript(BaseModel):
    commands: list[LaunchCommand]
    notes: list[ScriptNote]
    scalars: dict[str, str | None]
    arrays: dict[str, list[ScriptWord] | None]
    stray_commands: list[StrayCommand]  # commands that begin with flags (a broken `\` continuation)

    @property
    def command(self) -> LaunchCommand | None:
        """The command that is checked: the last train command in the script."""
        return self.commands[-1] if self.commands else None


# A model script as the reader can use it when a launch script sources it.
class SourcedModel(BaseModel):
    path: str
    source: str
    model_args: list[str]


SourceResolver = Callable[[str], "SourcedModel | str | None"]
"""Given the path text of a `source` command, return a model script's words, the text of the sourced file
(to be read in place), or None when it is not available."""


# --------------------------------------------------------------------------------------------------
