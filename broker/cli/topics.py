"""`twinlog topics create|list|describe|alter-config|add-partitions|delete`, over the Kafka protocol.

    create          CreateTopics (partitions, replication factor, configs such as storage.mode)
    list            Metadata for all topics
    describe        Metadata + DescribeConfigs + ListOffsets: leaders, ISR, log start and end
    alter-config    IncrementalAlterConfigs (--set / --delete / --append / --subtract)
    add-partitions  CreatePartitions (adds --num partitions, as rpk does)
    delete          DeleteTopics
"""

from __future__ import annotations

import click

from wire.config_codes import AlterConfigOp, ConfigResourceType, ConfigSource

from broker.cli.options import bootstrap_option, check, kafka_client, parse_assignments, print_table

TOPIC_RESOURCE = ConfigResourceType.TOPIC
OPERATIONS = {op.name.lower(): op for op in AlterConfigOp}  # --set, --delete, --append, --subtract
_TIMEOUT_MS = 30_000


@click.group("topics")
def topics_group() -> None:
    """Create, list, describe, configure and delete topics."""


@topics_group.command("create")
@click.argument("names", nargs=-1, required=True)
@click.option("--partitions", "-p", type=click.IntRange(min=-1), default=-1, show_default=True,
              help="Partitions of each topic; -1: the broker's num.partitions.")
@click.option("--replication-factor", "-r", type=click.IntRange(min=-1), default=-1, show_default=True,
              help="Replicas of each partition; -1: the broker's default.replication.factor.")
@click.option("--config", "-c", "configs", multiple=True, metavar="KEY=VALUE",
              help="A topic config, e.g. storage.mode=commitlog or cleanup.policy=compact (repeatable).")
@bootstrap_option
def create_command(names, partitions, replication_factor, configs, bootstrap) -> None:
    """Create topics NAMES."""
    config = parse_assignments(configs, "--config")
    with kafka_client(bootstrap) as client:
        answer = client.call(19, topics=[
            {"name": n, "num_partitions": partitions, "replication_factor": replication_factor, "assignments": [],
             "configs": [{"name": k, "value": v} for k, v in config.items()]} for n in names],
            timeout=_TIMEOUT_MS, validate_only=False)
    rows, failed = [], []
    for t in answer.topics:
        ok = t.error_code.value == 0
        rows.append([t.name, "OK" if ok else f"{t.error_code.name.upper()}: {t.error_message or ''}".rstrip(": ")])
        failed += [] if ok else [t.name]
    print_table("created topics", ["TOPIC", "STATUS"], rows)
    if failed:
        raise click.ClickException(f"{len(failed)} topic(s) not created: {', '.join(failed)}")


@topics_group.command("list")
@click.option("--internal/--no-internal", "-i", default=False, help="Include internal topics (__consumer_offsets).")
@bootstrap_option
def list_command(internal, bootstrap) -> None:
    """List topics with their partition and replica counts."""
    with kafka_client(bootstrap) as client:
        answer = client.metadata(None)
    rows = [[t.name, len(t.partitions), len(t.partitions[0].replica_nodes) if t.partitions else 0]
            for t in sorted(answer.topics, key=lambda t: t.name) if internal or not t.is_internal]
    print_table("topics", ["NAME", "PARTITIONS", "REPLICAS"], rows)


