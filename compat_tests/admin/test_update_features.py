"""UpdateFeatures (57) v0-2 over every advertised version, and what a finalized level switches:
ApiVersions shows the new levels with a higher epoch, group.version 0 turns the consumer group
protocol off and share.version 0 share groups (UNSUPPORTED_VERSION, as Kafka), a restart keeps
the levels (features.json), and the Java Admin's updateFeatures / describeFeatures see it all.
"""

from __future__ import annotations

import json
import subprocess
import uuid

from compat_tests.helpers.java_client import check_command
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions

NONE, UNSUPPORTED_VERSION, INVALID_UPDATE_VERSION = 0, 35, 95
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
TV, GV, SV, STV = "transaction.version", "group.version", "share.version", "streams.version"
DEFAULTS = {TV: 2, GV: 1, SV: 1, STV: 1}  # the test brokers' bootstrap levels


def finalized(client: Client) -> tuple[int, dict[str, int]]:
    r = client.request(18, 4, client_software_name="twinlog-compat", client_software_version="1")
    return r.finalized_features_epoch, {f.name: f.max_version_level for f in r.finalized_features}


def update(client: Client, version: int, updates: list[tuple[str, int, int]], validate_only=False):
    """UpdateFeatures [(feature, level, upgrade type)] -> the response."""
    keys = [{"feature": f, "max_version_level": level,
             **({"allow_downgrade": kind != UPGRADE} if version == 0 else {"upgrade_type": kind})}
            for f, level, kind in updates]
    extra = {"validate_only": validate_only} if version >= 1 else {}
    return client.request(57, version, timeout=15000, feature_updates=keys, **extra)


def outcome(response) -> tuple[int, str | None]:
    return response.error_code, response.error_message


def restore(client: Client) -> None:
    for name, level in DEFAULTS.items():
        kind = UPGRADE if finalized(client)[1].get(name, 0) <= level else SAFE_DOWNGRADE
        assert update(client, 1, [(name, level, kind)]).error_code == NONE


@over_versions(57)
def test_update_features(client, version):
    restore(client)
    epoch, levels = finalized(client)
    assert levels == DEFAULTS
    r = update(client, version, [(TV, 1, SAFE_DOWNGRADE)])
    assert outcome(r) == (NONE, None)
    if version < 2:
        assert [(x.feature, x.error_code) for x in r.results] == [(TV, NONE)]
    else:
        assert not hasattr(r, "results")  # v2 answers the error alone
    new_epoch, levels = finalized(client)
    assert levels == {**DEFAULTS, TV: 1} and new_epoch > epoch

    # Kafka's refusals: INVALID_UPDATE_VERSION with its message, and nothing changes, the valid
    # update beside the bad one included
    refusals = [
        ([(TV, 3, UPGRADE)], "Invalid update version 3 for feature transaction.version. "
                             "Local controller 1 only supports versions 0-2"),
        ([(GV, 0, SAFE_DOWNGRADE), ("eligible.leader.replicas.version", 1, UPGRADE)],
         "Invalid update version 1 for feature eligible.leader.replicas.version. Local controller 1 does not support "
         "this feature."),
        ([(SV, 0, UPGRADE)], "Invalid update version 0 for feature share.version. Can't downgrade the version of "
                             "this feature without setting the upgrade type to either safe or unsafe downgrade."),
        ([(TV, -1, SAFE_DOWNGRADE)], "Invalid update version -1 for feature transaction.version. "
                                     "A feature version cannot be less than 0."),
    ]
    if version >= 1:  # v0 has no upgrade type to get wrong
        refusals += [
            ([(TV, 2, SAFE_DOWNGRADE)], "Invalid update version 2 for feature transaction.version. "
                                        "Can't downgrade to a newer version."),
            ([(TV, 2, 0)], "Invalid update version 2 for feature transaction.version. "
                           "The controller does not support the given upgrade type."),
        ]
    for updates, message in refusals:
        r = update(client, version, updates)
        assert outcome(r) == (INVALID_UPDATE_VERSION, message), updates
        if version < 2:
            assert {x.error_code for x in r.results} == {INVALID_UPDATE_VERSION}
    assert finalized(client) == (new_epoch, {**DEFAULTS, TV: 1})

    if version >= 1:
        assert outcome(update(client, version, [(TV, 0, UNSAFE_DOWNGRADE)], validate_only=True)) == (NONE, None)
        assert finalized(client) == (new_epoch, {**DEFAULTS, TV: 1})
    # level 0 is finalized off: left out of ApiVersions, as Kafka leaves it
    assert outcome(update(client, version, [(TV, 0, SAFE_DOWNGRADE)])) == (NONE, None)
    assert TV not in finalized(client)[1]
    assert outcome(update(client, version, [(TV, 2, UPGRADE)])) == (NONE, None)
    assert finalized(client)[1] == DEFAULTS


