"""Every setting, declared once: the broker's settings and the topic configs, one row each (a
Setting: setting.py says what its fields and scopes mean).

From this table come `twinlog serve`'s options (serve_options.py), the `--config FILE`
(server.properties) keys and the TWINLOG_* environment variables (sources.py), BrokerConfig
and the LogConfig the engines get (config_from_settings.py), the topic configs CreateTopics,
AlterConfigs and IncrementalAlterConfigs accept (topic_configs.py), DescribeConfigs' entries
with their types, sources and synonyms (described_configs.py), and docs/configuration.md
(config_docs.py). No other module holds a setting's default.

The rows live by subject, each in its own module: the broker process (broker_rows.py), the log
(log_rows.py), the coordinators (coordinator_rows.py) and security (security_rows.py); a new
setting goes into its subject's module. The table's order, which serve's --help and
docs/configuration.md follow, is the order of the sections below.
"""

from __future__ import annotations

from broker.settings.broker_rows import CLUSTER, OBSERVABILITY, PROCESS, REQUESTS, STORAGE
from broker.settings.coordinator_rows import COORDINATORS
from broker.settings.log_rows import CLEANER, LOG
from broker.settings.security_rows import SECURITY
from broker.settings.setting import TOPIC, Setting

SETTINGS: tuple[Setting, ...] = (
    *PROCESS, *LOG, *REQUESTS, *COORDINATORS, *STORAGE, *CLUSTER, *CLEANER, *OBSERVABILITY, *SECURITY,
)

BROKER_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.scope != TOPIC)
TOPIC_CONFIGS: dict[str, Setting] = {s.topic: s for s in sorted(SETTINGS, key=lambda s: s.topic or "") if s.topic}
BY_NAME: dict[str, Setting] = {s.name: s for s in BROKER_SETTINGS}
GROUP_CONFIGS: dict[str, Setting] = {s.group: s for s in sorted(SETTINGS, key=lambda s: s.group or "") if s.group}
BY_KEY: dict[str, Setting] = {**{a: s for s in BROKER_SETTINGS for a in s.aliases}, **BY_NAME}
