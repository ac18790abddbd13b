"""Kafka's checkpoint text files: a version line, a count line, then one entry a line.

    0                        version (always 0)
    3                        number of entry lines that follow
    orders 0 1200            entries; for an offset checkpoint "topic partition offset"
    orders 1 977
    payments 0 31

Files in this format, all rewritten whole through `replace_file` (temp, fsync, rename, fsync
of the directory), so after a crash each is either the old or the new version:
- `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` (segment engine's store),
- `replication-offset-checkpoint` (each partition's high watermark, the replica layer),
- `leader-epoch-checkpoint` (one per partition, entries "epoch start_offset", leader_epoch_cache.py).

A file that does not parse (a version other than 0, fewer lines than its count says, a field
that is not a number) is reported and read as absent: every one of them can be rebuilt or
is a lower bound its reader can start from.
"""

from __future__ import annotations

import logging
from pathlib import Path

from segment.file_io import replace_file

log = logging.getLogger(__name__)

VERSION = 0


class MalformedCheckpoint(ValueError):
    """The file exists but is not a version-0 checkpoint with as many entries as it says."""


def read_entry_lines(path: Path) -> list[str] | None:
    """The entry lines of a checkpoint file; None if there is none; MalformedCheckpoint if it does not parse."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    lines = text.split("\n")
    try:
        version, count = int(lines[0]), int(lines[1])
    except (ValueError, IndexError) as exc:
        raise MalformedCheckpoint("no version and count lines") from exc
    if version != VERSION:
        raise MalformedCheckpoint(f"version {version}, expected {VERSION}")
    entries = lines[2 : 2 + count]
    if count < 0 or len(entries) != count or any(not line for line in entries):
        raise MalformedCheckpoint(f"says {count} entries, holds {len(entries)}")
    return entries


def entry_lines_text(entries: list[str]) -> str:
    """A checkpoint file's whole text."""
    return f"{VERSION}\n{len(entries)}\n" + "".join(line + "\n" for line in entries)


def write_entry_lines(path: Path, entries: list[str]) -> None:
    replace_file(path, entry_lines_text(entries))


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """(topic, partition) -> offset; empty when the file is missing or malformed (with a warning)."""
    try:
        lines = read_entry_lines(path)
        out = {}
        for line in lines or ():
            topic, partition, offset = line.rsplit(" ", 2)
            out[(topic, int(partition))] = int(offset)
        return out
    except (MalformedCheckpoint, ValueError):
        log.warning("ignoring malformed checkpoint %s", path)
        return {}


def write_checkpoint(path: Path, entries: dict[tuple[str, int], int]) -> None:
    write_entry_lines(path, [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())])
