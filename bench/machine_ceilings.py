"""The machine's own ceilings for the broker's two paths, measured without any broker.

Fetch: a hot file sent with os.sendfile over a loopback TCP socket to a reader that only counts
bytes (recv_into one reused buffer). That is the path DESIGN.md asks Fetch to take (file
regions, never re-encoded) minus everything Kafka adds: no framing, no request/response turns,
no record parsing, and a reader that copies once where librdkafka copies into its buffers and
confluent-kafka again into Python bytes.

Produce: plain os.write of 1 MiB blocks into a new file beside the broker's data, from one
process on the broker's CPU: what a broker that leaves durability to the page cache can reach
at best. On this VM that rate is anything but steady (one process writing 1 GiB blocks measured
4,300 then 420 MB/s, at 100% CPU either way), so run.py measures it right before each produce
run, with the same volume, and the report compares the two.

Both run pinned like the broker (sender, writer) and the load generator (reader).
"""

from __future__ import annotations

import os
import socket
import time

import multiprocessing as mp


def _reader(cpus, out) -> None:
    if cpus:
        os.sched_setaffinity(0, set(cpus))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    out.put(listener.getsockname()[1])
    conn, _ = listener.accept()
    buf = memoryview(bytearray(8 << 20))
    total, t0 = 0, None
    while True:
        n = conn.recv_into(buf)
        if not n:
            break
        if t0 is None:
            t0, first = time.monotonic(), n
        total += n
    out.put({"bytes": total - first, "seconds": time.monotonic() - t0})


def _sender(port: int, path: str, total_bytes: int, cpus) -> None:
    if cpus:
        os.sched_setaffinity(0, set(cpus))
    size = os.path.getsize(path)
    with socket.create_connection(("127.0.0.1", port)) as s, open(path, "rb") as f:
        sent = 0
        while sent < total_bytes:
            offset = 0
            while offset < size:
                n = os.sendfile(s.fileno(), f.fileno(), offset, min(size - offset, 8 << 20))
                offset += n
            sent += size


def loopback_sendfile_rate(directory, file_mib: int, total_mib: int, sender_cpus, reader_cpus,
                           timeout: float = 60.0) -> dict:
    """MB/s (10^6 bytes/s) of sendfile-from-page-cache to a counting reader over loopback."""
    path = os.path.join(directory, "loopback-ceiling.bench")
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:  # not synced: it is meant to be in the page cache
        for _ in range(file_mib):
            f.write(block)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    reader = ctx.Process(target=_reader, args=(reader_cpus, out), daemon=True)
    sender = None
    try:
        reader.start()
        port = out.get(timeout=timeout)
        sender = ctx.Process(target=_sender, args=(port, path, total_mib << 20, sender_cpus), daemon=True)
        sender.start()
        result = out.get(timeout=timeout)
    finally:
        for p in (sender, reader):
            if p is None:
                continue
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)
        os.unlink(path)
    result["mb_s"] = result["bytes"] / 1e6 / result["seconds"]
    return result


def _writer(path: str, total_mib: int, cpus, out) -> None:
    if cpus:
        os.sched_setaffinity(0, set(cpus))
    block = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t0 = time.monotonic()
        for _ in range(total_mib):
            os.write(fd, block)
        out.put({"bytes": total_mib << 20, "seconds": time.monotonic() - t0})
    finally:
        os.close(fd)


def page_cache_write_rate(directory, total_mib: int, cpus, timeout: float = 120.0) -> dict:
    """MB/s of write() into the page cache (not synced), the file deleted afterwards."""
    path = os.path.join(directory, "page-cache-ceiling.bench")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    writer = ctx.Process(target=_writer, args=(path, total_mib, cpus, out), daemon=True)
    try:
        writer.start()
        result = out.get(timeout=timeout)
    finally:
        writer.join(5)
        if writer.is_alive():
            writer.kill()
            writer.join(5)
        if os.path.exists(path):
            os.unlink(path)
    result["mb_s"] = result["bytes"] / 1e6 / result["seconds"]
    return result
