"""Read a LongMemEval file one question at a time: `.json` arrays through `ijson` (a streaming JSON parser),
`.jsonl` line by line, either one plain or `.xz`/`.gz` compressed, the sha256 of the decompressed bytes computed
in 1 MiB chunks as they pass. Memory: one question's raw dict (an M haystack, ~5 MB of text) plus the buffer,
never the whole file (LongMemEval_M is 2.6 GB).

A `.json` file holding one question object per line (as the official loaders tolerate) is read as JSONL; a file
holding one JSON object or scalar is refused. Every failure is a one-line DataError naming the file and the fix.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator

import ijson

from bench.errors import DataError

CHUNK = 1 << 20  # bytes read (and hashed) at a time
SUFFIXES = (".json", ".json.xz", ".json.gz", ".jsonl", ".jsonl.xz", ".jsonl.gz")


class _Hashing(io.RawIOBase):
    """A raw reader that feeds every byte it hands out to `hasher` (hashlib), so a file is hashed as it streams."""

    def __init__(self, fh: IO[bytes], hasher: Any | None) -> None:
        self._fh = fh
        self._hasher = hasher

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._fh.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        if self._hasher is not None and n:
            self._hasher.update(data)
        return n


def suffix_of(path: Path) -> str:
    """The data suffix of a file name (`.json.xz`, `.jsonl`, ...), else its last suffix."""
    name = path.name
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return suffix
    return path.suffix


@contextmanager
def open_decompressed(path: Path, hasher: Any | None = None) -> Iterator[io.BufferedReader]:
    """The decompressed bytes of `path` as a buffered binary stream; `hasher` sees every byte read from it."""
    if path.name.endswith(".xz"):
        raw: IO[bytes] = lzma.open(path, "rb")
    elif path.name.endswith(".gz"):
        raw = gzip.open(path, "rb")  # type: ignore[assignment]
    else:
        raw = open(path, "rb")  # noqa: SIM115 (closed below)
    try:
        yield io.BufferedReader(_Hashing(raw, hasher), CHUNK)
    finally:
        raw.close()


def iter_values(path: Path, hasher: Any | None = None, *, one_object_ok: bool = False) -> Iterator[Any]:
    """Each question of the file as its raw JSON value (not yet validated), in file order. With `hasher`, the
    whole decompressed file passes through it once the iteration ends (trailing bytes included). Raises
    DataError (one line) for a missing, unreadable or undecompressable file, invalid JSON or UTF-8, and a file
    holding one JSON value that is not an array (`one_object_ok`: one object is a file of one record)."""
    try:
        with open_decompressed(path, hasher) as fh:
            if suffix_of(path).startswith(".jsonl"):
                yield from _jsonl(fh, path)
            else:
                yield from _json(fh, path, one_object_ok)
            if hasher is not None:
                while fh.read(CHUNK):
                    pass
    except FileNotFoundError:
        raise DataError(f"{path}: file not found; check the path") from None
    except (lzma.LZMAError, gzip.BadGzipFile, EOFError) as exc:
        raise DataError(f"{path}: cannot decompress ({exc}); re-download the file or give the uncompressed .json") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason}); LongMemEval files are UTF-8 JSON") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a folder, not a data file; give the file inside it") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc}); check the path and its permissions") from None


def _first_byte(fh: io.BufferedReader) -> bytes:
    """The first non-blank byte, left unread (b'' for an empty file); a UTF-8 byte-order mark is skipped."""
    while True:
        head = fh.peek(64)
        if not head:
            return b""
        stripped = head.lstrip(b" \t\r\n")
        if stripped.startswith(b"\xef\xbb\xbf"):
            fh.read(len(head) - len(stripped) + 3)
            continue
        if stripped:
            fh.read(len(head) - len(stripped))
            return stripped[:1]
        fh.read(len(head))


_KIND = {b"{": "dict", b'"': "str", b"t": "bool", b"f": "bool", b"n": "null"}


def _json(fh: io.BufferedReader, path: Path, one_object_ok: bool = False) -> Iterator[Any]:
    first = _first_byte(fh)
    if not first:
        return
    try:
        if first == b"[":
            yield from ijson.items(fh, "item", use_float=True)
            return
        values = ijson.items(fh, "", multiple_values=True, use_float=True)
        head = next(values)
        second = next(values, _END)
        if second is _END and one_object_ok and first == b"{":
            yield head
            return
        if second is _END:
            kind = _KIND.get(first, "number")
            raise DataError(f"{path}: the file holds a JSON {kind}, not an array of questions; use the LongMemEval "
                            ".json (array) or .jsonl (one question per line) format")
        yield head  # a .json holding one question per line, as the official loaders tolerate
        yield second
        yield from values
    except ijson.JSONError as exc:
        raise DataError(f"{path}: invalid JSON ({_first_line(exc)}); fix or re-download the file") from None


_END = object()


def _jsonl(fh: io.BufferedReader, path: Path) -> Iterator[Any]:
    for lineno, line in enumerate(fh, 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: invalid JSON on line {lineno} ({exc.msg}); each line of a .jsonl file must be "
                            "one question object") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
