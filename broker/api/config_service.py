"""What the config handlers (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
ListConfigResources) read and change beside the topics: the dynamic broker configs and the
groups' configs, each kept durably by its store (one broker's file or etcd).
broker/settings/runtime_configs.py's RuntimeConfigs is the one implementation.

A topic's configs are the topic's (ctx.topics, ctx.view.alter_topic_configs), not here.
"""

from __future__ import annotations

from typing import Protocol

from broker.settings.dynamic_broker_store import Decide


class ConfigService(Protocol):
    def broker_config_layers(self) -> tuple[dict[str, str], dict[str, str]]:
        """The dynamic broker configs in force here: this broker's id's, the cluster default's."""

    def broker_configs(self, name: str) -> dict[str, str]:
        """A BROKER resource's dynamic configs: a broker id's, or the cluster default's ("")."""

    async def alter_broker_configs(self, name: str, decide: Decide, validate_only: bool) -> None:
        """Keeps what `decide` makes of the resource's configs (cordoned.log.dirs checked against
        this broker's log dirs); the topic defaults among them take effect on this broker's
        partitions before it returns. Raises what `decide` raises, or ConfigChangeError."""

    def group_configs(self, group: str) -> dict[str, str]:
        """A group's config overrides (empty for a group that sets none, or does not exist)."""

    def configured_groups(self) -> list[str]:
        """The groups that set any config, by name."""

    async def alter_group_configs(self, group: str, decide: Decide, validate_only: bool) -> None:
        """Keeps what `decide` makes of the group's overrides; raises what `decide` raises."""
