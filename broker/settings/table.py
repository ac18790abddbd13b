"""Every broker setting, declared once: Kafka's property name (twinlog's own where Kafka has
none), serve's flag, the value's kind, the default and the help text.

From this table come `twinlog serve`'s options (serve_options.py), the `--config FILE`
(server.properties) keys and the TWINLOG_* environment variables (config_sources.py), and the
broker entries of DescribeConfigs (broker_config_entries.py). `target` says where a value goes:
"broker:<BrokerConfig field>", "log:<LogConfig field>" (the topic defaults), "security:<kwarg>"
(security_config), "acl:<kwarg>" (authorizer_settings) or "process:<name>" (the CLI's own).

Only the kinds' parsers run on values from the command line, the environment and the file
alike, so one bad value reads the same wherever it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from segment.log import LogConfig
from wire.config_codes import ConfigType

from broker.settings.config import BrokerConfig
from broker.net.listeners import DEFAULT_PROTOCOL_MAP
from broker.storage.modes import MODES
from broker.security.tls_config import CLIENT_AUTH

BOOLEAN, STRING, INT, LONG, LIST, PASSWORD = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG,
                                              ConfigType.LIST, ConfigType.PASSWORD)
LONG_MAX = 2**63 - 1


class Kind:
    """How a value is read from text and shown; `parse` raises ValueError with the reason."""

    metavar = "TEXT"
    config_type = STRING

    def parse(self, text: str):
        return text

    def show(self, value) -> str:
        return "" if value is None else str(value)


class Int(Kind):
    def __init__(self, lo: int | None = None, hi: int | None = None, long: bool = False):
        self.lo, self.hi = lo, hi
        self.metavar = "INTEGER"
        self.config_type = LONG if long else INT

    def parse(self, text: str) -> int:
        try:
            value = int(str(text).strip())
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            bounds = f"at least {self.lo}" if self.hi is None else f"in [{self.lo}, {self.hi}]"
            raise ValueError(f"{value} is not {bounds}")
        return value


class Bool(Kind):
    metavar, config_type = "true|false", BOOLEAN

    def parse(self, text) -> bool:
        if isinstance(text, bool):  # a click flag
            return text
        word = str(text).strip().lower()
        if word not in ("true", "false"):
            raise ValueError(f"{text!r} is not true or false")
        return word == "true"

    def show(self, value) -> str:
        return str(value).lower()


class Choice(Kind):
    def __init__(self, options, fold=str.lower):
        self.options, self.fold = tuple(options), fold
        self.metavar = "|".join(self.options)

    def parse(self, text: str) -> str:
        value = self.fold(str(text).strip())
        if value not in self.options:
            raise ValueError(f"{text!r} is not one of {', '.join(self.options)}")
        return value


class Text(Kind):
    def __init__(self, metavar: str = "TEXT", config_type: int = STRING):
        self.metavar, self.config_type = metavar, config_type


class FilePath(Kind):
    """A path; `must_exist`: an existing file (keys, certificates, user lists)."""

    def __init__(self, must_exist: bool):
        self.must_exist = must_exist
        self.metavar = "FILE" if must_exist else "PATH"

    def parse(self, text) -> Path:
        path = Path(text)
        if self.must_exist and not path.is_file():
            raise ValueError(f"{str(text)!r} is not a readable file")
        return path


class Items(Kind):
    """A repeatable option; in a file or the environment the items are separated by ';'."""

    def __init__(self, metavar: str):
        self.metavar, self.config_type = metavar, LIST

    def parse(self, text) -> tuple[str, ...]:
        items = text if isinstance(text, tuple) else str(text).split(";")
        return tuple(i.strip() for i in items if i.strip())

    def show(self, value) -> str:
        return ";".join(value)


@dataclass(frozen=True)
class Setting:
    name: str  # Kafka's property name: the file's key, TWINLOG_<NAME> in the environment
    flag: str  # serve's option, without "--"
    kind: Kind
    default: object
    doc: str
    target: str  # where the value goes (see the module docstring)
    param: str | None = None  # click's parameter name where it is not the flag's
    negatable: bool = False  # a --no-FLAG form too (booleans)
    describe: bool = True  # listed by DescribeConfigs for the broker
    sensitive: bool = False  # DescribeConfigs gives null, `config show` hides it, as Kafka does
    aliases: tuple[str, ...] = ()  # other keys a server.properties may use for it

    @property
    def param_name(self) -> str:
        return self.param or self.flag.replace("-", "_")

    @property
    def env_name(self) -> str:
        return "TWINLOG_" + self.name.upper().replace(".", "_").replace("-", "_")


_LOG = LogConfig()
_B = BrokerConfig
_PEM = FilePath(must_exist=True)


def _s(name, flag, kind, default, doc, target, **more) -> Setting:
    return Setting(name, flag, kind, default, doc, target, **more)


SETTINGS: tuple[Setting, ...] = (
    _s("log.dirs", "data-dir", FilePath(False), Path("data"), "Directory of the broker's data (one directory).",
       "broker:data_dir", aliases=("log.dir",)),
    _s("host.name", "host", Text("HOST"), _B.host, "Address to listen on.", "broker:host"),
    _s("port", "port", Int(0, 65535), _B.port,
       "Port to listen on; 0: any free port (the log line says which, and Metadata advertises it).", "broker:port"),
    _s("advertised.host.name", "advertised-host", Text("HOST"), None,
       "Host name given to clients [default: --host].", "broker:advertised_host"),
    _s("broker.id", "node-id", Int(0), _B.node_id, "This broker's id; each cluster member needs its own.",
       "broker:node_id", aliases=("node.id",)),
    _s("storage.mode", "storage-mode", Choice(MODES), _B.storage_mode,
       "Storage layout of new topics (a topic's storage.mode config overrides it).", "broker:storage_mode"),
    _s("num.partitions", "num-partitions", Int(1), _B.num_partitions, "Partitions of auto-created topics.",
       "broker:num_partitions"),
    _s("auto.create.topics.enable", "auto-create-topics", Bool(), _B.auto_create_topics,
       "Create a topic when Metadata or Produce names one that does not exist.", "broker:auto_create_topics",
       negatable=True),
    _s("log.segment.bytes", "segment-bytes", Int(14), _LOG.segment_bytes,
       "Size at which a segment rolls (topic default of segment.bytes).", "log:segment_bytes"),
    _s("log.retention.ms", "retention-ms", Int(-1, long=True), _LOG.retention_ms,
       "How long records are kept (retention.ms); -1: forever.", "log:retention_ms"),
    _s("log.retention.bytes", "retention-bytes", Int(-1, long=True), _LOG.retention_bytes,
       "Bytes a partition keeps before its oldest segments go (retention.bytes); -1: no limit.",
       "log:retention_bytes"),
    _s("log.retention.check.interval.ms", "retention-check-ms", Int(1, long=True), _B.retention_check_ms,
       "How often retention is applied.", "broker:retention_check_ms"),
    _s("log.flush.interval.messages", "flush-messages", Int(0, long=True), _LOG.flush_messages,
       "fsync every N messages (flush.messages); 1: before acknowledging (group commit); "
       "0: leave it to the page cache.", "log:flush_messages"),
    _s("log.flush.interval.ms", "flush-interval-ms", Int(-1, long=True), _B.flush_interval_ms,
       "fsync every log at this interval; -1: leave it to the page cache.", "broker:flush_interval_ms"),
    _s("log.segment.delete.delay.ms", "file-delete-delay-ms", Int(0, long=True), _LOG.file_delete_delay_ms,
       "How long a deleted log file stays open for fetches still sending from it; its disk space "
       "returns after this.", "log:file_delete_delay_ms"),
    _s("log.index.interval.bytes", "log-index-interval-bytes", Int(0), _LOG.index_interval_bytes,
       "Bytes between offset-index entries (topic default of index.interval.bytes).", "log:index_interval_bytes"),
    _s("message.max.bytes", "message-max-bytes", Int(0), _LOG.max_message_bytes,
       "Largest record batch a topic accepts (topic default of max.message.bytes).", "log:max_message_bytes"),
    _s("socket.request.max.bytes", "socket-request-max-bytes", Int(1), _B.max_request_size,
       "Largest request the broker reads; a bigger one closes the connection.", "broker:max_request_size"),
    _s("queued.max.request.bytes", "queued-max-request-bytes", Int(-1, long=True), _B.queued_max_request_bytes,
       "Bytes of requests read but not yet handled, over all connections, before the broker stops "
       "reading more; 0 or -1: no bound.", "broker:queued_max_request_bytes"),
    _s("connections.max.idle.ms", "connections-max-idle-ms", Int(-1, long=True), _B.connections_max_idle_ms,
       "Close a connection that has neither read nor written for this long; -1: never.",
       "broker:connections_max_idle_ms"),
    _s("fetch.max.bytes", "fetch-max-bytes", Int(0), _B.fetch_max_bytes,
       "The most one Fetch response holds, whatever the client asks; the first batch still goes "
       "whole, so a consumer always progresses.", "broker:fetch_max_bytes"),
    _s("offsets.topic.num.partitions", "offsets-topic-partitions", Int(1), _B.offsets_topic_partitions,
       "Partitions of __consumer_offsets when it is first created.", "broker:offsets_topic_partitions"),
    _s("offsets.topic.segment.bytes", "offsets-topic-segment-bytes", Int(1), _B.offsets_topic_segment_bytes,
       "segment.bytes of __consumer_offsets when it is first created: the cleaner compacts closed "
       "segments only.", "broker:offsets_topic_segment_bytes"),
    _s("offsets.topic.replication.factor", "offsets-topic-replication-factor", Int(1),
       _B.offsets_topic_replication_factor,
       "Replication factor of __consumer_offsets (capped by the live brokers when created).",
       "broker:offsets_topic_replication_factor"),
    _s("group.initial.rebalance.delay.ms", "group-initial-rebalance-delay-ms", Int(0),
       _B.group_initial_rebalance_delay_ms,
       "How long a new group waits for more members before its first assignment.",
       "broker:group_initial_rebalance_delay_ms"),
    _s("group.min.session.timeout.ms", "group-min-session-timeout-ms", Int(0), _B.group_min_session_timeout_ms,
       "Shortest session timeout a member may ask for.", "broker:group_min_session_timeout_ms"),
    _s("group.max.session.timeout.ms", "group-max-session-timeout-ms", Int(0), _B.group_max_session_timeout_ms,
       "Longest session timeout a member may ask for.", "broker:group_max_session_timeout_ms"),
    _s("allow.internal.topic.changes", "allow-internal-topic-changes", Bool(), _B.allow_internal_topic_changes,
       "Let DeleteTopics and CreatePartitions change internal topics: deleting __consumer_offsets "
       "erases every committed offset, adding partitions to it can bring back old ones after a "
       "restart. Clients may never produce to them.", "broker:allow_internal_topic_changes"),
    _s("min.free.bytes", "min-free-bytes", Int(0, long=True), _B.min_free_bytes,
       "Refuse produce (KAFKA_STORAGE_ERROR) when it would leave less free space than this on the "
       "data dir's filesystem (Redpanda's storage_min_free_bytes); 0: no floor.", "broker:min_free_bytes"),
    _s("commitlog.file.bytes", "commitlog-file-bytes", Int(1, long=True), _B.commitlog_file_bytes,
       "Size of each commitlog file of the commitlog layout (RocketMQ's mappedFileSizeCommitLog).",
       "broker:commitlog_file_bytes"),
    _s("index.hash.slots", "index-hash-slots", Int(1), _B.index_hash_slots,
       "Hash slots per key-index file of the commitlog layout (RocketMQ's maxHashSlotNum).",
       "broker:index_hash_slots"),
    _s("index.max.entries", "index-max-entries", Int(1), _B.index_max_entries,
       "Entries per key-index file of the commitlog layout (RocketMQ's maxIndexNum).", "broker:index_max_entries"),
    _s("max.open.segment.files", "max-open-segment-files", Int(1), None,
       "Per-partition files held open at once, both layouts together (.log, .index, .timeindex; "
       "consume-queue files); the least recently used close and reopen when used "
       "[default: half of RLIMIT_NOFILE].", "broker:max_open_segment_files"),
    _s("etcd.endpoint", "etcd", Text("URL"), None,
       "Join the cluster coordinated by this etcd (e.g. http://127.0.0.1:2379); without it the "
       "broker is a cluster of one. Every member needs its own --node-id.", "broker:etcd"),
    _s("default.replication.factor", "default-replication-factor", Int(1), _B.default_replication_factor,
       "Replication factor of topics created without one.", "broker:default_replication_factor"),
    _s("min.insync.replicas", "min-insync-replicas", Int(1), _B.min_insync_replicas,
       "In-sync replicas an acks=all produce needs, unless the topic sets min.insync.replicas.",
       "broker:min_insync_replicas"),
    _s("replica.lag.time.max.ms", "replica-lag-time-max-ms", Int(1, long=True), _B.replica_lag_time_max_ms,
       "A follower not caught up for this long leaves the ISR.", "broker:replica_lag_time_max_ms"),
    _s("broker.session.timeout.ms", "broker-session-timeout-ms", Int(1), _B.broker_session_timeout_ms,
       "A broker silent for this long loses its etcd lease and its leaderships.",
       "broker:broker_session_timeout_ms"),
    _s("unclean.leader.election.enable", "unclean-leader-election", Bool(), _B.unclean_leader_election,
       "Elect a replica outside the ISR when the whole ISR is gone (loses acknowledged records).",
       "broker:unclean_leader_election", negatable=True),
    _s("log.cleaner.enable", "log-cleaner-enable", Bool(), _B.log_cleaner_enable,
       "Compact topics whose cleanup.policy has compact.", "broker:log_cleaner_enable", negatable=True),
    _s("log.cleaner.threads", "log-cleaner-threads", Int(1), _B.log_cleaner_threads,
       "Background threads cleaning compacted partitions.", "broker:log_cleaner_threads"),
    _s("log.cleaner.backoff.ms", "log-cleaner-backoff-ms", Int(0, long=True), _B.log_cleaner_backoff_ms,
       "How long a cleaner thread sleeps when no log is due.", "broker:log_cleaner_backoff_ms"),
    _s("log.cleaner.dedupe.buffer.size", "log-cleaner-dedupe-buffer-size", Int(1 << 20, long=True),
       _B.log_cleaner_dedupe_buffer_size, "Memory for the cleaners' key -> offset maps, over all threads.",
       "broker:log_cleaner_dedupe_buffer_size"),
    _s("metrics.port", "metrics-port", Int(0, 65535), None,
       "Serve Prometheus metrics on http://HOST:PORT/metrics and readiness on /health (200 once "
       "serving, 503 before); 0: any free port (logged) [default: off].", "broker:metrics_port"),
    _s("log.level", "log-level", Choice(("DEBUG", "INFO", "WARNING", "ERROR"), fold=str.upper), "INFO",
       "Lowest level of the broker's log lines.", "process:log_level", describe=False),
    # Listeners and SASL (issue 17): security_config.py says what each means
    _s("listeners", "listeners", Text("NAME://HOST:PORT,...", LIST), None,
       "Kafka's listeners, e.g. PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://:9093 (overrides "
       "--host/--port) [default: PLAINTEXT://--host:--port].", "security:listeners"),
    _s("advertised.listeners", "advertised-listeners", Text("NAME://HOST:PORT,...", LIST), None,
       "What Metadata names for clients of each listener [default: the listener's own address].",
       "security:advertised_listeners"),
    _s("listener.security.protocol.map", "listener-security-protocol-map", Text("NAME:PROTOCOL,...", LIST),
       DEFAULT_PROTOCOL_MAP, "Each listener's security protocol.", "security:listener_security_protocol_map"),
    _s("inter.broker.listener.name", "inter-broker-listener-name", Text("NAME"), None,
       "The listener brokers fetch from each other on [default: the first listener].",
       "security:inter_broker_listener_name"),
    _s("sasl.enabled.mechanisms", "sasl-enabled-mechanisms", Text("MECHANISM,...", LIST),
       "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "SASL mechanisms offered on SASL listeners.",
       "security:sasl_enabled_mechanisms"),
    _s("sasl.plain.users", "sasl-plain-users", _PEM, None,
       'PLAIN users: a file with user_NAME="PASSWORD" entries (Kafka\'s PlainLoginModule JAAS section '
       "works as is).", "security:sasl_plain_users"),
    _s("sasl.scram.users", "sasl-scram-user", Items("SCRAM-SHA-256=[name=N,password=P]"), (),
       "Add or replace a SCRAM user at start-up, salted and stored in the data dir (kafka-storage "
       "format --add-scram syntax); repeatable.", "security:sasl_scram_users", param="sasl_scram_users",
       sensitive=True),
    _s("sasl.mechanism.inter.broker.protocol", "inter-broker-sasl-mechanism", Text("MECHANISM"), None,
       "The mechanism this broker logs in to its peers with.", "security:inter_broker_sasl_mechanism"),
    _s("inter.broker.sasl.username", "inter-broker-sasl-username", Text("NAME"), None,
       "This broker's own SASL user name.", "security:inter_broker_sasl_username"),
    _s("inter.broker.sasl.password", "inter-broker-sasl-password", Text("PASSWORD", PASSWORD), None,
       "This broker's own SASL password.", "security:inter_broker_sasl_password", sensitive=True),
    # TLS (issue 17): tls_config.py says how the PEM files map to Kafka's keystore settings
    _s("ssl.keystore.location", "ssl-keystore-location", _PEM, None,
       "SSL / SASL_SSL listeners: the broker's certificate chain, PEM, leaf first; may hold the "
       "private key too (ssl.keystore.type=PEM).", "security:ssl_keystore_location"),
    _s("ssl.key.location", "ssl-key-location", _PEM, None,
       "The broker's private key, PEM, if not in the keystore file.", "security:ssl_key_location"),
    _s("ssl.key.password", "ssl-key-password", Text("PASSWORD", PASSWORD), None,
       "Password of an encrypted private key.", "security:ssl_key_password", sensitive=True),
    _s("ssl.truststore.location", "ssl-truststore-location", _PEM, None,
       "CA certificates, PEM, that client certificates must chain to.", "security:ssl_truststore_location"),
    _s("ssl.client.auth", "ssl-client-auth", Choice(CLIENT_AUTH), "none",
       "Client certificates on SSL listeners; the subject DN is the principal.", "security:ssl_client_auth"),
    _s("listener.ssl.client.auth", "listener-ssl-client-auth", Items("NAME=VALUE"), (),
       "One listener's ssl.client.auth, SASL_SSL ones included; repeatable. In a file: "
       "listener.name.NAME.ssl.client.auth=VALUE.", "security:listener_ssl_client_auth"),
    # ACLs (issue 17): cli_acl_options.py
    _s("authorizer.enable", "authorizer", Bool(), False,
       "Check every request against ACLs (Kafka's authorizer.class.name) [default: off].", "acl:authorizer"),
    _s("super.users", "super-users", Text("User:A;User:B"), "",
       "Principals every check allows, separated by ';'.", "acl:super_users"),
    _s("allow.everyone.if.no.acl.found", "allow-everyone-if-no-acl-found", Bool(), False,
       "Allow a request on a resource no ACL names [default: refuse].", "acl:allow_everyone_if_no_acl_found"),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
BY_KEY: dict[str, Setting] = {**{a: s for s in SETTINGS for a in s.aliases}, **BY_NAME}
