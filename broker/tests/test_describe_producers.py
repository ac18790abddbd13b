"""DescribeProducers answers for the partitions this broker leads only: a follower's replica holds
the same producer state (it replays the leader's batches), but Kafka's admin client asks the
leader, and a follower answers NOT_LEADER_OR_FOLLOWER so the client looks the leader up again.

A real broker on a temp dir, one of its partitions made follower as the replica manager does
when the controller moves leadership away; the handler called as the dispatcher calls it.
"""

from __future__ import annotations

import asyncio
import time

from wire.error_codes import ErrorCode
from broker.broker import Broker
from broker.handlers import describe_producers
from broker.api.response_builder import nested
from broker.settings.config_from_settings import config_with
from replica.partition_state import PartitionState
from wire.batch_builder import build_batch
from wire.protocol import RequestHeader, request_class
from wire.record_batch import parse_header

PRODUCER = 4000


def _describe(broker: Broker, topic: str, partitions: tuple[int, ...]) -> dict:
    cls = request_class(61, 0)
    request = cls(topics=(nested(cls, "TopicRequest")(name=topic, partition_indexes=partitions),))
    header = RequestHeader(61, 0, 1, None, True)
    (t,) = asyncio.run(describe_producers.handle(broker.api, header, request)).topics
    return {p.partition_index: (p.error_code, [s.producer_id for s in p.active_producers]) for p in t.partitions}


def test_a_follower_answers_not_leader_or_follower(tmp_path):
    broker = Broker(config_with(data_dir=str(tmp_path)))
    asyncio.run(broker.topic_admin.create_topic("t", 2, 1, {}))
    for index in (0, 1):
        partition = broker.topics.partition("t", index)
        batch = build_batch([(None, b"v")], int(time.time() * 1000), (PRODUCER, 0, 0))
        partition.append_as_leader(batch, parse_header(batch), acks=1)
    assert _describe(broker, "t", (0, 1)) == {0: (ErrorCode.none, [PRODUCER]), 1: (ErrorCode.none, [PRODUCER])}
    broker.topics.partition("t", 1).make_follower(PartitionState(2, 1, 1, (1, 2), (1, 2)))
    assert _describe(broker, "t", (0, 1)) == {0: (ErrorCode.none, [PRODUCER]), 1: (ErrorCode.not_leader_or_follower, [])}
    broker.storage.close()
