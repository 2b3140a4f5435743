"""What encoding a text file that should be UTF-8 has instead: a byte order mark of UTF-16 or UTF-32 (a file re-saved
on another machine: Excel's "Unicode Text" is UTF-16 LE), UTF-16 without one, or binary data. Standard library only:
the import jobs use it and must not pay numpy's import."""

from __future__ import annotations

import codecs
from pathlib import Path

# Byte order marks of the encodings a file exported on another machine may have (Excel's "Unicode Text" is UTF-16
# LE; UTF-32 before UTF-16: its LE mark starts with UTF-16's). UTF-8's own mark is read as UTF-8.
BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "UTF-32 BE"),
    (codecs.BOM_UTF16_LE, "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "UTF-16 BE"),
)


def encoding_problem(path: Path, head: bytes | None = None, expected: str = "a UTF-8 CSV text file") -> str | None:
    """Why ``path`` (or its first bytes, ``head``) is not UTF-8 text, naming the encoding detected (a byte order
    mark; NUL bytes every other byte without one) or binary data, or None. Not converted here: the raw file stays as
    it was, and the message says how to convert a copy."""
    if head is None:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    head = head[:4096]
    for bom, name in BOMS:
        if head.startswith(bom):
            return (
                f"{path}: line 1: {name} text (byte order mark {bom.hex(' ')}); "
                f"expected UTF-8: convert it, e.g. iconv -f {name.split()[0]} -t UTF-8"
            )
    for order, odd in (("LE", head[1::2]), ("BE", head[0::2])):  # ASCII in UTF-16: its high byte is NUL
        if len(head) >= 4 and odd.count(0) > len(head) // 4:
            return (
                f"{path}: line 1: looks like UTF-16 {order} text without a byte order mark (NUL "
                f"every other byte); expected UTF-8: convert it, e.g. iconv -f UTF-16{order} -t UTF-8"
            )
    if b"\x00" in head:
        return f"{path}: line {head[: head.index(0)].count(10) + 1}: binary data (NUL byte); expected {expected}"
    return None
