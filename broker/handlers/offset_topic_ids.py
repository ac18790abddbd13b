"""Topics named by id in the offset APIs: OffsetCommit v10 and OffsetFetch v10 (Kafka 4.2+).

From those versions a request's topic carries its id instead of its name, and so does the
response (the schemas drop the name). The group coordinator keeps committed offsets by topic
name, as Kafka's does; the handler turns an id into its topic's name on the way in and a name
into its id on the way out, as Kafka's KafkaApis does with its metadata cache. An id this
broker does not know answers UNKNOWN_TOPIC_ID on each of the topic's partitions, Kafka's
answer (OffsetCommitRequestTest.testOffsetCommitWithUnknownTopicId).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.api.topic_lookup import TopicLookup

NO_TOPIC_ID = uuid.UUID(int=0)


def requested_name(topics: TopicLookup, topic: Any) -> str | None:
    """The name a request's topic entry means: its own name before v10, from v10 its id's topic;
    None for an id not known here (a deleted topic, or one never created)."""
    if not hasattr(topic, "topic_id"):
        name: str = topic.name
        return name
    if topic.topic_id is None or topic.topic_id == NO_TOPIC_ID:
        return None
    found = topics.get_by_id(topic.topic_id)
    return found.name if found is not None else None


def id_of(topics: TopicLookup, name: str) -> uuid.UUID | None:
    """The id of topic `name` to answer with, None for a topic that no longer exists."""
    topic = topics.get(name)
    return topic.topic_id if topic is not None else None
