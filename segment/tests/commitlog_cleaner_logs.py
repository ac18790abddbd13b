"""Compacted logs for the commitlog layout's cleaner tests: a partition t-0 written with another,
u-0, interleaved in the same commitlog, at NOW - 5000."""

from __future__ import annotations

from segment.tests.compaction_batches import client_batch
from segment.tests.log_configs import log_config

NOW = 10_000_000
CFG = log_config(segment_bytes=600, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0, delete_retention_ms=1000)
OTHER = log_config()


def write_log(store, batches, config=CFG):
    """The batches to t-0, each followed by a batch of partition u-0 in the same commitlog."""
    plog = store.open_partition("t", 0, config)
    other = store.open_partition("u", 0, OTHER)
    for recs, producer in batches:
        plog.append(bytearray(client_batch([(k, v, []) for k, v in recs], producer=producer, base_ts=NOW - 5000)),
                    0, NOW - 5000)
        other.append(bytearray(client_batch([(b"u", b"x" * 40, [])], base_ts=NOW - 5000)), 0, NOW - 5000)
    store.commit_writes()
    return plog
