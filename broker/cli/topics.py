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

from broker.cli.client_settings import client_options
from broker.cli.options import check, kafka_client, parse_assignments, print_table
from broker.cli.output import emit, emit_outcomes, format_option

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
@format_option
@client_options
def create_command(names, partitions, replication_factor, configs, output_format, connection) -> None:
    """Create topics NAMES."""
    config = parse_assignments(configs, "--config")
    with kafka_client(connection) as client:
        answer = client.call(19, topics=[
            {"name": n, "num_partitions": partitions, "replication_factor": replication_factor, "assignments": [],
             "configs": [{"name": k, "value": v} for k, v in config.items()]} for n in names],
            timeout=_TIMEOUT_MS, validate_only=False)
    emit_outcomes(output_format, "created topics", "TOPIC", [
        (t.name, None if t.error_code.value == 0 else f"{t.error_code.name.upper()}: {t.error_message or ''}".rstrip(": "))
        for t in answer.topics], "topic(s) not created")


@topics_group.command("list")
@click.option("--internal/--no-internal", "-i", default=False, help="Include internal topics (__consumer_offsets).")
@format_option
@client_options
def list_command(internal, output_format, connection) -> None:
    """List topics with their partition and replica counts."""
    with kafka_client(connection) as client:
        answer = client.metadata(None)
    topics = [{"name": t.name, "partitions": len(t.partitions),
               "replicas": len(t.partitions[0].replica_nodes) if t.partitions else 0, "internal": bool(t.is_internal)}
              for t in sorted(answer.topics, key=lambda t: t.name) if internal or not t.is_internal]
    emit(output_format, topics, lambda: print_table("topics", ["NAME", "PARTITIONS", "REPLICAS"],
                                                    [[t["name"], t["partitions"], t["replicas"]] for t in topics]))


@topics_group.command("describe")
@click.argument("name")
@click.option("--all-configs", "-a", is_flag=True, help="Show every config, not only those set on the topic.")
@format_option
@client_options
def describe_command(name, all_configs, output_format, connection) -> None:
    """Partitions (leader, replicas, ISR, log start and end) and configs of topic NAME."""
    from broker.cli.kafka_client import EARLIEST, LATEST, list_offsets, partition_leaders

    with kafka_client(connection) as client:
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
    partitions = [{"partition": p.partition_index, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                   "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes),
                   "log_start_offset": starts[(name, p.partition_index)],
                   "high_watermark": ends[(name, p.partition_index)]}
                  for p in sorted(topic.partitions, key=lambda p: p.partition_index)]
    # without --all, the configs set on this topic rather than inherited
    shown = [{"name": c.name, "value": None if c.is_sensitive else c.value,
              "source": _SOURCES.get(c.config_source, str(c.config_source)), "sensitive": bool(c.is_sensitive)}
             for c in sorted(result.configs, key=lambda c: c.name)
             if all_configs or c.config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG]
    document = {"name": name, "topic_id": str(topic.topic_id), "internal": bool(topic.is_internal),
                "partitions": partitions, "configs": shown}

    def text() -> None:
        click.echo(f"topic {name}  id {topic.topic_id}  partitions {len(partitions)}  "
                   f"internal {str(bool(topic.is_internal)).lower()}")
        print_table("partitions", ["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "LOG-START", "HIGH-WATERMARK"],
                    [[p["partition"], p["leader"], p["leader_epoch"], ",".join(map(str, p["replicas"])),
                      ",".join(map(str, p["isr"])), p["log_start_offset"], p["high_watermark"]] for p in partitions])
        print_table("configs", ["KEY", "VALUE", "SOURCE"],
                    [[c["name"], "<sensitive>" if c["sensitive"] else c["value"], c["source"]] for c in shown])
    emit(output_format, document, text)


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
@client_options
def alter_config_command(name, sets, deletes, appends, subtracts, dry_run, connection) -> None:
    """Change configs of topic NAME (IncrementalAlterConfigs)."""
    ops = [{"name": k, "config_operation": OPERATIONS["delete"], "value": None} for k in deletes]
    for op, pairs in (("set", sets), ("append", appends), ("subtract", subtracts)):
        ops += [{"name": k, "config_operation": OPERATIONS[op], "value": v}
                for k, v in parse_assignments(pairs, f"--{op}").items()]
    if not ops:
        raise click.UsageError("nothing to change: give --set, --delete, --append or --subtract")
    with kafka_client(connection) as client:
        answer = client.call(44, resources=[{"resource_type": TOPIC_RESOURCE, "resource_name": name,
                                             "configs": ops}], validate_only=dry_run)
    (result,) = answer.responses
    check(result.error_code, f"alter-config {name}", result.error_message)
    click.echo(f"{'validated' if dry_run else 'altered'} {len(ops)} config(s) of {name}")


@topics_group.command("add-partitions")
@click.argument("name")
@click.option("--num", "-n", type=click.IntRange(min=1), required=True, help="How many partitions to add.")
@client_options
def add_partitions_command(name, num, connection) -> None:
    """Add partitions to topic NAME (CreatePartitions)."""
    from broker.cli.kafka_client import partition_leaders

    with kafka_client(connection) as client:
        current = len(partition_leaders(client.metadata([name]), [name]))
        answer = client.call(37, topics=[{"name": name, "count": current + num, "assignments": None}],
                             timeout=_TIMEOUT_MS, validate_only=False)
    (result,) = answer.results
    check(result.error_code, f"add-partitions {name}", result.error_message)
    click.echo(f"{name}: {current} -> {current + num} partitions")


@topics_group.command("delete")
@click.argument("names", nargs=-1, required=True)
@format_option
@client_options
def delete_command(names, output_format, connection) -> None:
    """Delete topics NAMES and their data."""
    with kafka_client(connection) as client:
        answer = client.call(20, topics=[{"name": n, "topic_id": None} for n in names], topic_names=list(names),
                             timeout=_TIMEOUT_MS)
    emit_outcomes(output_format, "deleted topics", "TOPIC", [
        (r.name, None if r.error_code.value == 0 else r.error_code.name.upper()) for r in answer.responses],
        "topic(s) not deleted")
