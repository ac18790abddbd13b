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

Fsync: a process on the broker's CPU appends what a paced producer would have sent since its
last write and fsyncs it, again and again (a group commit without a broker): the disk's fsync
latency at the bytes/s of a fsync-before-ack cell, measured right after that cell, since this
virtual disk's fsync time moves from minute to minute.

All run pinned like the broker (sender, writer, fsyncer) and the load generator (reader).
"""

from __future__ import annotations

import os
import socket
import time

import multiprocessing as mp

MAX_FSYNC_BYTES = 4 << 20  # what one fsync of the fsync probe covers at most


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
    result = _in_child(_writer, path, (path, total_mib, cpus), timeout)
    result["mb_s"] = result["bytes"] / 1e6 / result["seconds"]
    return result


def _fsyncer(path: str, bytes_per_s: float, seconds: float, cpus, out) -> None:
    if cpus:
        os.sched_setaffinity(0, set(cpus))
    data = memoryview(os.urandom(MAX_FSYNC_BYTES))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    latencies = []
    try:
        last = time.monotonic()
        end = last + seconds
        while True:
            time.sleep(max(0.0, last + 0.001 - time.monotonic()))  # at most one fsync a millisecond
            now = time.monotonic()
            if now >= end:
                break
            os.write(fd, data[:max(1, min(MAX_FSYNC_BYTES, int(bytes_per_s * (now - last))))])
            last = now
            t0 = time.perf_counter()
            os.fsync(fd)
            latencies.append(time.perf_counter() - t0)
        out.put({"fsyncs": len(latencies), "latencies_s": latencies})
    finally:
        os.close(fd)


def fsync_latency(directory, bytes_per_s: float, seconds: float, cpus, timeout: float = 60.0) -> dict:
    """fsync p50/p99/p99.9/max (ms) of appends at `bytes_per_s`, each fsynced before the next,
    the file deleted afterwards."""
    path = os.path.join(directory, "fsync-ceiling.bench")
    result = _in_child(_fsyncer, path, (path, bytes_per_s, seconds, cpus), timeout)
    ms = sorted(x * 1e3 for x in result.pop("latencies_s"))
    if ms:
        result.update({f"{name}_ms": ms[min(len(ms) - 1, int(q * len(ms)))]
                       for name, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999))}, max_ms=ms[-1])
    return result


def _in_child(target, path: str, args: tuple, timeout: float) -> dict:
    """What `target(*args, out)` puts on `out`, run in a process of its own; `path` removed after."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=target, args=(*args, out), daemon=True)
    try:
        child.start()
        return out.get(timeout=timeout)
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join(5)
        if os.path.exists(path):
            os.unlink(path)
