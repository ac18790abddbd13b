"""docs/configuration.md, generated from the settings table: `twinlog config docs` prints it,
and broker/tests/test_config_docs.py fails when the file in the tree is not what it prints."""

from __future__ import annotations

from broker.settings.dynamic_broker_configs import DYNAMIC, LOG_DIRS
from broker.settings.dynamic_no_effect import NO_EFFECT, accepted_without_effect
from broker.settings.dynamic_topic_defaults import LIVE
from broker.settings.setting import BOTH, Setting
from broker.settings.table import BROKER_SETTINGS, BY_KEY, GROUP_CONFIGS, TOPIC_CONFIGS

_INTRO = """\
# Configuration

<!-- Generated from broker/settings/table.py by `twinlog config docs > docs/configuration.md`;
     broker/tests/test_config_docs.py fails when this file is stale. -->

Every setting is declared once, in the settings table (`broker/settings/table.py`, which gathers
the rows of each subject's module), under Kafka's property name
(twinlog's own where Kafka has none). A broker setting is given, from the strongest to the
weakest, by its `twinlog serve` flag, its environment variable (`TWINLOG_` and the name in
capitals, dots as underscores), or a Kafka `server.properties` passed as `--config FILE`;
otherwise it has its default. A key the file has and twinlog does not know is skipped with one
warning line, so a stock file loads; a bad value, wherever it came from, is one `Error:` line
naming the key (exit code 2). `twinlog config show [--config FILE] [flags]` prints what each
setting resolves to and where it came from. Every setting in this table is fixed at start-up,
but the topic defaults below that Kafka changes at runtime.

**Dynamic broker configs.** AlterConfigs and IncrementalAlterConfigs on a broker resource (this
broker's id, or the cluster default with an empty name) take the configs Kafka lists as dynamic
(its DynamicBrokerConfig), with Kafka's refusals and messages, all INVALID_REQUEST: a config
Kafka cannot change at runtime ("Cannot update these configs dynamically: Set(...)"), a
keystore/truststore config without a listener prefix, a per-broker config (listener, SASL, SSL)
at the cluster default, another broker's id. What is taken is kept (`broker_configs.json` in the
data dir; etcd on a cluster, seen by every broker) and described. Each is one of three kinds.

*Applied at once* (the list below): the topic defaults among them, and Kafka's broker names of
topic configs that have no broker setting here. Every topic that does not set the config itself
takes the new value on its live partitions, and new topics start with it; this broker's value
beats the cluster default's, which beats the static one (flag, environment, file); deleting it
brings the static value back. A bad value is INVALID_REQUEST with Kafka's "Invalid value ... for
configuration ...". `compression.type` makes the leader rewrite a producer's batch in another
codec in the one named (the topic configs' table says how). `unclean.leader.election.enable` is
the controller's, resolved as Kafka's controller does (the topic's own value, else the
controller's broker id, else the cluster default, else static): a partition whose whole ISR is
gone gets a live out-of-sync replica as leader as soon as the change is seen, where KRaft waits
for its next periodic check (5 minutes by default). `cordoned.log.dirs` (KIP-1066, on a broker
id only) names log dirs of that broker that take no new replica (docs/apis.md, DescribeLogDirs).

{applied}

*Accepted and kept, with no effect here*: twinlog has none of the machinery they tune. Their
DescribeConfigs documentation says the same.

| why they change nothing | configs |
|---|---|
{no_effect}

*Refused* with "(twinlog applies its own settings at start-up only)", even where Kafka takes
them at runtime: twinlog's own settings below that are not applied live ({refused}). They are
never kept and silently not applied.

DescribeConfigs on the broker reports each setting with Kafka's source: DYNAMIC_BROKER_CONFIG
or DYNAMIC_DEFAULT_BROKER_CONFIG for a dynamic config set on this broker or the cluster default,
STATIC_BROKER_CONFIG when a flag, the environment or the file set it, DEFAULT_CONFIG otherwise
(passwords are null and sensitive); with synonyms asked for, the one in force comes first. The
cluster default resource (an empty name) lists its dynamic configs alone, as Kafka's does.
"""

