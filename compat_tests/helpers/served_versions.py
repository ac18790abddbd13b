"""Which advertised (api_key, version) pairs the conformance tests exercise.

The version lists come from wire.protocol.SERVED_VERSIONS, the table ApiVersions advertises.
Conformance test modules parametrize over it with `over_versions`, which also records the
pairs; test_served_versions_coverage.py fails for any advertised pair nobody tests, so a
version added to the table without a test cannot pass unnoticed.
"""

from __future__ import annotations

import pytest

from wire.protocol import SERVED_VERSIONS

EXERCISED: set[tuple[int, int]] = set()

# The modules whose decorators fill EXERCISED; the coverage check imports them itself so it
# holds even when run alone.
CONFORMANCE_MODULES = (
    "compat_tests.protocol.test_protocol_versions",
    "compat_tests.protocol.test_fetch_protocol_versions",
    "compat_tests.groups.test_group_protocol_versions",
    "compat_tests.groups.test_consumer_group_protocol",
    "compat_tests.protocol.test_admin_protocol_versions",
    "compat_tests.protocol.test_topic_protocol_versions",
    "compat_tests.protocol.test_replication_admin_versions",
    "compat_tests.protocol.test_config_admin_protocol_versions",
    "compat_tests.security.test_sasl_protocol_versions",
    "compat_tests.security.test_acl_protocol_versions",
    "compat_tests.security.test_delegation_token_protocol_versions",
    "compat_tests.transactions.test_txn_markers",
    "compat_tests.transactions.test_txn_protocol_versions",
    "compat_tests.transactions.test_txn_v2_protocol_versions",
    "compat_tests.transactions.test_txn_offset_commit",
    "compat_tests.transactions.test_describe_producers",
    "compat_tests.storage.test_alter_replica_log_dirs",
    "compat_tests.groups.test_share_protocol_versions",
    "compat_tests.groups.test_share_state_protocol",
    "compat_tests.groups.test_share_admin_protocol",
    "compat_tests.admin.test_quota_protocol_versions",
    "compat_tests.groups.test_streams_group_protocol",
    "compat_tests.admin.test_update_features",
)


def versions(api_key: int, lo: int | None = None, hi: int | None = None) -> list[int]:
    served_lo, served_hi = SERVED_VERSIONS.get(api_key, (0, -1))
    return [v for v in range(served_lo, served_hi + 1)
            if (lo is None or v >= lo) and (hi is None or v <= hi)]


def over_versions(api_key: int, lo: int | None = None, hi: int | None = None):
    """Parametrize `version` over the served versions of api_key (within lo..hi) and record them."""
    vs = versions(api_key, lo, hi)
    EXERCISED.update((api_key, v) for v in vs)
    return pytest.mark.parametrize("version", vs)


def served_pairs() -> set[tuple[int, int]]:
    return {(k, v) for k, (lo, hi) in SERVED_VERSIONS.items() for v in range(lo, hi + 1)}
