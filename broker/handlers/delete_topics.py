"""DeleteTopics v1-v6: by name, or (v6) by topic id.

Before any topic is looked at, the request is screened as Kafka's ControllerApis.deleteTopics
does: each entry names its topic once, by name or by id. An entry with neither or both, a name
or an id asked for twice, or a name whose topic's id is also in the request is INVALID_REQUEST,
answered once (duplicates collapse into one result, as in Kafka's), and nothing of it is deleted.

A deleted topic's partitions count against the client's controller_mutation_rate (KIP-599): from
v5 a topic asked for while the client is over it fails THROTTLING_QUOTA_EXCEEDED; every version
is answered with the throttle time (broker/quotas/enforcement.py)."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Callable

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.topic_names import TopicError, check_internal_change
from broker.security.acl.model import Operation
from broker.api.response_builder import make, nested
from broker.quotas.enforcement import THROTTLED_MUTATION, MutationQuota

STRICT_QUOTA_SINCE = 5


Target = tuple[str | None, uuid.UUID | None]  # (name or None, topic id or None)

NEITHER = "Neither topic name nor id were specified."
BOTH = "You may not specify both topic name and topic id."
DUPLICATE_NAME = "Duplicate topic name."
DUPLICATE_ID = "Duplicate topic id."
NAME_OF_ID = "The provided topic name maps to an ID that was already supplied."


def _targets(request: Request) -> list[Target]:
    """(name or None, topic_id or None) pairs, whatever the version's shape."""
    if hasattr(request, "topic_names"):
        return [(name, None) for name in request.topic_names]
    return [(t.name, t.topic_id if t.topic_id and t.topic_id.int else None) for t in request.topics]


Invalid = tuple[str | None, uuid.UUID | None, str]  # (name, id, message) of an INVALID_REQUEST answer


def screened(targets: list[Target], id_of: Callable[[str], uuid.UUID | None]) -> tuple[list[Target], list[Invalid]]:
    """The targets to delete, in request order, and the answers of the invalid ones;
    `id_of(name)`: the id of an existing topic, or None."""
    names = Counter(name for name, tid in targets if tid is None)
    ids = Counter(tid for name, tid in targets if name is None)
    valid: list[Target] = []
    invalid: list[Invalid] = []
    answered: set[Target] = set()
    covered: set[uuid.UUID] = set()  # ids a name's answer covers
    for name, tid in targets:
        if (name, tid) in answered:
            continue
        answered.add((name, tid))
        if name is None and tid is None:
            message = NEITHER
        elif name is not None and tid is not None:
            message = BOTH
        elif name is not None and names[name] > 1:
            message = DUPLICATE_NAME
        elif name is None and ids[tid] > 1:
            message = DUPLICATE_ID
        elif name is not None and (named := id_of(name)) is not None and ids[named]:
            message, tid = NAME_OF_ID, named
            covered.add(named)  # the id's own entry gets no answer of its own
        else:
            valid.append((name, tid))
            continue
        invalid.append((name, tid, message))
    return [(name, tid) for name, tid in valid if name is not None or tid not in covered], invalid


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    result_cls = nested(cls, "DeletableTopicResult")
    results = []
    quota = MutationQuota(ctx.mutation_quotas, header, STRICT_QUOTA_SINCE)
    def id_of(name: str) -> uuid.UUID | None:
        topic = ctx.topics.get(name)
        return topic.topic_id if topic is not None else None

    valid, invalid = screened(_targets(request), id_of)
    for name, topic_id, message in invalid:
        results.append(make(result_cls, name=name, topic_id=topic_id, error_code=ErrorCode.invalid_request,
                            error_message=message))
    for name, topic_id in valid:
        if name is None:
            topic = ctx.topics.by_id.get(topic_id) if topic_id is not None else None
            if topic is None:
                results.append(make(result_cls, name=None, topic_id=topic_id, error_code=ErrorCode.unknown_topic_id,
                                    error_message="Topic id is unknown"))
                continue
            name = topic.name
        try:
            if not ctx.authorizer.topic_allowed(Operation.DELETE, name):  # ACLs, as Kafka's handleDeleteTopicsRequest
                raise TopicError(ErrorCode.topic_authorization_failed, "Authorization failed.")
            check_internal_change(name, ctx.config.allow_internal_topic_changes, "deleted")
            existing = ctx.topics.get(name)
            if existing is None:
                raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist")
            if not quota.admit(len(existing.partitions)):
                raise TopicError(*THROTTLED_MUTATION)
            await ctx.topic_admin.delete_topic(name)
            results.append(make(result_cls, name=name, topic_id=existing.topic_id, error_code=ErrorCode.none,
                                error_message=None))
        except TopicError as exc:
            results.append(make(result_cls, name=name, topic_id=topic_id, error_code=exc.code,
                                error_message=str(exc)))
    return make(cls, throttle_time=quota.throttle(), responses=tuple(results))
