"""Dynamic broker configs over raw requests: IncrementalAlterConfigs and DescribeConfigs of a BROKER resource."""

from __future__ import annotations

from compat_tests.helpers.raw_kafka import Client

NONE, INVALID_REQUEST = 0, 42
BROKER = 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 2, 3, 4, 5
NODE = "1"  # the test brokers' broker.id


def incremental(client: Client, version: int, name: str, ops: list, validate_only=False) -> tuple[int, str | None]:
    r = client.request(44, version, validate_only=validate_only, resources=[
        {"resource_type": BROKER, "resource_name": name,
         "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}])
    (res,) = r.responses
    return res.error_code, res.error_message


def described(client: Client, name: str) -> dict:
    """DescribeConfigs of BROKER `name`: {config: (value, source, [(synonym value, source)])}."""
    r = client.request(32, 4, include_synonyms=True, include_documentation=False, resources=[
        {"resource_type": BROKER, "resource_name": name, "configuration_keys": None}])
    (res,) = r.results
    assert res.error_code == NONE, res
    return {c.name: (c.value, c.config_source, [(s.value, s.source) for s in c.synonyms]) for c in res.configs}


TOPIC = 2
MESSAGE_TOO_LARGE, NOT_ENOUGH_REPLICAS, INVALID_RECORD = 10, 19, 87


def topic_config(client: Client, topic: str, name: str) -> tuple:
    """(value, source, [(synonym name, value, source)]) of one config of `topic`."""
    r = client.request(32, 4, include_synonyms=True, include_documentation=False, resources=[
        {"resource_type": TOPIC, "resource_name": topic, "configuration_keys": [name]}])
    (res,) = r.results
    assert res.error_code == NONE, res
    (c,) = res.configs
    return c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms]


def alter(client: Client, version: int, name: str, configs: dict, validate_only=False) -> tuple[int, str | None]:
    r = client.request(33, version, validate_only=validate_only, resources=[
        {"resource_type": BROKER, "resource_name": name, "configs": [{"name": k, "value": v} for k, v in configs.items()]}])
    (res,) = r.responses
    return res.error_code, res.error_message
