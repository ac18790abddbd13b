"""Many offset commits, fast: OffsetCommit requests pipelined over one raw connection.

Used by the `__consumer_offsets` compaction test and bench/offsets_startup.py. Each request
commits one group's offsets for every partition of one topic as a "simple" commit
(generation -1, no member id, as kafka-python's and Kafka's admin tools do for a group with
no members), so every partition committed is one record in `__consumer_offsets`. Requests go
out `window` at a time before their answers are read (the broker answers in order), and
every answer must be NONE.
"""

from __future__ import annotations

from compat_tests.helpers.raw_kafka import Client, build_request, encode_request

OFFSET_COMMIT, OFFSET_FETCH = 8, 9
COMMIT_VERSION, FETCH_VERSION = 7, 7


def commit_offsets(client: Client, topic: str, partitions: int, groups: list[str], rounds: int,
                   window: int = 200) -> dict[tuple[str, int], int]:
    """`rounds` commits of every group's offset for each partition of `topic` (round r commits
    offset r * 10 + partition); returns the last committed {(group, partition): offset}."""
    pending: list[int] = []
    last: dict[tuple[str, int], int] = {}

    def drain(keep: int) -> None:
        while len(pending) > keep:
            cid = pending.pop(0)
            body = client.recv(OFFSET_COMMIT, COMMIT_VERSION, cid, timeout=60)
            errors = {p.error_code for t in body.topics for p in t.partitions}
            assert errors == {0}, f"OffsetCommit answered {errors}"

    for r in range(rounds):
        for group in groups:
            offsets = {p: r * 10 + p for p in range(partitions)}
            request = build_request(
                OFFSET_COMMIT, COMMIT_VERSION, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, retention_time=-1,
                topics=[{"name": topic, "partitions": [
                    {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                     "committed_metadata": ""} for p, o in offsets.items()]}])
            cid = client.next_correlation_id()
            client.send_bytes(encode_request(request, cid, client.client_id))
            pending.append(cid)
            last.update({(group, p): o for p, o in offsets.items()})
            drain(window)
    drain(0)
    return last


def fetch_committed(client: Client, topic: str, partitions: int, groups: list[str]) -> dict[tuple[str, int], int]:
    """{(group, partition): committed offset} as OffsetFetch answers it."""
    out = {}
    for group in groups:
        body = client.request(OFFSET_FETCH, FETCH_VERSION, recv_timeout=60, group_id=group, require_stable=False,
                              topics=[{"name": topic, "partition_indexes": list(range(partitions))}])
        assert body.error_code == 0, body
        for t in body.topics:
            for p in t.partitions:
                assert p.error_code == 0, p
                out[(group, p.partition_index)] = p.committed_offset
    return out
