"""Share sessions (share_sessions.py): their epochs, their partitions, and their end with the
connection that opened them. Pure logic, no broker."""

from __future__ import annotations

import uuid

import pytest

from wire.error_codes import ErrorCode
from broker.groups.share.share_sessions import SessionRefused, ShareSessions

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_share_sessions_open_move_their_epoch_and_close():
    s = ShareSessions()
    with pytest.raises(SessionRefused) as none:
        s.for_fetch("g", "m", 1)
    assert none.value.error is ErrorCode.share_session_not_found
    session = s.for_fetch("g", "m", 0)
    session.update([(T1, 0), (T1, 1)], [])
    assert s.for_fetch("g", "m", 1) is session
    with pytest.raises(SessionRefused) as stale:
        s.for_acknowledge("g", "m", 1)
    assert stale.value.error is ErrorCode.invalid_share_session_epoch
    assert s.for_acknowledge("g", "m", 2) is session
    session.update([(T2, 0)], [(T1, 0)])
    assert session.partitions == [(T1, 1), (T2, 0)]
    with pytest.raises(SessionRefused):
        s.for_acknowledge("g", "m", 0)  # acknowledging never opens a session
    assert s.close("g", "m") is session and s.of_group("g") == []


def test_a_closed_connection_ends_the_sessions_it_opened_and_no_other():
    s = ShareSessions()
    a = s.for_fetch("g", "a", 0, connection=1)
    a.update([(T1, 0)], [])
    b = s.for_fetch("h", "b", 0, connection=1)  # one connection may open sessions of several members
    c = s.for_fetch("g", "c", 0, connection=2)
    unfollowed = s.for_fetch("g", "d", 0)
    assert sorted(s.close_connection(1), key=lambda x: x.member_id) == [a, b]
    assert s.of_group("g") == [c, unfollowed] and s.of_group("h") == []
    with pytest.raises(SessionRefused) as gone:
        s.for_fetch("g", "a", 1)
    assert gone.value.error is ErrorCode.share_session_not_found
    assert s.close_connection(1) == []  # told twice: nothing more ends
    assert s.close_connection(2) == [c]


def test_a_session_opened_again_on_another_connection_outlives_the_first():
    """A member that reconnected and opened its session again keeps it when the broker notices
    the old connection's close later."""
    s = ShareSessions()
    s.for_fetch("g", "m", 0, connection=1)
    again = s.for_fetch("g", "m", 0, connection=2)
    assert s.close_connection(1) == []
    assert s.for_fetch("g", "m", 1) is again
    assert s.close_connection(2) == [again]


def test_a_session_closed_by_its_member_is_no_longer_its_connections():
    s = ShareSessions()
    session = s.for_fetch("g", "m", 0, connection=1)
    assert s.close("g", "m") is session
    assert s.close_connection(1) == []
    reopened = s.for_fetch("g", "m", 0, connection=1)  # the same connection opens it once more
    assert s.close_connection(1) == [reopened]
