"""A health probe timing requests beside a slow one, and topic creation and deletion over raw requests."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.stall_bounds import probe_wait
from compat_tests.helpers.waiting import wait_until

WAIT = 120.0


@contextmanager
def probing(broker, waits: list[float]):
    """ApiVersions on a new connection every 20 ms while the block runs; each wait appended (the
    broker's part of it: stall_bounds.probe_wait)."""
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            waits.append(probe_wait(broker, WAIT))
            time.sleep(0.02)  # the probes' period

    thread = threading.Thread(target=probe)
    thread.start()
    try:
        wait_until(lambda: waits, "a first probe answered", timeout=WAIT)
        yield
        before_end = len(waits)  # and one whole probe after the block, where a stall could trail
        wait_until(lambda: len(waits) > before_end + 1, "a probe after the block", timeout=WAIT)
    finally:
        done.set()
        thread.join()


def create_topics(client: Client, counts: dict[str, int]) -> dict[str, int]:
    r = client.request(19, 7, recv_timeout=WAIT, validate_only=False, timeout=60_000, topics=[
        {"name": name, "num_partitions": n, "replication_factor": 1, "assignments": [], "configs": []}
        for name, n in counts.items()])
    return {t.name: t.error_code for t in r.topics}


def delete_topic(client: Client, name: str) -> int:
    r = client.request(20, 6, recv_timeout=WAIT, timeout=60_000, topics=[{"name": name, "topic_id": None}])
    return r.responses[0].error_code
