"""`twinlog groups list|describe|reset-offsets|delete`, over the Kafka protocol.

    list           ListGroups on every broker (each answers for the groups it coordinates)
    describe       DescribeGroups (or, for a group of KIP-848's consumer protocol,
                   ConsumerGroupDescribe) + OffsetFetch at the coordinator, ListOffsets at the
                   leaders: per partition the committed offset, the log end offset, the lag and
                   the member assigned to it (read from the member's consumer-protocol
                   assignment); a group neither knows, without committed offsets, does not exist
    reset-offsets  OffsetCommit of new offsets, as kafka-consumer-groups --reset-offsets: only
                   while the group has no members (the broker refuses otherwise)
    delete         DeleteGroups at the coordinator

A consumer-protocol assignment (ConsumerProtocolAssignment, any version) starts

    version i16 | topic count i32 | per topic: name (i16 length, UTF-8), partition count i32, i32s

and the rest (user data, v1+ fields) is not needed here.
"""

from __future__ import annotations

import struct

import click

from broker.cli.client_settings import client_options
from broker.cli.options import check, exclusive, kafka_client, print_table
from broker.cli.output import emit, emit_outcomes, format_option

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


@click.group("groups")
def groups_group() -> None:
    """List, describe, reset and delete consumer groups."""


@groups_group.command("list")
@format_option
@client_options
def list_command(output_format, connection) -> None:
    """List the consumer groups of the cluster."""
    with kafka_client(connection) as client:
        nodes = [b.node_id for b in client.metadata([]).brokers]
        groups = []
        for node in nodes:
            answer = client.call(16, node, states_filter=[], types_filter=[])
            check(answer.error_code, f"ListGroups at broker {node}")
            groups += [{"group": g.group_id, "state": g.group_state or None, "protocol_type": g.protocol_type or None,
                        "coordinator": node} for g in answer.groups]
    groups.sort(key=lambda g: g["group"])
    emit(output_format, groups, lambda: print_table(
        "groups", ["GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"],
        [[g["group"], g["state"] or "-", g["protocol_type"] or "-", g["coordinator"]] for g in groups]))


def assigned_partitions(assignment: bytes) -> list[tuple[str, int]]:
    """(topic, partition) pairs of a consumer-protocol assignment; [] when it does not parse."""
    try:
        pos = _I16.size
        (topics,) = _I32.unpack_from(assignment, pos)
        pos += _I32.size
        out = []
        for _ in range(topics):
            (length,) = _I16.unpack_from(assignment, pos)
            name = bytes(assignment[pos + 2:pos + 2 + length]).decode()
            pos += 2 + length
            (count,) = _I32.unpack_from(assignment, pos)
            pos += _I32.size
            out += [(name, _I32.unpack_from(assignment, pos + 4 * i)[0]) for i in range(count)]
            pos += 4 * count
        return out
    except (struct.error, UnicodeDecodeError):
        return []


def _committed(client, node: int, group: str, topics: list[str] | None) -> dict[tuple[str, int], int]:
    answer = client.call(9, node, groups=[{
        "group_id": group, "member_id": None, "member_epoch": -1,
        "topics": None if topics is None else [{"name": t, "partition_indexes": []} for t in topics]}],
        require_stable=False)
    (g,) = answer.groups
    check(g.error_code, f"OffsetFetch {group}")
    return {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions
            if p.committed_offset >= 0}


@groups_group.command("describe")
@click.argument("groups", nargs=-1, required=True)
@format_option
@client_options
def describe_command(groups, output_format, connection) -> None:
    """State, members, and per partition the committed offset and lag of each of GROUPS.
    A group the coordinator does not know and that has no committed offsets does not exist:
    exit status 1, as kafka-consumer-groups says "Consumer group ... does not exist"."""
    with kafka_client(connection) as client:
        described = {group: _describe(client, group) for group in groups}
    missing = [group for group, d in described.items() if d is None]
    if missing:
        raise click.ClickException(f"consumer group(s) {', '.join(missing)} do not exist")
    documents = list(described.values())
    emit(output_format, documents, lambda: [_print_group(d) for d in documents])


