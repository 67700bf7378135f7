"""The bundle file: a zstd-compressed tar holding ``manifest.json`` first, then one JSON-lines
file per table. Writing it (atomically: a temporary file renamed into place) and reading it back
with every check a damaged or foreign bundle must fail.

File I/O only; no database.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from app.bundles.tables import BY_NAME, FORMAT, MANIFEST

_CHUNK = 1 << 20


class BundleRefused(Exception):
    """A bundle that cannot be imported: one line naming the file and what is wrong."""


@dataclass(slots=True)
class TableFile:
    """One table's rows as written: JSON lines, with its count and digest."""

    table: str
    path: Path
    rows: int = 0
    digest: Any = field(default_factory=hashlib.sha256)
    size: int = 0

    def add(self, line: str, stream: io.BufferedWriter) -> None:
        data = line.encode() + b"\n"
        stream.write(data)
        self.digest.update(data)
        self.size += len(data)
        self.rows += 1

    def entry(self, columns: list[str]) -> dict[str, Any]:
        return {
            "path": f"tables/{self.table}.jsonl",
            "table": self.table,
            "rows": self.rows,
            "bytes": self.size,
            "sha256": self.digest.hexdigest(),
            "columns": columns,
        }


def write_bundle(out: Path, manifest: dict[str, Any], files: list[TableFile]) -> None:
    """``manifest.json`` then each table's file, compressed, renamed into ``out`` at the end."""
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(handle, "wb") as raw:
            compressor = zstandard.ZstdCompressor(level=10, threads=-1)
            with (
                compressor.stream_writer(raw, closefd=False) as packed,
                tarfile.open(fileobj=packed, mode="w|", format=tarfile.PAX_FORMAT) as tar,
            ):
                data = json.dumps(manifest, indent=2, ensure_ascii=False).encode() + b"\n"
                _add(tar, MANIFEST, io.BytesIO(data), len(data))
                for file in files:
                    with file.path.open("rb") as stream:
                        _add(tar, f"tables/{file.table}.jsonl", stream, file.size)
        os.replace(scratch, out)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise


def _add(tar: tarfile.TarFile, name: str, stream: Any, size: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    tar.addfile(info, stream)


@dataclass(frozen=True, slots=True)
class Bundle:
    manifest: dict[str, Any]
    rows: dict[str, list[dict[str, Any]]]
    """Each table's rows, parsed, in file order."""


def read_bundle(path: Path) -> Bundle:
    """Read and check everything before anything is stored; ``BundleRefused`` names the file."""
    members = _members(path)
    if MANIFEST not in members:
        raise BundleRefused(f"{path}: no {MANIFEST} in it; not a workmem bundle")
    try:
        manifest = json.loads(members.pop(MANIFEST))
    except ValueError:
        raise BundleRefused(f"{path}: {MANIFEST} is not valid JSON") from None
    if not isinstance(manifest, dict):
        raise BundleRefused(f"{path}: {MANIFEST} is not a JSON object")
    if manifest.get("format") != FORMAT:
        raise BundleRefused(
            f"{path}: bundle format {manifest.get('format')!r} is not one this version reads "
            f"({FORMAT})"
        )
    entries = manifest.get("files")
    if not isinstance(entries, list):
        raise BundleRefused(f"{path}: {MANIFEST} lists no files")
    rows: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        name, table = str(entry.get("path")), str(entry.get("table"))
        if table not in BY_NAME or name != BY_NAME[table].path:
            raise BundleRefused(f"{path}: {name} holds no table this version knows ({table})")
        data = members.pop(name, None)
        if data is None:
            raise BundleRefused(f"{path}: {name} is listed in {MANIFEST} but not in the bundle")
        if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise BundleRefused(f"{path}: {name} does not match its sha256 in {MANIFEST}")
        rows[table] = list(_lines(path, name, data))
        if len(rows[table]) != entry.get("rows"):
            raise BundleRefused(
                f"{path}: {name} holds {len(rows[table])} rows, not {entry.get('rows')}"
            )
    if members:
        raise BundleRefused(f"{path}: {sorted(members)[0]} is in the bundle but not in {MANIFEST}")
    return Bundle(manifest, rows)


def _lines(path: Path, name: str, data: bytes) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(data.splitlines(), start=1):
        try:
            row = json.loads(line)
        except ValueError:
            raise BundleRefused(f"{path}: {name} line {number} is not JSON") from None
        if not isinstance(row, dict):
            raise BundleRefused(f"{path}: {name} line {number} is not a JSON object")
        yield row


def _members(path: Path) -> dict[str, bytes]:
    """Every regular file of the tar, after checking the zstd stream ends where it should."""
    try:
        compressed = path.open("rb")
    except OSError as error:
        raise BundleRefused(f"cannot read the bundle {path}: {error.strerror}") from None
    with compressed:
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        plain = bytearray()
        try:
            while chunk := compressed.read(_CHUNK):
                plain += decompressor.decompress(chunk)
        except zstandard.ZstdError:
            raise BundleRefused(f"{path}: not a zstd-compressed workmem bundle") from None
        if not decompressor.eof:
            raise BundleRefused(f"{path}: the bundle is truncated (the zstd stream ends early)")
    members: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(bytes(plain)), mode="r:") as tar:
            for info in tar:
                extracted = tar.extractfile(info) if info.isfile() else None
                if extracted is not None:
                    members[info.name] = extracted.read()
    except (tarfile.TarError, EOFError):
        raise BundleRefused(f"{path}: not a complete tar archive inside the zstd stream") from None
    return members
