"""Kafka's numbers for configs on the wire, defined once for every API that carries them
(DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, CreateTopics, ListConfigResources).

They are Kafka's own: org.apache.kafka.common.config.ConfigResource.Type,
DescribeConfigsResponse.ConfigSource and ConfigType, and AlterConfigOp.OpType. The ACL
resource types (TOPIC 2, GROUP 3, CLUSTER 4, ...) are another numbering and live with the ACLs.
"""

from __future__ import annotations

from enum import IntEnum


class ConfigResourceType(IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(IntEnum):
    """Where a described value comes from; Kafka lists synonyms in this order of precedence."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigType(IntEnum):
    """A described value's type (DescribeConfigs v3+ config_type)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class AlterConfigOp(IntEnum):
    """IncrementalAlterConfigs' config_operation."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3