def _describe(client, group: str) -> dict | None:
    """The group's state, members and offsets; None when it does not exist."""
    from broker.cli.kafka_client import LATEST, list_offsets, partition_leaders

    node = client.coordinator(group)
    membership = _classic(client, node, group) or _consumer_protocol(client, node, group)
    committed = _committed(client, node, group, None)
    if membership is None and not committed:
        return None
    kind, state, protocol, members, owners = membership or (None, None, None, 0, {})  # offsets alone
    topics = sorted({t for t, _p in committed} | {t for t, _p in owners})
    leaders = partition_leaders(client.metadata(topics), topics) if topics else {}
    ends = list_offsets(client, leaders, dict.fromkeys(leaders, LATEST)) if leaders else {}
    partitions = []
    for tp in sorted(set(committed) | set(owners)):
        current, end = committed.get(tp), ends.get(tp)
        member, client_id, host = owners.get(tp, (None, None, None))
        partitions.append({"topic": tp[0], "partition": tp[1], "current_offset": current, "log_end_offset": end,
                           "lag": end - current if current is not None and end is not None else None,
                           "member_id": member, "client_id": client_id, "host": host})
    return {"group": group, "type": kind, "state": state, "protocol": protocol, "members": members, "coordinator": node,
            "total_lag": sum(p["lag"] for p in partitions if p["lag"] is not None), "partitions": partitions}


def _classic(client, node: int, group: str) -> tuple | None:
    """(type, state, protocol, member count, owner of each partition) from DescribeGroups; None
    for a group it does not know (Dead, or GROUP_ID_NOT_FOUND from v6: also a KIP-848 group)."""
    (described,) = client.call(15, node, groups=[group], include_authorized_operations=False).groups
    if described.error_code.name.upper() == "GROUP_ID_NOT_FOUND" or described.group_state == "Dead":
        return None
    check(described.error_code, f"DescribeGroups {group}", described.error_message)
    owners = {tp: (m.member_id, m.client_id, m.client_host) for m in described.members
              for tp in assigned_partitions(m.member_assignment or b"")}
    return "classic", described.group_state, described.protocol_data or None, len(described.members), owners


def _consumer_protocol(client, node: int, group: str) -> tuple | None:
    """The same from ConsumerGroupDescribe, for a group of KIP-848's consumer protocol, which
    DescribeGroups does not describe (as kafka-consumer-groups asks both); None for a broker
    without the API or a group that is not one."""
    from broker.cli.kafka_client import ClientError

    try:
        client.version_for(69, node)
    except ClientError:
        return None
    (described,) = client.call(69, node, group_ids=[group], include_authorized_operations=False).groups
    if described.error_code.name.upper() == "GROUP_ID_NOT_FOUND":
        return None
    check(described.error_code, f"ConsumerGroupDescribe {group}", described.error_message)
    owners = {(t.topic_name, p): (m.member_id, m.client_id, m.client_host) for m in described.members
              for t in m.assignment.topic_partitions for p in t.partitions}
    return "consumer", described.group_state, described.assignor_name or None, len(described.members), owners


def _print_group(d: dict) -> None:
    click.echo(f"group {d['group']}  state {d['state'] or '-'}  protocol {d['protocol'] or '-'}  "
               f"members {d['members']}  coordinator {d['coordinator']}  type {d['type'] or '-'}")
    print_table(f"{d['group']} (total lag {d['total_lag']})",
                ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID", "HOST"],
                [["-" if v is None else v for v in p.values()] for p in d["partitions"]])


@groups_group.command("reset-offsets")
@click.argument("group")
@click.option("--topic", "-t", "topics", multiple=True, help="Reset this topic (repeatable; default: every "
                                                              "topic the group has offsets for).")
