"""Find planted secrets in everything a run wrote: every file's raw bytes, and what compression hides from a
byte search (DuckDB's compressed columns, Parquet pages, SQLite, zlib blobs such as call_texts, gzip/xz files).

`sweep(roots, needles)` returns one `Hit` per (file, where, needle) found; a clean run returns []."""

from __future__ import annotations

import bz2
import gzip
import lzma
import sqlite3
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable


@dataclass(frozen=True)
class Hit:
    path: str
    where: str  # "bytes", "name", or the table.column / decompressed form it was found in
    needle: str


def _decompressed(data: bytes) -> Iterable[tuple[str, bytes]]:
    for name, fn in (("zlib", zlib.decompress), ("gzip", gzip.decompress), ("xz", lzma.decompress),
                     ("bz2", bz2.decompress)):
        try:
            yield name, fn(data)
        except Exception:
            continue


def _values(value: Any) -> Iterable[tuple[str, bytes]]:
    """A cell as bytes to search: text as UTF-8, blobs as they are and decompressed."""
    if value is None:
        return
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        yield "", raw
        for name, out in _decompressed(raw):
            yield f"+{name}", out
    else:
        yield "", str(value).encode("utf-8", "replace")


def _rows_duckdb(path: Path, parquet: bool = False) -> Iterable[tuple[str, Any]]:
    import duckdb

    con = duckdb.connect(":memory:") if parquet else duckdb.connect(str(path), read_only=True)
    try:
        if parquet:
            tables = [("parquet", f"read_parquet('{path}')")]
        else:
            names = con.execute("SELECT table_schema, table_name FROM information_schema.tables").fetchall()
            tables = [(f"{s}.{t}", f'"{s}"."{t}"') for s, t in names]
        for label, source in tables:
            cur = con.execute(f"SELECT * FROM {source}")
            cols = [d[0] for d in cur.description]
            for row in cur.fetchall():
                for col, value in zip(cols, row):
                    yield f"{label}.{col}", value
    finally:
        con.close()


def _rows_sqlite(path: Path) -> Iterable[tuple[str, Any]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
            cur = con.execute(f'SELECT * FROM "{table}"')
            cols = [d[0] for d in cur.description]
            for row in cur.fetchall():
                for col, value in zip(cols, row):
                    yield f"{table}.{col}", value
    finally:
        con.close()


def _cells(path: Path) -> Iterable[tuple[str, Any]]:
    head = path.read_bytes()[:16]
    if path.suffix == ".parquet":
        yield from _rows_duckdb(path, parquet=True)
    elif head.startswith(b"SQLite format 3"):
        yield from _rows_sqlite(path)
    elif path.suffix in (".duckdb", ".db") and not path.name.endswith(".wal"):
        try:
            yield from _rows_duckdb(path)
        except Exception:  # not a DuckDB file after all: its bytes were searched anyway
            return


def sweep(roots: Iterable[Path | str], needles: Iterable[str], kinds: Counter[str] | None = None) -> list[Hit]:
    """Every occurrence of a needle under `roots` (files and folders, recursively): in a file or folder name,
    in its bytes (and decompressed bytes), in every cell of a DuckDB, Parquet or SQLite file. `kinds` counts
    the files searched by kind (extension)."""
    wanted = [n.encode() for n in needles]
    hits: list[Hit] = []
    for root in roots:
        root = Path(root)
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in paths:
            for n in needles:
                if n in path.name:
                    hits.append(Hit(str(path), "name", n))
            if not path.is_file():
                continue
            if kinds is not None:
                kinds[path.suffix or path.name] += 1
            data = path.read_bytes()
            for label, blob in [("bytes", data), *_decompressed(data)]:
                for n, w in zip(needles, wanted):
                    if w in blob:
                        hits.append(Hit(str(path), label, n))
            for where, value in _cells(path):
                for suffix, blob in _values(value):
                    for n, w in zip(needles, wanted):
                        if w in blob:
                            hits.append(Hit(str(path), where + suffix, n))
    return hits