def _consumer_heartbeat(client: Client, group: str) -> int:
    r = client.request(68, 0, group_id=group, member_id=uuid.uuid4().hex, member_epoch=0, instance_id=None,
                       rack_id=None, rebalance_timeout=30000, subscribed_topic_names=["t"],
                       server_assignor=None, topic_partitions=[])
    return r.error_code


def _share_heartbeat(client: Client, group: str) -> int:
    r = client.request(76, 1, group_id=group, member_id=uuid.uuid4().hex, member_epoch=0, rack_id=None,
                       subscribed_topic_names=["t"])
    return r.error_code


def test_group_share_and_streams_versions_switch_their_protocols(client):
    restore(client)
    assert _consumer_heartbeat(client, f"g-{uuid.uuid4().hex[:8]}") == NONE
    assert _share_heartbeat(client, f"s-{uuid.uuid4().hex[:8]}") == NONE
    try:
        off = [(GV, 0, SAFE_DOWNGRADE), (SV, 0, SAFE_DOWNGRADE), (STV, 0, SAFE_DOWNGRADE)]
        assert update(client, 2, off).error_code == NONE
        assert _consumer_heartbeat(client, f"g-{uuid.uuid4().hex[:8]}") == UNSUPPORTED_VERSION
        assert _share_heartbeat(client, f"s-{uuid.uuid4().hex[:8]}") == UNSUPPORTED_VERSION
        described = client.request(69, 0, group_ids=["any"], include_authorized_operations=False)
        assert [g.error_code for g in described.groups] == [UNSUPPORTED_VERSION]
        share_described = client.request(77, 1, group_ids=["any"], include_authorized_operations=False)
        assert [g.error_code for g in share_described.groups] == [UNSUPPORTED_VERSION]
        streams_described = client.request(89, 0, group_ids=["any"], include_authorized_operations=False)
        assert [g.error_code for g in streams_described.groups] == [UNSUPPORTED_VERSION]
        assert update(client, 2, [(GV, 1, UPGRADE), (SV, 1, UPGRADE), (STV, 1, UPGRADE)]).error_code == NONE
        streams_described = client.request(89, 0, group_ids=["any"], include_authorized_operations=False)
        assert [g.error_code for g in streams_described.groups] != [UNSUPPORTED_VERSION]
        assert _consumer_heartbeat(client, f"g-{uuid.uuid4().hex[:8]}") == NONE
        assert _share_heartbeat(client, f"s-{uuid.uuid4().hex[:8]}") == NONE
    finally:
        restore(client)


def test_finalized_levels_survive_a_restart(broker_factory):
    proc = broker_factory()
    with Client.to(proc) as client:
        assert update(client, 2, [(TV, 1, SAFE_DOWNGRADE)]).error_code == NONE
        epoch, levels = finalized(client)
    proc.restart()
    with Client.to(proc) as client:
        assert finalized(client) == (epoch, {**DEFAULTS, TV: 1})


def test_java_admin_update_and_describe_features(client, broker):
    """kafka-clients 4.3.0's Admin (java/FeaturesCheck.java)."""
    restore(client)
    run = subprocess.run(check_command("FeaturesCheck", broker.bootstrap), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    before, after_downgrade = seen["before"], seen["afterDowngrade"]
    assert {k: before[k] for k in DEFAULTS} == DEFAULTS
    assert before["supported transaction.version"] == "0-2" and before["supported group.version"] == "0-1"
    assert seen["downgrade"] == "ok" and after_downgrade[TV] == 1 and after_downgrade["epoch"] > before["epoch"]
    assert seen["validateOnly"] == "ok"
    assert seen["tooHigh"].startswith("InvalidUpdateVersionException: Invalid update version 5 for feature share.version")
    assert "Can't downgrade the version of this feature" in seen["downgradeAsUpgrade"]
    assert seen["upgrade"] == "ok"
    assert {k: seen["after"][k] for k in DEFAULTS} == DEFAULTS  # the validate-only downgrade changed nothing