@click.option("--to-earliest", is_flag=True, help="To each partition's log start.")
@click.option("--to-latest", is_flag=True, help="To each partition's end (skip everything).")
@click.option("--to-offset", type=click.IntRange(min=0), default=None, help="To this offset.")
@click.option("--to-datetime", type=int, default=None, metavar="MS",
              help="To the first offset with a timestamp >= MS (epoch milliseconds).")
@click.option("--shift-by", type=int, default=None, help="Move each committed offset by N (negative: back).")
@click.option("--dry-run", is_flag=True, help="Show the new offsets without committing them.")
@format_option
@client_options
@click.pass_context
def reset_offsets_command(ctx, group, topics, to_earliest, to_latest, to_offset, to_datetime, shift_by, dry_run,
                          output_format, connection) -> None:
    """Set the committed offsets of GROUP (which must have no members): exactly one of
    --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by."""
    from broker.cli.kafka_client import EARLIEST, LATEST, list_offsets, partition_leaders

    targets = ("to_earliest", "to_latest", "to_offset", "to_datetime", "shift_by")
    exclusive(ctx, *targets)
    if not (to_earliest or to_latest) and all(x is None for x in (to_offset, to_datetime, shift_by)):
        raise click.UsageError("give one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
    with kafka_client(connection) as client:
        node = client.coordinator(group)
        committed = _committed(client, node, group, list(topics) or None)
        names = sorted(set(topics) or {t for t, _p in committed})
        if not names:
            raise click.ClickException(f"group {group} has no committed offsets: name the topics with --topic")
        leaders = partition_leaders(client.metadata(names), names)
        starts = list_offsets(client, leaders, dict.fromkeys(leaders, EARLIEST))
        ends = list_offsets(client, leaders, dict.fromkeys(leaders, LATEST))
        if to_datetime is not None:
            found = list_offsets(client, leaders, dict.fromkeys(leaders, to_datetime))
            wanted = {tp: (o if o >= 0 else ends[tp]) for tp, o in found.items()}
        elif to_earliest or to_latest:
            wanted = dict(starts if to_earliest else ends)
        elif to_offset is not None:
            wanted = dict.fromkeys(leaders, to_offset)
        else:
            wanted = {tp: committed.get(tp, starts[tp]) + shift_by for tp in leaders}
        # As kafka-consumer-groups: an offset outside the log is moved to its nearest end.
        wanted = {tp: min(max(o, starts[tp]), ends[tp]) for tp, o in wanted.items()}
        if not dry_run:
            by_topic: dict[str, list] = {}
            for (t, p), o in sorted(wanted.items()):
                by_topic.setdefault(t, []).append({"partition_index": p, "committed_offset": o,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""})
            answer = client.call(8, node, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                 group_instance_id=None, retention_time_ms=-1,
                                 topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()])
            for t in answer.topics:
                for p in t.partitions:
                    check(p.error_code, f"reset {group} {t.name}/{p.partition_index}"
                          + (" (the group must have no members)" if p.error_code.value in (22, 25, 27) else ""))
    rows = [{"topic": t, "partition": p, "previous_offset": committed.get((t, p)), "new_offset": o}
            for (t, p), o in sorted(wanted.items())]
    emit(output_format, {"group": group, "dry_run": dry_run, "partitions": rows}, lambda: print_table(
        f"{group}: {'new offsets (dry run, nothing committed)' if dry_run else 'offsets reset'}",
        ["TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"],
        [[r["topic"], r["partition"], "-" if r["previous_offset"] is None else r["previous_offset"], r["new_offset"]]
         for r in rows]))


@groups_group.command("delete")
@click.argument("groups", nargs=-1, required=True)
@format_option
@client_options
def delete_command(groups, output_format, connection) -> None:
    """Delete GROUPS and their committed offsets (they must have no members)."""
    outcomes = []
    with kafka_client(connection) as client:
        for group in groups:
            (result,) = client.call(42, client.coordinator(group), groups_names=[group]).results
            outcomes.append((group, None if result.error_code.value == 0 else result.error_code.name.upper()))
    emit_outcomes(output_format, "deleted groups", "GROUP", outcomes, "group(s) not deleted")
