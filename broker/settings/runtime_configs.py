"""The configs changed at runtime, beside the static ones (config.py): the dynamic broker configs
(AlterConfigs of BROKER: dynamic_broker_store.py keeps them, dynamic_broker_configs.py checks
them) and the groups' configs (broker/groups/group_config_store.py), each one broker's file or
etcd's on a cluster member. The handlers reach them as ctx.configs (broker/api/config_service.py).

The dynamic broker configs in force on this broker are two layers, as Kafka's: this broker's
id's over the cluster default's (""). The topic defaults among them (dynamic_topic_defaults.py)
are pushed to the topic registry when a change is kept here, and on a cluster member whenever its
metadata image changes (member.py), since another broker may have changed the cluster default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from segment.log import LogConfig

from broker.groups.group_config_store import ClusterGroupConfigStore, GroupConfigStore
from broker.settings import cordoned_log_dirs
from broker.settings.config import BrokerConfig
from broker.settings.dynamic_broker_store import BrokerConfigStore, ClusterBrokerConfigStore, Decide
from broker.settings.dynamic_topic_defaults import (in_force, log_defaults, min_insync_replicas,
                                                    txn_partition_verification)

# The topic registry's set_defaults: new partitions open with these, hosted ones take them.
SetTopicDefaults = Callable[[LogConfig, int], None]


class RuntimeConfigs:
    def __init__(self, config: BrokerConfig, brokers: BrokerConfigStore | ClusterBrokerConfigStore,
                 groups: GroupConfigStore | ClusterGroupConfigStore, set_topic_defaults: SetTopicDefaults,
                 log_dirs: Callable[[], Mapping[str, Path]]) -> None:
        self._config = config
        self._brokers = brokers
        self._groups = groups
        self._set_topic_defaults = set_topic_defaults
        self._log_dirs = log_dirs  # this broker's, storage mode -> dir: cordoned.log.dirs may name only these
        self._verification: bool | None = None  # transaction.partition.verification.enable, once applied

    def broker_config_layers(self) -> tuple[dict[str, str], dict[str, str]]:
        """The dynamic broker configs in force here: this broker's id's, the cluster default's."""
        return self._brokers.configs(str(self._config.node_id)), self._brokers.configs("")

    def broker_configs(self, name: str) -> dict[str, str]:
        return self._brokers.configs(name)

    async def alter_broker_configs(self, name: str, decide: Decide, validate_only: bool) -> None:
        await self._brokers.alter(name, lambda current: self._checked_dirs(decide(current)), validate_only)
        self.apply_topic_defaults()

    def _checked_dirs(self, configs: dict[str, str]) -> dict[str, str]:
        """cordoned.log.dirs may name only this broker's log dirs (it is per broker: a change at the
        cluster default was refused before this)."""
        if cordoned_log_dirs.CONFIG in configs:
            cordoned_log_dirs.check(configs[cordoned_log_dirs.CONFIG], self._log_dirs())
        return configs

    def apply_topic_defaults(self) -> None:
        """The topic defaults the dynamic broker configs set take effect on every partition here,
        and so does transaction.partition.verification.enable. Runs on each change of them: an
        AlterConfigs kept here, and a cluster member's every new metadata image."""
        dynamic = in_force(*self.broker_config_layers())
        self._set_topic_defaults(log_defaults(self._config, dynamic), min_insync_replicas(self._config, dynamic))
        self._verification = txn_partition_verification(self._config, dynamic)

    def txn_partition_verification(self) -> bool:
        """transaction.partition.verification.enable now: its dynamic value, else the static one.
        Kept by apply_topic_defaults: a Produce asks for every transaction's first batch to a
        partition, and merging the config layers each time was 1.4 % of the broker's CPU in a
        64-partition transactional load."""
        if self._verification is None:  # asked before the first apply (a member without its image)
            return txn_partition_verification(self._config, in_force(*self.broker_config_layers()))
        return self._verification

    def group_configs(self, group: str) -> dict[str, str]:
        return self._groups.configs(group)

    def configured_groups(self) -> list[str]:
        return self._groups.groups()

    async def alter_group_configs(self, group: str, decide: Decide, validate_only: bool) -> None:
        await self._groups.alter(group, decide, validate_only)
