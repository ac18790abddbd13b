"""The leader's fetch-session cache (broker/fetch_sessions.py): which requests get a session,
what an incremental answer names, and eviction past the slots."""

from __future__ import annotations

from types import SimpleNamespace

from broker.fetch_sessions import FetchSessionCache
from wire.error_codes import ErrorCode


def _request(session_id, epoch):
    return SimpleNamespace(session_id=session_id, session_epoch=epoch)


def _open(cache, replica=1, keys=(("t", 0), ("t", 1))):
    context = cache.context(_request(0, 0), replica, {k: f"req{k}" for k in keys}, [])
    assert context.session_id != 0 and not context.incremental
    for k in keys:
        assert context.answers(k, ErrorCode.none, 5, 5, 0, False)  # a full answer names everything
    return context.session_id


def test_an_incremental_answer_names_only_what_changed_and_puts_data_last():
    cache = FetchSessionCache(10)
    sid = _open(cache)
    ctx = cache.context(_request(sid, 1), 1, {}, [])
    assert ctx.incremental and list(ctx.partitions) == [("t", 0), ("t", 1)]
    assert not ctx.answers(("t", 0), ErrorCode.none, 5, 5, 0, False)
    assert ctx.answers(("t", 1), ErrorCode.none, 6, 5, 0, False)  # its HW moved
    assert ctx.answers(("t", 0), ErrorCode.none, 5, 5, 0, True)  # records
    assert ctx.answers(("t", 1), ErrorCode.not_leader_or_follower, 6, 5, 0, False)  # an error
    assert list(cache.context(_request(sid, 2), 1, {}, []).partitions) == [("t", 1), ("t", 0)]


def test_consumers_get_no_session_and_slots_bound_the_cache():
    cache = FetchSessionCache(2)
    consumer = cache.context(_request(0, 0), -1, {("t", 0): "r"}, [])
    assert consumer.session_id == 0 and len(cache) == 0
    assert cache.context(_request(5, 1), -1, {}, []) is ErrorCode.fetch_session_id_not_found
    first, second = _open(cache, 1), _open(cache, 2)
    assert cache.context(_request(first, 1), 1, {}, []) is not ErrorCode.fetch_session_id_not_found  # used: newest
    _open(cache, 3)  # evicts the least recently used: the second
    assert cache.context(_request(second, 1), 2, {}, []) is ErrorCode.fetch_session_id_not_found
    assert cache.context(_request(first, 2), 1, {}, []).incremental
    no_slots = FetchSessionCache(0)  # max.incremental.fetch.session.cache.slots=0: full fetches only
    assert no_slots.context(_request(0, 0), 1, {("t", 0): "r"}, []).session_id == 0
