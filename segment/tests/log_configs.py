"""LogConfigs for the engines' tests.

The broker fills a LogConfig from its settings table (broker/settings/table.py), which segment/
may not import; a test names the values it is about and takes ordinary ones for the rest:
large segments that do not roll on their own, no retention, no fsync, the delete policy.
"""

from __future__ import annotations

from segment.log import LogConfig

_ORDINARY = dict(
    segment_bytes=1 << 30, segment_ms=7 * 24 * 3600 * 1000, segment_jitter_ms=0, retention_ms=7 * 24 * 3600 * 1000,
    retention_bytes=-1, index_interval_bytes=4096, max_message_bytes=1024 * 1024 + 12, flush_messages=0, flush_ms=-1,
    message_timestamp_type="CreateTime", message_timestamp_before_max_ms=2**63 - 1,
    message_timestamp_after_max_ms=2**63 - 1, file_delete_delay_ms=60_000, cleanup_policy="delete",
    min_cleanable_dirty_ratio=0.5, min_compaction_lag_ms=0, max_compaction_lag_ms=2**63 - 1,
    delete_retention_ms=24 * 3600 * 1000, compression_type="producer", compression_gzip_level=-1,
    compression_lz4_level=9, compression_zstd_level=3,
)


def log_config(**values) -> LogConfig:
    """A LogConfig with these values and ordinary ones for the rest."""
    return LogConfig(**{**_ORDINARY, **values})
