"""DescribeUserScramCredentials (API 50): each user's SCRAM mechanisms and iterations — never
the salt or keys. Kafka's rules (ControllerApis / ScramControlManager): users null = all; a
name asked twice is DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND, each in its own
result; the request itself then still succeeds."""

from __future__ import annotations

from collections import Counter
from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for
from wire.scram import SCRAM_MECHANISMS

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    result_cls, info_cls = nested(cls, "DescribeUserScramCredentialsResult"), nested(cls, "CredentialInfo")
    if not ctx.authorizer.cluster_allowed(Operation.DESCRIBE):  # ACLs, as Kafka's handleDescribeUserScramCredentialsRequest
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                    error_message="Cluster authorization failed.", results=())
    known = ctx.security.scram.describe()
    asked = None if request.users is None else [u.name for u in request.users]
    results = []
    if asked is None:
        for user in sorted(known):
            results.append(_found(result_cls, info_cls, user, known[user]))
    else:
        counts = Counter(asked)
        for user in dict.fromkeys(asked):
            if counts[user] > 1:
                results.append(make(result_cls, user=user, error_code=ErrorCode.duplicate_resource,
                                    error_message=f"Cannot describe SCRAM credentials for the same user twice "
                                                  f"in a single request: {user}", credential_infos=()))
            elif user not in known:
                results.append(make(result_cls, user=user, error_code=ErrorCode.resource_not_found,
                                    error_message=f"Attempt to describe a user credential that does not exist: "
                                                  f"{user}", credential_infos=()))
            else:
                results.append(_found(result_cls, info_cls, user, known[user]))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, results=tuple(results))


def _found(result_cls: Any, info_cls: Any, user: str, mechanisms: dict[str, int]) -> Any:
    infos = tuple(make(info_cls, mechanism=SCRAM_MECHANISMS[m][1], iterations=i) for m, i in sorted(mechanisms.items()))
    return make(result_cls, user=user, error_code=ErrorCode.none, error_message=None, credential_infos=infos)
