"""The one error type of cluster metadata operations: a refusal Kafka would answer with a code.

`code` is Kafka's error (as TopicError carries it for the single-broker path), so a handler
answers `exc.code` with `str(exc)` as the message. Failures to reach etcd are not ClusterErrors:
they propagate as aetcd's exceptions.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode


class ClusterError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code

    def __repr__(self) -> str:
        return f"ClusterError({self.code.name!r}, {str(self)!r})"
