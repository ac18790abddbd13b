"""Topic names: which a client may create, which collide, which belong to the broker.

Kafka's rules (its Topic.validate and unifyCollisionChars): at most 249 characters of ASCII
alphanumerics, '.', '_' and '-', never "." or ".."; two names that differ only by '.' against
'_' collide (metrics would report them as one); names with the key-lookup prefix are this
broker's own (key_topic.py). Internal topics take no client writes and, unless the operator
allows it, no delete or repartition.
"""

from __future__ import annotations

import re

from wire.error_codes import ErrorCode
from broker import key_topic

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class TopicError(Exception):
    """Carries Kafka's error for the handler."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def illegal_name(name: str) -> str | None:
    """Why no topic can have this name (Kafka's Topic.validate, in its words), or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, topic name: {name}"
    if not _LEGAL.fullmatch(name):  # fullmatch: a `$` would let a trailing newline through
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def check_topic_name(name: str) -> None:
    """A name a topic may be created with; raises TopicError."""
    if name.startswith(key_topic.PREFIX):
        raise TopicError(ErrorCode.invalid_topic_exception,
                         f"Topic names starting with {key_topic.PREFIX!r} are reserved for key lookups")
    reason = illegal_name(name)
    if reason is not None:
        raise TopicError(ErrorCode.invalid_topic_exception, reason)


def check_internal_change(name: str, allowed: bool, change: str) -> None:
    """Refuse DeleteTopics / CreatePartitions on an internal topic unless the operator allowed it.

    Kafka's own tools refuse both ("is a kafka internal topic and is not allowed to be marked
    for deletion", "The number of partitions for the offsets topic cannot be changed"): deleting
    __consumer_offsets erases every committed offset, and more partitions send a group's new
    commits to another partition than its old ones, so replay (partition by partition) can
    restore an old offset. One request should not do either. INVALID_TOPIC_EXCEPTION is what
    Kafka answers for its other internal-topic refusals (Produce, DeleteRecords).
    """
    if name in INTERNAL_TOPICS and not allowed:
        raise TopicError(ErrorCode.invalid_topic_exception,
                         f"Topic {name} is an internal topic and is not allowed to be {change} "
                         "(the broker's --allow-internal-topic-changes allows it)")


def collision_key(name: str) -> str:
    # Kafka's Topic.unifyCollisionChars: metric names turn '.' into '_', so "a.b" and "a_b"
    # would report as one topic; Kafka refuses the second name.
    return name.replace(".", "_")
