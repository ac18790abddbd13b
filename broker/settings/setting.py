"""What a setting is: one row of the settings table (table.py), and the scopes a row may have.

A row carries Kafka's property name (twinlog's own where Kafka has none), the kind of its value
(its type and validator, kinds.py), its default, its help text, and its scope:

- broker: a broker setting, with serve's flag (`flag`);
- both: a broker setting that is also the default of a topic config (`topic`), Kafka's
  synonyms: log.retention.ms is the default of retention.ms, and a topic that does not set
  retention.ms has the broker's effective value;
- topic: a topic config with no broker setting here (`flag` None): its default is the table's.

A broker setting may also be the default of a group config (`group`, KIP-848/932's per-group
configs, Kafka's GroupConfig): a group that does not set share.record.lock.duration.ms has the
broker's group.share.record.lock.duration.ms (group_configs.py checks and resolves them).

`target` says where a value goes: "broker:<BrokerConfig field>", "log:<LogConfig field>" (the
topic defaults the engines get), "security:<kwarg>" (security_config), "acl:<kwarg>"
(authorizer_settings), "consumer_group:<kwarg>" (consumer_group_settings), "share_group:<kwarg>" (share_group_settings), "token:<kwarg>"
(delegation_token_settings), "streams_group:<kwarg>" (streams_group_settings), "process:<name>" (the CLI's own), or None for a topic config the broker
only keeps (preallocate: segments here grow as written).

It is apart from the table so that the modules deriving options, files, DescribeConfigs and
docs from a row read its shape here, and the table holds the rows alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.settings.kinds import Kind

BROKER, TOPIC, BOTH = "broker", "topic", "both"

# The units the rows' defaults are written in
MIB, MINUTE, DAY = 1024 * 1024, 60_000, 24 * 3600 * 1000


@dataclass(frozen=True)
class Setting:
    name: str  # Kafka's property name: the file's key, TWINLOG_<NAME>; a topic config's own name for scope topic
    flag: str | None  # serve's option, without "--"; None: a topic config alone
    kind: Kind
    default: object
    doc: str
    target: str | None  # where the value goes (see the module docstring)
    topic: str | None = None  # the topic config this setting is the default of (scope both or topic)
    param: str | None = None  # click's parameter name where it is not the flag's
    negatable: bool = False  # a --no-FLAG form too (booleans)
    describe: bool = True  # listed by DescribeConfigs for the broker
    sensitive: bool = False  # DescribeConfigs gives null, `config show` hides it, as Kafka does
    aliases: tuple[str, ...] = ()  # other keys a server.properties may use for it
    # Kafka's keys for this value in coarser units, (key, ms a unit), finest first: what a
    # server.properties without the setting's own key may use (sources.py)
    coarser: tuple[tuple[str, int], ...] = ()
    group: str | None = None  # the group config this broker setting is the default of

    @property
    def scope(self) -> str:
        if self.flag is None:
            return TOPIC
        return BROKER if self.topic is None else BOTH

    @property
    def param_name(self) -> str:
        return self.param or self.flag.replace("-", "_")

    @property
    def env_name(self) -> str:
        return "TWINLOG_" + self.name.upper().replace(".", "_").replace("-", "_")
