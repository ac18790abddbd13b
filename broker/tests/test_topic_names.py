"""Topic name rules: Kafka's Topic.validate, and names that collide on '.' vs '_'."""

from __future__ import annotations

import uuid

import pytest

from wire.error_codes import ErrorCode
from broker.settings.config_from_settings import config_with
from broker.topic_names import MAX_NAME_LENGTH, TopicError, check_topic_name, illegal_name
from broker.topic import Topic
from broker.topics import TopicRegistry


@pytest.mark.parametrize("name", ["", ".", "..", "a" * (MAX_NAME_LENGTH + 1), "a!b", "abc\n", "caf\u00e9"])
def test_illegal_names(name):
    assert illegal_name(name) is not None
    with pytest.raises(TopicError) as refused:
        check_topic_name(name)
    assert refused.value.code is ErrorCode.invalid_topic_exception


@pytest.mark.parametrize("name", ["a", "a.b", "a_b", "A-9", "...", "a" * MAX_NAME_LENGTH])
def test_legal_names(name):
    assert illegal_name(name) is None
    check_topic_name(name)


def test_the_length_refusal_is_kafkas():
    assert illegal_name("x" * 250) == (
        "Topic name is illegal, it can't be longer than 249 characters, topic name: " + "x" * 250)


def _registry(tmp_path, *names) -> TopicRegistry:
    registry = TopicRegistry(config_with(data_dir=tmp_path), storage=None)  # check_collision reads names only
    for name in names:
        registry.topics[name] = Topic(name, uuid.uuid4(), {})
    return registry


@pytest.mark.parametrize("existing,new", [("a.b", "a_b"), ("a_b", "a.b"), ("x.y_z", "x_y.z")])
def test_names_differing_only_in_dot_and_underscore_collide(tmp_path, existing, new):
    with pytest.raises(TopicError) as refused:
        _registry(tmp_path, existing).check_collision(new)
    assert refused.value.code is ErrorCode.invalid_topic_exception
    assert str(refused.value) == f"Topic '{new}' collides with existing topic: {existing}"


def test_the_least_colliding_name_is_named(tmp_path):
    with pytest.raises(TopicError, match="collides with existing topic: a.b_c$"):
        _registry(tmp_path, "a_b_c", "a.b_c").check_collision("a.b.c")


@pytest.mark.parametrize("new", ["a.b", "a-b", "ab", "a.bc"])
def test_no_collision(tmp_path, new):
    _registry(tmp_path, "a.b", "a__b").check_collision(new)  # the same name is "already exists", not this
