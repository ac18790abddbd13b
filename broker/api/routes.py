"""Which handler answers each API key: one module per API in broker/handlers/, each exposing
`async def handle(ctx: ApiContext, header: RequestHeader, request)`."""

from broker.handlers import add_offsets_to_txn
from broker.handlers import add_partitions_to_txn
from broker.handlers import alter_client_quotas
from broker.handlers import alter_configs
from broker.handlers import alter_partition_reassignments
from broker.handlers import alter_replica_log_dirs
from broker.handlers import alter_share_group_offsets
from broker.handlers import alter_user_scram_credentials
from broker.handlers import api_versions
from broker.handlers import consumer_group_describe
from broker.handlers import consumer_group_heartbeat
from broker.handlers import create_acls
from broker.handlers import create_delegation_token
from broker.handlers import create_partitions
from broker.handlers import create_topics
from broker.handlers import delete_acls
from broker.handlers import delete_groups
from broker.handlers import delete_records
from broker.handlers import delete_share_group_offsets
from broker.handlers import delete_share_group_state
from broker.handlers import delete_topics
from broker.handlers import describe_acls
from broker.handlers import describe_client_quotas
from broker.handlers import describe_cluster
from broker.handlers import describe_configs
from broker.handlers import describe_delegation_token
from broker.handlers import describe_groups
from broker.handlers import describe_log_dirs
from broker.handlers import describe_producers
from broker.handlers import describe_share_group_offsets
from broker.handlers import describe_topic_partitions
from broker.handlers import describe_transactions
from broker.handlers import describe_user_scram_credentials
from broker.handlers import elect_leaders
from broker.handlers import end_txn
from broker.handlers import expire_delegation_token
from broker.handlers import fetch
from broker.handlers import find_coordinator
from broker.handlers import heartbeat
from broker.handlers import incremental_alter_configs
from broker.handlers import init_producer_id
from broker.handlers import join_group
from broker.handlers import leave_group
from broker.handlers import list_config_resources
from broker.handlers import list_groups
from broker.handlers import list_offsets
from broker.handlers import list_partition_reassignments
from broker.handlers import list_transactions
from broker.handlers import metadata
from broker.handlers import offset_commit
from broker.handlers import offset_delete
from broker.handlers import offset_fetch
from broker.handlers import offset_for_leader_epoch
from broker.handlers import produce
from broker.handlers import renew_delegation_token
from broker.handlers import sasl_state_errors
from broker.handlers import initialize_share_group_state
from broker.handlers import read_share_group_state
from broker.handlers import read_share_group_state_summary
from broker.handlers import share_acknowledge
from broker.handlers import share_fetch
from broker.handlers import share_group_describe
from broker.handlers import share_group_heartbeat
from broker.handlers import write_share_group_state
from broker.handlers import streams_group_describe
from broker.handlers import streams_group_heartbeat
from broker.handlers import sync_group
from broker.handlers import txn_offset_commit
from broker.handlers import update_features
from broker.handlers import write_txn_markers

HANDLERS = {
    0: produce.handle,
    1: fetch.handle,
    2: list_offsets.handle,
    3: metadata.handle,
    8: offset_commit.handle,
    9: offset_fetch.handle,
    10: find_coordinator.handle,
    11: join_group.handle,
    12: heartbeat.handle,
    13: leave_group.handle,
    14: sync_group.handle,
    15: describe_groups.handle,
    16: list_groups.handle,
    17: sasl_state_errors.handle_handshake,
    18: api_versions.handle,
    19: create_topics.handle,
    20: delete_topics.handle,
    21: delete_records.handle,
    22: init_producer_id.handle,
    23: offset_for_leader_epoch.handle,
    24: add_partitions_to_txn.handle,
    25: add_offsets_to_txn.handle,
    26: end_txn.handle,
    27: write_txn_markers.handle,
    28: txn_offset_commit.handle,
    29: describe_acls.handle,
    30: create_acls.handle,
    31: delete_acls.handle,
    32: describe_configs.handle,
    33: alter_configs.handle,
    34: alter_replica_log_dirs.handle,
    35: describe_log_dirs.handle,
    36: sasl_state_errors.handle_authenticate,
    37: create_partitions.handle,
    38: create_delegation_token.handle,
    39: renew_delegation_token.handle,
    40: expire_delegation_token.handle,
    41: describe_delegation_token.handle,
    42: delete_groups.handle,
    43: elect_leaders.handle,
    44: incremental_alter_configs.handle,
    45: alter_partition_reassignments.handle,
    46: list_partition_reassignments.handle,
    47: offset_delete.handle,
    48: describe_client_quotas.handle,
    49: alter_client_quotas.handle,
    50: describe_user_scram_credentials.handle,
    51: alter_user_scram_credentials.handle,
    57: update_features.handle,
    60: describe_cluster.handle,
    61: describe_producers.handle,
    65: describe_transactions.handle,
    66: list_transactions.handle,
    68: consumer_group_heartbeat.handle,
    69: consumer_group_describe.handle,
    74: list_config_resources.handle,
    75: describe_topic_partitions.handle,
    76: share_group_heartbeat.handle,
    77: share_group_describe.handle,
    78: share_fetch.handle,
    79: share_acknowledge.handle,
    83: initialize_share_group_state.handle,
    84: read_share_group_state.handle,
    85: write_share_group_state.handle,
    86: delete_share_group_state.handle,
    87: read_share_group_state_summary.handle,
    88: streams_group_heartbeat.handle,
    89: streams_group_describe.handle,
    90: describe_share_group_offsets.handle,
    91: alter_share_group_offsets.handle,
    92: delete_share_group_offsets.handle,
}
