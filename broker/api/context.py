"""What a handler is given: the broker's services, each typed by the Protocol of what handlers call.

Broker (broker/broker.py) builds one ApiContext when it starts, and dispatch (dispatch.py) hands
it to every handler with the request: `handle(ctx, header, request)`. A handler reaches the
broker's state through these fields only, so what an API may touch is written in the Protocols
it calls, and a test can build a context from the services it needs.

A handler's answer (`Answer`) is a kio response object of the request's version, None when no
response is due (acks=0), or a Deferred (deferred.py). kio builds a class per API version and
handlers fill one with `response_builder.make`, so the answer is typed as Any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, TypeAlias

from wire.protocol import RequestHeader

from broker.api.access_checks import AccessChecks
from broker.api.config_service import ConfigService
from broker.api.coordinator_topics import CoordinatorKind, CoordinatorTopic
from broker.api.feature_levels import FeatureLevels
from broker.api.group_service import GroupService
from broker.api.quota_service import ClientQuotaAdmin
from broker.api.replica_service import ReplicaService
from broker.api.security_service import SecurityAdmin
from broker.api.share_group_service import ShareGroupService, ShareStateService
from broker.api.topic_admin_service import TopicAdmin
from broker.api.topic_lookup import TopicLookup
from broker.api.transaction_service import TransactionService
from broker.cluster.view import ClusterView
from broker.quotas.enforcement import MutationQuotas
from broker.settings.config import BrokerConfig

Answer: TypeAlias = Any
Request: TypeAlias = Any  # the kio request class of the header's API key and version


@dataclass(frozen=True)
class ApiContext:
    config: BrokerConfig
    authorizer: AccessChecks  # the ACL checks of the request being handled
    view: ClusterView  # the metadata image: brokers, placements, the controller, reassignments, elections
    topics: TopicLookup  # topics and hosted partitions by name or id
    configs: ConfigService  # dynamic broker configs and groups' configs
    security: SecurityAdmin  # ACLs, SCRAM credentials, delegation tokens, SASL mechanisms
    client_quotas: ClientQuotaAdmin  # the stored client quotas
    features: FeatureLevels  # finalized feature levels
    transactions: TransactionService  # the transaction coordinator, producer ids, markers, verification
    coordinator_topics: Mapping[CoordinatorKind, CoordinatorTopic]  # FindCoordinator's topics, made on first lookup
    share_groups: ShareGroupService  # share groups: membership, sessions, share-partitions, offsets admin
    share_states: ShareStateService  # the share coordinator: share-partition states (APIs 83-87)
    topic_admin: TopicAdmin  # creating, deleting and growing topics
    mutation_quotas: MutationQuotas  # the controller_mutation_rate topic admin requests count against
    replicas: ReplicaService  # the data path: the write path, fetch sessions, log dirs (Kafka's ReplicaManager)
    groups: GroupService  # every kind of group, by id: membership, describing, committed offsets


Handler: TypeAlias = Callable[[ApiContext, RequestHeader, Request], Awaitable[Answer]]
