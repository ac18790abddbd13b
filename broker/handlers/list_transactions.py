"""ListTransactions v0-v2: the transactional ids this broker coordinates (each broker answers for
its own; `kafka-transactions.sh list` asks them all).

Filters as Kafka's: by state name (names Kafka does not know come back in
unknown_state_filters), by producer id, (v1) by how long the open transaction has run, and (v2,
KIP-1152) by a regular expression the whole transactional id must match (null or empty: every
id; one that does not compile: INVALID_REGULAR_EXPRESSION). Only ids the principal may DESCRIBE
are listed.
"""

from __future__ import annotations

import re

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.txn.state import TxnState


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    state_cls = nested(cls, "TransactionState")
    pattern = getattr(request, "transactional_id_pattern", None)
    try:
        wanted = re.compile(pattern) if pattern else None
    except re.error:
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.invalid_regular_expression,
                    unknown_state_filters=(), transaction_states=())
    known = {name: TxnState.from_name(name) for name in request.state_filters}
    unknown = tuple(name for name, state in known.items() if state is None)
    states = {s for s in known.values() if s is not None} if request.state_filters else None
    listed = ctx.transactions.listed(states, set(request.producer_id_filters),
                                     getattr(request, "duration_filter", -1))
    answers = tuple(make(state_cls, transactional_id=m.transactional_id, producer_id=m.producer_id,
                         transaction_state=m.state.kafka_name)
                    for m in sorted(listed, key=lambda m: m.transactional_id)
                    if (wanted is None or wanted.fullmatch(m.transactional_id))
                    and ctx.authorizer.transactional_id_allowed(Operation.DESCRIBE, m.transactional_id))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, unknown_state_filters=unknown,
                transaction_states=answers)
