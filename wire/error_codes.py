"""Kafka's error codes as one enum, the only name the rest of the broker uses for them.

kio generates `ErrorCode` from Kafka's own message schemas (every code, its number and whether
it is retriable); it is re-exported here so that the codec library stays inside wire/ and a code
is a typed value everywhere above it: `ErrorCode.not_leader_or_follower`, never the string
"not_leader_or_follower", whose typo would fail only when that path runs.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode"]
