"""replica/change_feed.py: each task sees each changed partition once per round, in order."""

from __future__ import annotations

from replica.change_feed import ChangeFeed


def test_every_subscriber_sees_each_change_once_until_it_takes_them():
    feed = ChangeFeed()
    flush, snapshots = feed.subscribe(), feed.subscribe()
    for p in ("a", "b", "a", "c"):
        feed.changed(p)
    assert flush.take() == ["a", "b", "c"]
    assert flush.take() == []
    feed.changed("b")
    assert flush.take() == ["b"]
    assert snapshots.take() == ["a", "b", "c"]  # the other task's gathering is its own
    assert len(snapshots) == 0


def test_a_forgotten_partition_leaves_every_task():
    feed = ChangeFeed()
    flush, snapshots = feed.subscribe(), feed.subscribe()
    feed.changed("a")
    feed.changed("b")
    feed.forget("a")
    assert flush.take() == ["b"] and snapshots.take() == ["b"]