_TOPICS = """\
## Topic configs

Set per topic with CreateTopics, AlterConfigs or IncrementalAlterConfigs
(`twinlog topics create -c NAME=VALUE`, `twinlog topics alter-config --set NAME=VALUE`); a bad
name or value is INVALID_CONFIG. A topic that does not set a config with a broker setting has
the broker's effective value, and DescribeConfigs says so as Kafka does: on a broker started
with `--min-insync-replicas 2`, a topic's `min.insync.replicas` reads 2 from
STATIC_BROKER_CONFIG, with the synonyms `min.insync.replicas` = 2 (STATIC_BROKER_CONFIG) and 1
(DEFAULT_CONFIG). Below, a default that names a broker setting is that setting's value; a
config with no broker setting has the default shown (DEFAULT_CONFIG).
"""

_GROUPS = """\
## Group configs

Set per group with IncrementalAlterConfigs or AlterConfigs of resource type GROUP
(`kafka-configs.sh --entity-type groups --entity-name G --alter --add-config NAME=VALUE`), kept
durably (the data dir's `group_configs.json`, or etcd on a cluster) and applied by the group's
share-partitions at their next fetch; the group need not exist yet. A bad name or value is
INVALID_CONFIG; `share.record.lock.duration.ms` and `share.delivery.count.limit` must also lie
within the broker's `group.share.min.*` / `group.share.max.*` bounds. A group that does not set
one has the broker setting's value (DescribeConfigs: GROUP_CONFIG when the group sets it, else
the broker setting's source).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(setting: Setting) -> str:
    shown = setting.kind.show(setting.default)
    return f"`{shown}`" if shown else "none"


def _type(setting: Setting) -> str:
    return setting.kind.config_type.name


def _broker_row(s: Setting) -> str:
    where = f"`--{s.flag}`<br>`{s.env_name}`"
    topic = f"`{s.topic}`" if s.scope == BOTH else ""
    return (f"| `{s.name}` | {where} | {_type(s)} | {_cell(_default(s))} | {_cell(s.kind.valid)} | {topic} "
            f"| {_cell(s.doc)} |")


def _topic_row(name: str, s: Setting) -> str:
    default = _cell(_default(s)) if s.scope != BOTH else f"`{s.name}` ({_cell(_default(s))})"
    return f"| `{name}` | {_type(s)} | {default} | {_cell(s.kind.valid)} | {_cell(s.doc)} |"


def _dynamic_lists() -> dict[str, str]:
    groups: dict[str, list[str]] = {}
    for name in accepted_without_effect():
        groups.setdefault(NO_EFFECT[name], []).append(name)
    rows = [f"| {_cell(why)} | {', '.join(f'`{n}`' for n in names)} |" for why, names in groups.items()]
    refused = sorted(n for n in DYNAMIC if n in BY_KEY and n not in LIVE)
    return {"applied": ", ".join(f"`{n}`" for n in sorted(LIVE.keys() | LOG_DIRS)), "no_effect": "\n".join(rows),
            "refused": ", ".join(f"`{n}`" for n in refused)}


def configuration_markdown() -> str:
    lines = [_INTRO.format(**_dynamic_lists()), "## Broker settings", "",
             "| name | flag, environment | type | default | valid values | topic config | description |",
             "|---|---|---|---|---|---|---|"]
    lines += [_broker_row(s) for s in BROKER_SETTINGS]
    lines += ["", _TOPICS,
              "| name | type | default | valid values | description |",
              "|---|---|---|---|---|"]
    lines += [_topic_row(name, s) for name, s in TOPIC_CONFIGS.items()]
    lines += ["", _GROUPS,
              "| name | default | valid values | description |",
              "|---|---|---|---|"]
    lines += [f"| `{name}` | `{s.name}` ({_cell(_default(s))}) | {_cell(s.kind.valid)} | {_cell(s.doc)} |"
              for name, s in GROUP_CONFIGS.items()]
    return "\n".join(lines) + "\n"
