"""How many partitions one request may create: Kafka's 10,000, checked before anything is made.

Kafka's controller (ReplicationControlManager, KRaft) refuses a CreateTopics request whose topics
add up to more than MAX_PARTITIONS_PER_BATCH = 10,000 partitions, before it validates any topic:
every topic of the request is answered POLICY_VIOLATION "Excessively large number of partitions
per request.", validate_only or not. CreatePartitions builds its records in a list bounded at
MAX_RECORDS_PER_USER_OP = 10,000, so the topic whose new partitions would take the request past
10,000 fails ("Unable to perform excessively large batch operation." is what the controller says
of an overflowing bounded list). Metadata's auto-creation sends one CreateTopics for the missing
topics, so the same limit bounds it.

Without these limits one request for 2^31-1 partitions made the broker open files until it ran
out of descriptors (segment layout) or block its event loop for minutes (commitlog layout).
Kafka has no broker-wide cap on partitions by default, so neither do we.
"""

from __future__ import annotations

from typing import Any, Iterable

MAX_PARTITIONS_PER_REQUEST = 10_000

CREATE_TOPICS_REFUSAL = "Excessively large number of partitions per request."
BATCH_REFUSAL = "Unable to perform excessively large batch operation."


def create_topics_total(topics: Iterable[Any], default_partitions: int) -> int:
    """Partitions a CreateTopics request's topics (kio's CreatableTopic) ask for, counted as Kafka
    counts them: an explicit assignment is one partition each, -1 is the broker default, a count
    below 1 adds nothing (that topic fails on its own with INVALID_PARTITIONS)."""
    total = 0
    for topic in topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += default_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total
