"""How text from outside (file names, JSON keys, pasted scripts) is shown when it is not valid Unicode.

File names on Linux are bytes; Python hands a name that is not UTF-8 to us as text holding lone surrogates
(the `surrogateescape` handler: byte 0xff becomes U+DCFF), and a JSON escape such as \\ud800 gives one too.
Such text cannot be encoded. `shown` writes each undecodable byte as a visible `\\xff` and any other lone
surrogate as `\\ud800`: the text says exactly what it held, and is valid Unicode. One rule for every output.
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
