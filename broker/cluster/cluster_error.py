"""The one error type of cluster metadata operations: a refusal Kafka would answer with a code.

`code` is the lower-case name of Kafka's error (kio's ErrorCode member, as TopicError carries
it for the single-broker path), so a handler answers `ErrorCode[exc.code]` with `str(exc)` as the
message. Failures to reach etcd are not ClusterErrors: they propagate as aetcd's exceptions.
"""

from __future__ import annotations


class ClusterError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

    def __repr__(self) -> str:
        return f"ClusterError({self.code!r}, {str(self)!r})"
