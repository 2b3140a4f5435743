"""Reading a text file that must be text: binary data and non-UTF-8 bytes end in the parser's own error type,
naming the file and the line, never in a decoding crash."""

from __future__ import annotations

from pathlib import Path


def read_text_file(path: Path, error: type[Exception]) -> str:
    raw = path.read_bytes()
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise error(f"{path}: line {line}: binary data (NUL byte); expected a CSV text file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{path}: line {line}: not UTF-8 text ({exc.reason}); expected a CSV text file") from exc
