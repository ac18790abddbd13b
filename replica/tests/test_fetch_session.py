"""The follower's fetch session (replica/fetch_session.py): what each request names, and how
each kind of answer moves the session, as Kafka's FetchSessionHandler does."""

from __future__ import annotations

from replica.fetch_session import FollowerFetchSession
from replica.leader_endpoint import FetchPartition, TopicPartition
from wire.error_codes import ErrorCode

A, B, C = (TopicPartition("t", i) for i in range(3))


def _at(tp, offset, epoch=0):
    return FetchPartition(tp, offset, epoch)


def _opened(session_id=7) -> FollowerFetchSession:
    session = FollowerFetchSession()
    first = session.next_request([_at(A, 0), _at(B, 0)])
    assert (first.session_id, first.epoch, first.send, first.forgotten) == (0, 0, [_at(A, 0), _at(B, 0)], [])
    session.answered(first, ErrorCode.none, session_id)
    assert (session.session_id, session.epoch) == (session_id, 1)
    return session


def test_an_incremental_request_names_what_changed_and_what_to_forget():
    session = _opened()
    same = session.next_request([_at(A, 0), _at(B, 0)])
    assert (same.session_id, same.epoch, same.send, same.forgotten) == (7, 1, [], [])
    session.answered(same, ErrorCode.none, 7)
    moved = session.next_request([_at(A, 5), _at(B, 0, epoch=1), _at(C, 0)])
    assert moved.epoch == 2 and moved.send == [_at(A, 5), _at(B, 0, epoch=1), _at(C, 0)]
    session.answered(moved, ErrorCode.none, 7)
    dropped = session.next_request([_at(C, 0)])
    assert dropped.send == [] and dropped.forgotten == [A, B]


def test_an_unanswered_request_changes_nothing_the_leader_holds():
    session = _opened()
    lost = session.next_request([_at(A, 5), _at(B, 0)])
    session.failed()  # the connection broke: the next request is full, closing the old session
    again = session.next_request([_at(A, 5), _at(B, 0)])
    assert (again.session_id, again.epoch, again.send) == (7, 0, [_at(A, 5), _at(B, 0)])
    assert lost.epoch == 1


def test_session_errors_and_refusals():
    session = _opened()
    session.answered(session.next_request([_at(A, 1)]), ErrorCode.fetch_session_id_not_found, 0)
    assert (session.session_id, session.epoch) == (0, 0)  # start over: no session
    session = _opened()
    session.answered(session.next_request([_at(A, 1)]), ErrorCode.invalid_fetch_session_epoch, 0)
    assert (session.session_id, session.epoch) == (7, 0)  # close it and open another
    session = FollowerFetchSession()
    full = session.next_request([_at(A, 0)])
    session.answered(full, ErrorCode.none, 0)  # the leader granted none (an older broker, a full cache)
    assert (session.session_id, session.epoch) == (0, 0)
    assert session.next_request([_at(A, 0)]).send == [_at(A, 0)]


def test_the_epoch_wraps_to_1():
    session = _opened()
    session.epoch = 2**31 - 1
    request = session.next_request([_at(A, 0), _at(B, 0)])
    session.answered(request, ErrorCode.none, 7)
    assert session.epoch == 1
