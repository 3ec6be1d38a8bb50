"""What every command prints goes through here: output that never crashes, and JSON that is always valid.

File names on Linux are bytes. Python hands a name that is not UTF-8 to us as text holding lone
surrogates (the `surrogateescape` error handler: byte 0xff becomes U+DCFF), and such text cannot be
encoded by a UTF-8 or ASCII stream. The rules:
- `shown(text)` writes each undecodable byte as a visible `\\xff` and any other lone surrogate as `\\ud800`:
  the text says exactly which byte it was, and is valid Unicode.
- `write_text` and `say` print through `for_terminal` (core/text.py): `shown`'s escapes, every control character
  but tab and newline written as a visible `\\x1b` (a run name, a file or a paste cannot clear the screen or
  set the terminal's title), and a line of more than 4,000 characters cut with a note; then they escape
  whatever the stream's encoding cannot carry (for example `é` on an ASCII stdout) with a backslash escape: text output never raises UnicodeEncodeError.
- `write_json` prints a JSON document built with `ensure_ascii=False`, with lone surrogates turned into the
  same `\\xff` text (the backslash itself escaped, so the document stays valid JSON) and every character the
  stream cannot carry written as a JSON `\\uXXXX` escape: the output is valid UTF-8 JSON whatever the names.
  json.dumps already escapes C0 control characters; DEL and the C1 ones (U+009B is a CSI) are escaped here.
- `progress(text)` rewrites the one progress line on stderr: its own carriage return and erase sequence are
  the only control characters this package ever writes.
- `guard_streams()`, run once by `main()`, makes stdout and stderr write any text that slips past these
  helpers (argparse's own messages, for one) with the same escapes instead of raising.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from typing import TextIO

from core.text import LONE_SURROGATE, TERMINAL_LINE_LIMIT, escape_surrogate, for_terminal, shown  # noqa: F401 (shown: re-exported)

ERROR_HANDLER = "slime_assistant_shown"
JSON_UNESCAPED_CONTROL = re.compile("[\x7f-\x9f]")  # control characters json.dumps leaves as they are


def _stream_handler(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start:error.end]
    parts = []
    for char in bad:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            parts.append(escape_surrogate(char))
        elif code <= 0xFF:
            parts.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            parts.append(f"\\u{code:04x}")
        else:
            parts.append(f"\\U{code:08x}")
    return "".join(parts), error.end


codecs.register_error(ERROR_HANDLER, _stream_handler)


def guard_streams() -> None:
    """Make sys.stdout and sys.stderr escape what their encoding cannot carry instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            reconfigure(errors=ERROR_HANDLER)
        except (ValueError, OSError, TypeError):  # a detached or closed stream: leave it alone
            continue


def _encoding(stream: TextIO) -> str:
    return getattr(stream, "encoding", None) or "utf-8"


def _write(stream: TextIO, text: str) -> None:
    """Write text that the stream's encoding is known to carry, whatever error handler the stream has."""
    encoding = _encoding(stream)
    safe = text.encode(encoding, ERROR_HANDLER).decode(encoding)
    stream.write(safe)


def write_text(text: str, *, stream: TextIO | None = None, end: str = "\n",
               limit: int | None = TERMINAL_LINE_LIMIT) -> None:
    """Print text for people: never raises an encoding error, whatever the text and the stream, and sends no
    control sequence. `limit=None` keeps every line whole (a drafted script, which is saved and run)."""
    _write(stream or sys.stdout, for_terminal(text, limit) + end)


def say(text: str, *, end: str = "\n") -> None:
    """A message on stderr (errors, notes), under the same rule as `write_text`; flushed at once."""
    write_text(text, stream=sys.stderr, end=end)
    sys.stderr.flush()


ERASE_LINE = "\r\033[K"


def progress(text: str) -> None:
    """Rewrite the progress line on stderr with `text` (escaped as `say` does); `progress("")` erases it."""
    _write(sys.stderr, ERASE_LINE + for_terminal(text))
    sys.stderr.flush()


def _json_escape_unencodable(text: str, encoding: str) -> str:
    """Replace characters the encoding cannot carry by JSON escapes (valid: they only occur in strings)."""
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        pass
    out = []
    for char in text:
        try:
            char.encode(encoding)
            out.append(char)
        except UnicodeEncodeError:
            code = ord(char)
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
    return "".join(out)


def json_text(document: str, *, encoding: str = "utf-8") -> str:
    """A JSON document (serialized with ensure_ascii=False) made safe to print: lone surrogates become the
    visible text `\\xff` (backslash escaped for JSON), characters the encoding lacks become `\\uXXXX`."""
    document = LONE_SURROGATE.sub(lambda m: "\\" + escape_surrogate(m.group()), document)
    document = JSON_UNESCAPED_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", document)
    return _json_escape_unencodable(document, encoding)


def write_json(document: str | object, *, stream: TextIO | None = None) -> None:
    """Print a JSON document (a serialized string, or an object to serialize) as valid JSON, always."""
    stream = stream or sys.stdout
    if not isinstance(document, str):
        document = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False, default=str)
    _write(stream, json_text(document, encoding=_encoding(stream)) + "\n")
