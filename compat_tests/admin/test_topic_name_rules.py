"""Topic names Kafka refuses: '.'/'_' collisions, illegal names, and key-lookup names that are
not the one name of a key (broker/key_topic.py).

Kafka (ReplicationControlManager.validateNewTopicNames) refuses a new topic whose name differs
from an existing one only in '.' against '_' with INVALID_TOPIC_EXCEPTION, "Topic 'a_b' collides
with existing topic: a.b"; Metadata answers a name Topic.validate refuses (longer than 249
characters, a character outside [a-zA-Z0-9._-]) with INVALID_TOPIC_EXCEPTION.
"""

from __future__ import annotations

import pytest

from broker.key_topic import name_for
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic

NONE, UNKNOWN_TOPIC_OR_PARTITION, TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION = 0, 3, 36, 17
CREATE_TOPICS = 7


def _create(client: Client, name: str, validate_only: bool = False):
    r = client.request(19, CREATE_TOPICS, validate_only=validate_only, timeout=10_000, topics=[{
        "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}])
    (t,) = r.topics
    return t.error_code, t.error_message


def _metadata_code(client: Client, name: str, allow_auto: bool = False) -> int:
    (t,) = client.metadata([name], allow_auto=allow_auto).topics
    return t.error_code


@pytest.mark.parametrize("first,second", [(".", "_"), ("_", ".")])
def test_names_colliding_on_dot_and_underscore(client, first, second):
    base = unique_topic("collide")
    existing, colliding = f"{base}{first}b", f"{base}{second}b"
    assert _create(client, existing) == (NONE, None)
    refusal = (INVALID_TOPIC_EXCEPTION, f"Topic '{colliding}' collides with existing topic: {existing}")
    assert _create(client, colliding) == refusal
    assert _create(client, colliding, validate_only=True) == refusal
    assert _create(client, existing)[0] == TOPIC_ALREADY_EXISTS  # the same name is not a collision
    # Auto-creation through Metadata is refused the same way, and creates nothing.
    assert _metadata_code(client, colliding, allow_auto=True) == INVALID_TOPIC_EXCEPTION
    assert _metadata_code(client, colliding) == UNKNOWN_TOPIC_OR_PARTITION
    assert _metadata_code(client, existing) == NONE


@pytest.mark.parametrize("name", ["bad!name", "x" * 250, "tab\tname"])
def test_metadata_answers_illegal_names_invalid_topic(client, name):
    assert _metadata_code(client, name) == INVALID_TOPIC_EXCEPTION
    assert _metadata_code(client, name, allow_auto=True) == INVALID_TOPIC_EXCEPTION


@pytest.fixture
def keyed(client):
    """A commitlog topic holding one record with key b"k" and one with the empty key."""
    topic = unique_topic("kl")
    client.create_topic(topic, 1, {"storage.mode": "commitlog"})
    assert client.produce(topic, 0, make_batch([b"v1", b"v2"], keys=[b"k", b""])).error_code == NONE
    return topic


def _fetch_code(client: Client, name: str) -> int:
    return client.fetch(name, 0, 0).error_code


def test_a_real_key_name_is_served(client, keyed):
    assert _metadata_code(client, name_for(keyed, b"k")) == NONE
    assert _fetch_code(client, name_for(keyed, b"k")) == NONE


@pytest.mark.parametrize("encoded", ["!!!!", "a!b"])
def test_key_part_outside_base64url_is_an_illegal_name(client, keyed, encoded):
    # Python's base64 decoder skips the '!': "!!!!" used to read as the empty key.
    name = f"__key.{keyed}.{encoded}"
    assert _metadata_code(client, name) == INVALID_TOPIC_EXCEPTION
    assert _fetch_code(client, name) == UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("encoded", ["ax", "a_", "Y"])
def test_non_canonical_key_encoding_names_no_topic(client, keyed, encoded):
    # b"k" is "aw"; "ax" and "a_" set the unused low bits and used to read as b"k" too.
    assert name_for(keyed, b"k").endswith(".aw")
    name = f"__key.{keyed}.{encoded}"
    assert _metadata_code(client, name) == UNKNOWN_TOPIC_OR_PARTITION
    assert _fetch_code(client, name) == UNKNOWN_TOPIC_OR_PARTITION


def test_key_names_longer_than_249_characters_are_refused(client, keyed):
    name = name_for(keyed, b"k" * 7500)
    assert len(name) > 10_000
    assert _metadata_code(client, name) == INVALID_TOPIC_EXCEPTION
    assert _fetch_code(client, name) == UNKNOWN_TOPIC_OR_PARTITION
    room = 249 - len(name_for(keyed, b""))
    longest = name_for(keyed, b"k" * (room * 3 // 4))
    assert 246 < len(longest) <= 249
    assert _metadata_code(client, longest) == NONE


def test_a_trailing_newline_is_not_a_legal_character(client):
    # The old check was re.match("^[a-zA-Z0-9._-]+$"), and `$` also matches before a final "\n".
    name = unique_topic("newline") + "\n"
    code, message = _create(client, name)
    assert code == INVALID_TOPIC_EXCEPTION and "is illegal" in message
    assert _metadata_code(client, name) == INVALID_TOPIC_EXCEPTION
