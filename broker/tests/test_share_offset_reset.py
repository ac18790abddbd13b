"""share.auto.offset.reset's values (broker/settings/share_offset_reset.py): the cases Kafka's
ShareGroupAutoOffsetResetStrategy accepts and refuses, durations as java.time.Duration reads
them, and the timestamp a by_duration start looks for."""

from __future__ import annotations

import pytest

from wire.error_codes import ErrorCode
from broker.settings.config_from_settings import config_with
from broker.settings.group_configs import validate_group_configs
from broker.settings.share_offset_reset import (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ShareOffsetReset, duration_ms,
                                                reset_timestamp)
from broker.settings.topic_config_changes import ConfigChangeError

SHARE = config_with().share_groups


@pytest.mark.parametrize("value", ["latest", "earliest", "by_duration:PT1H", "by_duration:P2D", "by_duration:PT0S",
                                   "by_duration:pt1.5s", "by_duration:P1DT2H3M4.005S", "by_duration:-PT-1H"])
def test_kafkas_values_are_taken(value):
    assert validate_group_configs({"share.auto.offset.reset": value}, SHARE) == {"share.auto.offset.reset": value}


@pytest.mark.parametrize("value", ["invalid", "by_duration:invalid", "by_duration:-PT1H", "by_duration:",
                                   "by_duration", "LATEST", "EARLIEST", "NONE", "none", "", "by_duration:PT",
                                   "by_duration:P", "by_duration:P1W", "BY_DURATION:PT1H", "by_duration:-PT0.001S"])
def test_what_kafka_refuses_is_invalid_config(value):
    with pytest.raises(ConfigChangeError) as err:
        validate_group_configs({"share.auto.offset.reset": value}, SHARE)
    assert err.value.code is ErrorCode.invalid_config
    assert str(err.value).endswith("The value must be either 'earliest', 'latest' or of the format "
                                   "'by_duration:<PnDTnHnMn.nS.>'.")


def test_a_broker_flag_may_spell_the_words_in_any_case():
    assert ShareOffsetReset().parse(" EARLIEST ") == "earliest"
    assert ShareOffsetReset().parse("by_duration:PT10M") == "by_duration:PT10M"
    with pytest.raises(ValueError):
        ShareOffsetReset().parse("by_duration:-PT10M")


@pytest.mark.parametrize("iso, ms", [("PT1H", 3_600_000), ("P1D", 86_400_000), ("PT1.5S", 1_500),
                                     ("PT-0.5S", -500), ("-PT1M", -60_000), ("P1DT-1H", 82_800_000),
                                     ("PT0.0009S", 0), ("+PT2M3S", 123_000)])
def test_durations_read_as_java_reads_them(iso, ms):
    assert duration_ms(iso) == ms


def test_the_timestamp_a_start_looks_for():
    assert reset_timestamp("earliest", 10_000) == EARLIEST_TIMESTAMP
    assert reset_timestamp("latest", 10_000) == LATEST_TIMESTAMP
    assert reset_timestamp("by_duration:PT2S", 10_000) == 8_000