@topics_group.command("describe")
@click.argument("name")
@click.option("--all-configs", "-a", is_flag=True, help="Show every config, not only those set on the topic.")
@bootstrap_option
def describe_command(name, all_configs, bootstrap) -> None:
    """Partitions (leader, replicas, ISR, log start and end) and configs of topic NAME."""
    from broker.cli.kafka_client import EARLIEST, LATEST, list_offsets, partition_leaders

    with kafka_client(bootstrap) as client:
        metadata = client.metadata([name])
        leaders = partition_leaders(metadata, [name])
        (topic,) = metadata.topics
        starts = list_offsets(client, leaders, dict.fromkeys(leaders, EARLIEST))
        ends = list_offsets(client, leaders, dict.fromkeys(leaders, LATEST))
        configs = client.call(32, resources=[{"resource_type": TOPIC_RESOURCE, "resource_name": name,
                                              "configuration_keys": None}],
                              include_synonyms=False, include_documentation=False)
    (result,) = configs.results
    check(result.error_code, f"DescribeConfigs {name}", result.error_message)
    click.echo(f"topic {name}  id {topic.topic_id}  partitions {len(topic.partitions)}  "
               f"internal {str(bool(topic.is_internal)).lower()}")
    rows = [[p.partition_index, p.leader_id, p.leader_epoch, ",".join(map(str, p.replica_nodes)),
             ",".join(map(str, p.isr_nodes)), starts[(name, p.partition_index)], ends[(name, p.partition_index)]]
            for p in sorted(topic.partitions, key=lambda p: p.partition_index)]
    print_table("partitions", ["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "LOG-START", "HIGH-WATERMARK"], rows)
    # without --all, the configs set on this topic rather than inherited
    shown = [c for c in result.configs if all_configs or c.config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG]
    print_table("configs", ["KEY", "VALUE", "SOURCE"],
                [[c.name, "<sensitive>" if c.is_sensitive else c.value, _SOURCES.get(c.config_source, c.config_source)]
                 for c in sorted(shown, key=lambda c: c.name)])


_SOURCES = {ConfigSource.DYNAMIC_TOPIC_CONFIG: "topic", ConfigSource.DYNAMIC_BROKER_CONFIG: "broker (dynamic)",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG: "broker (dynamic default)",
            ConfigSource.STATIC_BROKER_CONFIG: "broker", ConfigSource.DEFAULT_CONFIG: "default",
            ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG: "broker logger"}


@topics_group.command("alter-config")
@click.argument("name")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set a config (repeatable).")
@click.option("--delete", "deletes", multiple=True, metavar="KEY", help="Back to the default (repeatable).")
@click.option("--append", "appends", multiple=True, metavar="KEY=VALUE", help="Add to a list config.")
@click.option("--subtract", "subtracts", multiple=True, metavar="KEY=VALUE", help="Remove from a list config.")
@click.option("--dry-run", is_flag=True, help="Validate only (validate_only): nothing changes.")
@bootstrap_option
def alter_config_command(name, sets, deletes, appends, subtracts, dry_run, bootstrap) -> None:
    """Change configs of topic NAME (IncrementalAlterConfigs)."""
    ops = [{"name": k, "config_operation": OPERATIONS["delete"], "value": None} for k in deletes]
    for op, pairs in (("set", sets), ("append", appends), ("subtract", subtracts)):
        ops += [{"name": k, "config_operation": OPERATIONS[op], "value": v}
                for k, v in parse_assignments(pairs, f"--{op}").items()]
    if not ops:
        raise click.UsageError("nothing to change: give --set, --delete, --append or --subtract")
    with kafka_client(bootstrap) as client:
        answer = client.call(44, resources=[{"resource_type": TOPIC_RESOURCE, "resource_name": name,
                                             "configs": ops}], validate_only=dry_run)
    (result,) = answer.responses
    check(result.error_code, f"alter-config {name}", result.error_message)
    click.echo(f"{'validated' if dry_run else 'altered'} {len(ops)} config(s) of {name}")


@topics_group.command("add-partitions")
@click.argument("name")
@click.option("--num", "-n", type=click.IntRange(min=1), required=True, help="How many partitions to add.")
@bootstrap_option
def add_partitions_command(name, num, bootstrap) -> None:
    """Add partitions to topic NAME (CreatePartitions)."""
    from broker.cli.kafka_client import partition_leaders

    with kafka_client(bootstrap) as client:
        current = len(partition_leaders(client.metadata([name]), [name]))
        answer = client.call(37, topics=[{"name": name, "count": current + num, "assignments": None}],
                             timeout=_TIMEOUT_MS, validate_only=False)
    (result,) = answer.results
    check(result.error_code, f"add-partitions {name}", result.error_message)
    click.echo(f"{name}: {current} -> {current + num} partitions")


@topics_group.command("delete")
@click.argument("names", nargs=-1, required=True)
@bootstrap_option
def delete_command(names, bootstrap) -> None:
    """Delete topics NAMES and their data."""
    with kafka_client(bootstrap) as client:
        answer = client.call(20, topics=[{"name": n, "topic_id": None} for n in names], topic_names=list(names),
                             timeout=_TIMEOUT_MS)
    rows, failed = [], []
    for r in answer.responses:
        ok = r.error_code.value == 0
        rows.append([r.name, "OK" if ok else r.error_code.name.upper()])
        failed += [] if ok else [r.name]
    print_table("deleted topics", ["TOPIC", "STATUS"], rows)
    if failed:
        raise click.ClickException(f"{len(failed)} topic(s) not deleted: {', '.join(failed)}")
