"""A group's share.* configs (broker/settings/group_configs.py): checked as Kafka's GroupConfig
checks them, against the broker's bounds, and resolved over the broker's values; and the
etcd layout's record for them round-trips."""

from __future__ import annotations

import pytest

from wire.error_codes import ErrorCode
from broker.cluster.etcd_layout import EtcdLayout, GroupConfigs
from broker.settings.config_from_settings import config_with
from broker.settings.group_configs import GroupShareConfig, incremental_group, share_config_for, validate_group_configs
from broker.settings.topic_config_changes import ConfigChangeError, ConfigOp
from wire.config_codes import AlterConfigOp

SHARE = config_with(group_share_record_lock_duration_ms=8000, share_auto_offset_reset="earliest").share_groups


def test_a_group_without_overrides_runs_with_the_brokers_values():
    assert share_config_for(SHARE, {}) == GroupShareConfig(8000, 5, 2000, "earliest", "read_uncommitted",
                                                                45000, 5000, True)


def test_overrides_replace_the_brokers_values_parsed():
    got = share_config_for(SHARE, {"share.isolation.level": "read_committed", "share.record.lock.duration.ms": "20000",
                                   "share.delivery.count.limit": "3", "share.auto.offset.reset": "latest",
                                   "share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000",
                                   "share.renew.acknowledge.enable": "FALSE"})
    assert got == GroupShareConfig(20000, 3, 2000, "latest", "read_committed", 50000, 6000, False)


@pytest.mark.parametrize("configs, message", [
    ({"share.record.lock.duration.ms": "14999"},
     "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
    ({"share.record.lock.duration.ms": "60001"},
     "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"),
    ({"share.delivery.count.limit": "1"}, "Invalid value 1 for configuration share.delivery.count.limit"),
    ({"share.isolation.level": "READ_COMMITTED"}, "Invalid value READ_COMMITTED for configuration share.isolation.level"),
    ({"share.auto.offset.reset": "none"}, "Invalid value none for configuration share.auto.offset.reset"),
    ({"consumer.session.timeout.ms": "50000"}, "Unknown group config name: consumer.session.timeout.ms"),
    ({"share.session.timeout.ms": "44999"},
     "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"),
    ({"share.session.timeout.ms": "60001"},
     "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"),
    ({"share.heartbeat.interval.ms": "4999"},
     "share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"),
    ({"share.heartbeat.interval.ms": "15001"},
     "share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms"),
    ({"share.heartbeat.interval.ms": "abc"}, "Invalid value abc for configuration share.heartbeat.interval.ms"),
    ({"share.renew.acknowledge.enable": "1"}, "Invalid value 1 for configuration share.renew.acknowledge.enable"),
])
def test_bad_names_and_values_are_invalid_config(configs, message):
    with pytest.raises(ConfigChangeError) as err:
        validate_group_configs(configs, SHARE)
    assert err.value.code is ErrorCode.invalid_config and str(err.value).startswith(message)


def test_the_bounds_are_the_brokers():
    narrow = config_with(group_share_min_delivery_count_limit=4, group_share_max_delivery_count_limit=6).share_groups
    assert validate_group_configs({"share.delivery.count.limit": "6"}, narrow) == {"share.delivery.count.limit": "6"}
    with pytest.raises(ConfigChangeError, match="less than or equal to group.share.max.delivery.count.limit"):
        validate_group_configs({"share.delivery.count.limit": "7"}, narrow)


def test_the_session_timeout_must_exceed_the_heartbeat_interval_the_groups_or_the_brokers():
    wide = config_with(group_share_min_session_timeout_ms=1000, group_share_max_heartbeat_interval_ms=20_000,
                       group_share_session_timeout_ms=10_000, group_share_heartbeat_interval_ms=1000).share_groups
    assert validate_group_configs({"share.session.timeout.ms": "2000"}, wide) == {"share.session.timeout.ms": "2000"}
    for configs in ({"share.heartbeat.interval.ms": "10000"},  # the broker's session timeout
                    {"share.session.timeout.ms": "5000", "share.heartbeat.interval.ms": "5000"}):
        with pytest.raises(ConfigChangeError, match="share.session.timeout.ms must be greater than "
                                                    "share.heartbeat.interval.ms"):
            validate_group_configs(configs, wide)


def test_incremental_sets_and_deletes_all_or_nothing():
    current = {"share.auto.offset.reset": "earliest"}
    ops = [ConfigOp("share.isolation.level", AlterConfigOp.SET, "read_committed"),
           ConfigOp("share.auto.offset.reset", AlterConfigOp.DELETE, None)]
    assert incremental_group(current, ops, SHARE) == {"share.isolation.level": "read_committed"}
    with pytest.raises(ConfigChangeError) as err:
        incremental_group(current, [ConfigOp("share.isolation.level", AlterConfigOp.APPEND, "x")], SHARE)
    assert err.value.code is ErrorCode.invalid_config
    assert current == {"share.auto.offset.reset": "earliest"}


def test_the_etcd_record_round_trips_with_any_group_name():
    layout = EtcdLayout("/t/")
    record = GroupConfigs("a group/with:odd chars", {"share.isolation.level": "read_committed"})
    key = layout.group_configs_key(record.group)
    assert layout.decode(key, layout.encode(record)) == ("group_configs", record)
    assert layout.parse_key(key) == ("group_configs", record.group)
