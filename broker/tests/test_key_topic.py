"""Key-lookup names: one name per (topic, key), and only that name reads as the key."""

from __future__ import annotations

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.key_topic import KeyTopicIds, name_for, parse, topic_id_for
from broker.cli.lookup import read_key_topic

topics = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True)


@given(topics, st.binary(min_size=1, max_size=60))
def test_the_name_of_a_key_reads_back_as_that_key(topic, key):
    assert parse(name_for(topic, key)) == (topic, key)


@given(topics, st.text(max_size=12))
def test_only_the_canonical_name_reads_as_a_key(topic, encoded):
    name = f"__key.{topic}.{encoded}"
    parsed = parse(name)
    assert parsed is None or name_for(*parsed) == name


@pytest.mark.parametrize("encoded", [
    "!!!!",  # no base64 character at all: the decoder skipped them and read the empty key
    "YR",  # b"a" is YQ; R sets the unused low bits
    "YQ==",  # padded
    "Y",  # no whole byte
    "",  # the empty key has no name
    "Y!Q",  # a skipped character inside
])
def test_names_that_are_not_a_key_encoding_name_no_key(encoded):
    assert parse(f"__key.orders.{encoded}") is None


def test_the_lookup_command_refuses_a_key_whose_name_is_too_long():
    # Refused before connecting: the port is closed and nothing is asked of it.
    with pytest.raises(click.ClickException, match="more than a topic name may have"):
        read_key_topic("127.0.0.1:1", "orders", b"k" * 200)


def test_key_topic_ids_forget_the_least_recently_served_name_first():
    ids = KeyTopicIds(capacity=2)
    a, b, c = (name_for("orders", k) for k in (b"a", b"b", b"c"))
    ids.served(a, topic_id_for(a))
    ids.served(b, topic_id_for(b))
    ids.served(a, topic_id_for(a))  # served again: now the most recent
    ids.served(c, topic_id_for(c))
    assert [ids.name_of(topic_id_for(n)) for n in (a, b, c)] == [a, None, c]
