"""How text from outside (file names, JSON keys, pasted scripts) is shown when it is not valid Unicode, and how
it reaches a terminal.

File names on Linux are bytes; Python hands a name that is not UTF-8 to us as text holding lone surrogates
(the `surrogateescape` handler: byte 0xff becomes U+DCFF), and a JSON escape such as \\ud800 gives one too.
Such text cannot be encoded. `shown` writes each undecodable byte as a visible `\\xff` and any other lone
surrogate as `\\ud800`: the text says exactly what it held, and is valid Unicode. One rule for every output.
Text printed for people also goes through `for_terminal`: a file, a run or a paste cannot send a terminal
control sequence (clear the screen, hide text, set the title), and one huge line is cut.
"""

from __future__ import annotations

import re

LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogate(char: str) -> str:
    code = ord(char)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def shown(text: str) -> str:
    """`text` with lone surrogates written as backslash escapes (`\\xff` for an undecodable byte)."""
    return LONE_SURROGATE.sub(lambda m: escape_surrogate(m.group()), text)


# every C0 control character but tab and newline, DEL, and every C1 control character
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
TERMINAL_LINE_LIMIT = 4000  # characters of one printed line; a longer one is a file's content, not a report


def escape_control(char: str) -> str:
    return f"\\x{ord(char):02x}"


def for_terminal(text: str, limit: int | None = TERMINAL_LINE_LIMIT) -> str:
    """`text` as it may reach a terminal: it cannot move the cursor, clear the screen, hide text or set the
    window title.

    Every C0 and C1 control character but tab and newline (ESC, BEL, CR, backspace, CSI U+009B ...) is written
    as a visible `\\x1b`, lone surrogates as `shown` writes them, and a line longer than `limit` characters
    (after escaping) is cut in its middle, saying how many characters were left out: its beginning and its end
    (where a message says what went wrong) stay. `limit=None` cuts nothing."""
    text = shown(text)
    if CONTROL.search(text):
        text = CONTROL.sub(lambda m: escape_control(m.group()), text)
    if limit is None or len(text) <= limit:
        return text
    head = limit - limit // 4
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if len(line) > limit:
            lines[i] = f"{line[:head]} ... ({len(line) - limit:,} characters not shown) ... {line[head - limit:]}"
    return "\n".join(lines)
