"""Dynamic broker configs (broker/settings/dynamic_broker_configs.py): AlterConfigs and
IncrementalAlterConfigs on a BROKER resource, this broker's id or the cluster default (an empty
name), over every advertised version, by Kafka's rules and messages; DescribeConfigs shows them
with their sources; the data dir keeps them across a restart; librdkafka's admin client sets
the config its own test suite sets (0081_admin: sasl.kerberos.min.time.before.relogin).
"""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from compat_tests.helpers.broker_configs import (
    APPEND, BROKER, DEFAULT_CONFIG, DELETE, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, INVALID_REQUEST, NODE,
    NONE, SET, SUBTRACT, alter, described, incremental)
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions

RELOGIN = "sasl.kerberos.min.time.before.relogin"


def _clear(client: Client) -> None:
    for name in ("", NODE):
        assert alter(client, 2, name, {}) == (NONE, None)


@over_versions(44)
def test_incremental_alter_configs_of_a_broker(client, version):
    _clear(client)
    assert incremental(client, version, NODE, [(RELOGIN, SET, "58000")], validate_only=True) == (NONE, None)
    assert RELOGIN not in described(client, NODE), "validate_only kept the config"
    assert incremental(client, version, NODE, [(RELOGIN, SET, "58000")]) == (NONE, None)
    assert incremental(client, version, "", [("num.io.threads", SET, "4")]) == (NONE, None)
    mine = described(client, NODE)
    assert mine[RELOGIN] == ("58000", DYNAMIC_BROKER_CONFIG, [("58000", DYNAMIC_BROKER_CONFIG)])
    assert mine["num.io.threads"][:2] == ("4", DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert mine["log.retention.ms"][1] == DEFAULT_CONFIG  # the static ones stay as they were
    # the cluster default resource lists its own configs alone, as Kafka's
    assert described(client, "") == {"num.io.threads": ("4", DYNAMIC_DEFAULT_BROKER_CONFIG,
                                                        [("4", DYNAMIC_DEFAULT_BROKER_CONFIG)])}
    # a broker's own value comes before the cluster default's
    assert incremental(client, version, NODE, [("num.io.threads", SET, "6")]) == (NONE, None)
    assert described(client, NODE)["num.io.threads"] == (
        "6", DYNAMIC_BROKER_CONFIG, [("6", DYNAMIC_BROKER_CONFIG), ("4", DYNAMIC_DEFAULT_BROKER_CONFIG)])
    assert incremental(client, version, NODE, [("num.io.threads", DELETE, None), (RELOGIN, DELETE, None)]) == (NONE, None)
    # APPEND / SUBTRACT on a list, from Kafka's default when none is stored
    rules = "sasl.kerberos.principal.to.local.rules"
    assert incremental(client, version, NODE, [(rules, APPEND, "RULE:x")]) == (NONE, None)
    assert described(client, NODE)[rules][:2] == ("DEFAULT,RULE:x", DYNAMIC_BROKER_CONFIG)
    assert incremental(client, version, NODE, [(rules, SUBTRACT, "DEFAULT")]) == (NONE, None)
    assert described(client, NODE)[rules][:2] == ("RULE:x", DYNAMIC_BROKER_CONFIG)
    assert incremental(client, version, NODE, [(rules, DELETE, None)]) == (NONE, None)
    assert described(client, NODE)["num.io.threads"][:2] == ("4", DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert RELOGIN not in described(client, NODE)

    # Kafka's refusals, each changing nothing
    refusals = [
        (NODE, [("log.dirs", SET, "/elsewhere")], INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.dirs)"),
        (NODE, [("ssl.keystore.location", SET, "/k.jks")], INVALID_REQUEST,
         "These security configs can be dynamically updated only per-listener using the listener prefix: "
         "Set(ssl.keystore.location)"),
        ("", [(RELOGIN, SET, "1")], INVALID_REQUEST,
         f"Cannot update these configs at default cluster level, broker id must be specified: Set({RELOGIN})"),
        (NODE, [(RELOGIN, SET, "1"), (RELOGIN, SET, "2")], INVALID_REQUEST, None),
        (NODE, [("num.io.threads", APPEND, "1")], INVALID_REQUEST,
         "Config value append is not allowed for config key: num.io.threads"),
        ("7", [(RELOGIN, SET, "1")], INVALID_REQUEST, "Unexpected broker id, expected 1, but received 7"),
        ("one", [(RELOGIN, SET, "1")], INVALID_REQUEST, "Node id must be an integer, but it is: one"),
    ]
    for name, ops, code, message in refusals:
        got = incremental(client, version, name, ops)
        assert got[0] == code and (message is None or got[1] == message), (ops, got)
    # twinlog's own settings but the topic defaults (test_dynamic_topic_defaults.py) are applied
    # at start-up only: refused, not kept and ignored
    code, message = incremental(client, version, NODE, [("log.cleaner.threads", SET, "2")])
    assert code == INVALID_REQUEST
    assert message.startswith("Cannot update these configs dynamically: Set(log.cleaner.threads)")
    assert RELOGIN not in described(client, NODE) and described(client, "") == {
        "num.io.threads": ("4", DYNAMIC_DEFAULT_BROKER_CONFIG, [("4", DYNAMIC_DEFAULT_BROKER_CONFIG)])}
    _clear(client)


@over_versions(33)
def test_alter_configs_of_a_broker(client, version):
    _clear(client)
    assert alter(client, version, NODE, {RELOGIN: "58000", "listener.name.plain.max.connections": "10"}) == (NONE, None)
    mine = described(client, NODE)
    assert mine[RELOGIN][:2] == ("58000", DYNAMIC_BROKER_CONFIG)
    assert mine["listener.name.plain.max.connections"][:2] == ("10", DYNAMIC_BROKER_CONFIG)
    # the whole set is replaced
    assert alter(client, version, NODE, {"background.threads": "3"}) == (NONE, None)
    mine = described(client, NODE)
    assert RELOGIN not in mine and mine["background.threads"][:2] == ("3", DYNAMIC_BROKER_CONFIG)
    assert alter(client, version, NODE, {"broker.id": "2"}) == (
        INVALID_REQUEST, "Cannot update these configs dynamically: Set(broker.id)")
    assert alter(client, version, NODE, {RELOGIN: None})[0] == INVALID_REQUEST
    assert alter(client, version, "", {"sasl.enabled.mechanisms": "PLAIN"})[0] == INVALID_REQUEST
    assert alter(client, version, NODE, {RELOGIN: "1"}, validate_only=True) == (NONE, None)
    assert RELOGIN not in described(client, NODE) and "background.threads" in described(client, NODE)
    _clear(client)


def test_dynamic_configs_survive_a_restart(broker_factory):
    proc = broker_factory()
    with Client.to(proc) as client:
        assert incremental(client, 1, NODE, [(RELOGIN, SET, "58000")]) == (NONE, None)
        assert incremental(client, 1, "", [("num.io.threads", SET, "4")]) == (NONE, None)
    proc.restart()
    with Client.to(proc) as client:
        mine = described(client, NODE)
        assert mine[RELOGIN][:2] == ("58000", DYNAMIC_BROKER_CONFIG)
        assert mine["num.io.threads"][:2] == ("4", DYNAMIC_DEFAULT_BROKER_CONFIG)


def test_librdkafka_sets_a_dynamic_broker_config(broker):
    """0081_admin's broker resource: AlterConfigs of sasl.kerberos.min.time.before.relogin."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.BROKER, NODE, set_config={RELOGIN: "58000"})
    for future in admin.alter_configs([resource]).values():
        assert future.result(timeout=15) is None
    (configs,) = [f.result(timeout=15) for f in admin.describe_configs([ConfigResource(ResourceType.BROKER, NODE)]).values()]
    assert configs[RELOGIN].value == "58000"
    assert configs[RELOGIN].source == DYNAMIC_BROKER_CONFIG
    for future in admin.alter_configs([ConfigResource(ResourceType.BROKER, NODE, set_config={})]).values():
        future.result(timeout=15)


def test_a_kept_config_without_effect_says_so_in_its_documentation(broker_factory):
    """DescribeConfigs v3+'s documentation of a dynamic config twinlog keeps but does not act on
    is why it changes nothing here (broker/settings/dynamic_no_effect.py), for its listener form too."""
    proc = broker_factory()
    prefixed = "listener.name.plaintext.ssl.cipher.suites"
    with Client.to(proc) as client:
        assert incremental(client, 1, NODE, [("num.io.threads", SET, "16"), (prefixed, SET, "TLS_AES_128_GCM_SHA256"),
                                             ("log.retention.ms", SET, "3600000")]) == (NONE, None)
        r = client.request(32, 4, include_synonyms=False, include_documentation=True, resources=[
            {"resource_type": BROKER, "resource_name": NODE,
             "configuration_keys": ["num.io.threads", prefixed, "log.retention.ms"]}])
        docs = {c.name: c.documentation for c in r.results[0].configs}
    assert docs["num.io.threads"].startswith("A broker is one asyncio event loop")
    assert docs[prefixed].startswith("TLS here is Python's ssl module")
    assert docs["log.retention.ms"] == "How long records are kept; -1: forever."  # applied: its own doc
