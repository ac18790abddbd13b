"""Every dynamic broker config twinlog accepts is either applied (dynamic_topic_defaults.py LIVE)
or has the reason it changes nothing (dynamic_no_effect.py): none is kept in silence."""

from __future__ import annotations

from broker.settings.dynamic_broker_configs import DYNAMIC
from broker.settings.dynamic_no_effect import NO_EFFECT, accepted_without_effect, reason
from broker.settings.dynamic_topic_defaults import LIVE
from broker.settings.table import BY_KEY


def test_every_config_kept_without_effect_says_why():
    assert set(accepted_without_effect()) == set(NO_EFFECT)


def test_no_applied_or_refused_config_claims_to_have_no_effect():
    assert not set(NO_EFFECT) & set(LIVE)
    assert not set(NO_EFFECT) & set(BY_KEY)
    assert set(NO_EFFECT) <= DYNAMIC


def test_a_listener_prefixed_config_has_its_configs_reason():
    assert reason("listener.name.external.ssl.cipher.suites") == NO_EFFECT["ssl.cipher.suites"]
    assert reason("log.retention.ms") is None
    assert reason("compression.type") is None and reason("unclean.leader.election.enable") is None
