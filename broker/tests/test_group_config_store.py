"""GroupConfigStore (broker/groups/group_config_store.py), one broker's group configs: a change
is on disk before alter returns and is what a reopened store reads; validate_only and a refused
change write nothing; a group left with no overrides is dropped."""

from __future__ import annotations

import asyncio

import pytest

from wire.error_codes import ErrorCode
from broker.groups.group_config_store import FILE_NAME, GroupConfigStore
from broker.settings.topic_config_changes import ConfigChangeError


def alter(store: GroupConfigStore, group: str, decide, validate_only: bool = False) -> None:
    asyncio.run(store.alter(group, decide, validate_only))


def test_a_change_is_what_a_reopened_store_reads(tmp_path):
    store = GroupConfigStore(tmp_path)
    alter(store, "g", lambda current: {**current, "share.isolation.level": "read_committed"})
    alter(store, "h", lambda current: {"share.delivery.count.limit": "3"})
    again = GroupConfigStore(tmp_path)
    assert again.configs("g") == {"share.isolation.level": "read_committed"}
    assert again.groups() == ["g", "h"] and again.configs("none") == {}


def test_validate_only_and_a_refused_change_write_nothing(tmp_path):
    store = GroupConfigStore(tmp_path)
    alter(store, "g", lambda current: {"share.delivery.count.limit": "3"}, validate_only=True)
    assert not (tmp_path / FILE_NAME).exists() and store.configs("g") == {}

    def refuse(current):
        raise ConfigChangeError(ErrorCode.invalid_config, "no")
    with pytest.raises(ConfigChangeError):
        alter(store, "g", refuse)
    assert not (tmp_path / FILE_NAME).exists()


def test_a_group_with_no_overrides_left_is_dropped(tmp_path):
    store = GroupConfigStore(tmp_path)
    alter(store, "g", lambda current: {"share.delivery.count.limit": "3"})
    alter(store, "g", lambda current: {})
    assert GroupConfigStore(tmp_path).groups() == []
