"""`twinlog groups list|describe|reset-offsets|delete`, over the Kafka protocol.

    list           ListGroups on every broker (each answers for the groups it coordinates)
    describe       DescribeGroups + OffsetFetch at the coordinator, ListOffsets at the leaders:
                   per partition the committed offset, the log end offset, the lag and the member
                   assigned to it (read from the member's consumer-protocol assignment)
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

from broker.cli.options import bootstrap_option, check, kafka_client, print_table

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


@click.group("groups")
def groups_group() -> None:
    """List, describe, reset and delete consumer groups."""


@groups_group.command("list")
@bootstrap_option
def list_command(bootstrap) -> None:
    """List the consumer groups of the cluster."""
    with kafka_client(bootstrap) as client:
        nodes = [b.node_id for b in client.metadata([]).brokers]
        rows = []
        for node in nodes:
            answer = client.call(16, node, states_filter=[], types_filter=[])
            check(answer.error_code, f"ListGroups at broker {node}")
            rows += [[g.group_id, g.group_state or "-", g.protocol_type or "-", node] for g in answer.groups]
    print_table("groups", ["GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"], sorted(rows))


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
@bootstrap_option
def describe_command(groups, bootstrap) -> None:
    """State, members, and per partition the committed offset and lag of each of GROUPS."""
    from broker.cli.kafka_client import LATEST, list_offsets, partition_leaders

    with kafka_client(bootstrap) as client:
        for group in groups:
            node = client.coordinator(group)
            (described,) = client.call(15, node, groups=[group], include_authorized_operations=False).groups
            check(described.error_code, f"DescribeGroups {group}")
            owners = {tp: (m.member_id, m.client_id, m.client_host) for m in described.members
                      for tp in assigned_partitions(m.member_assignment or b"")}
            committed = _committed(client, node, group, None)
            topics = sorted({t for t, _p in committed} | {t for t, _p in owners})
            leaders = partition_leaders(client.metadata(topics), topics) if topics else {}
            ends = list_offsets(client, leaders, dict.fromkeys(leaders, LATEST)) if leaders else {}
            click.echo(f"group {group}  state {described.group_state}  protocol {described.protocol_data or '-'}  "
                       f"members {len(described.members)}  coordinator {node}")
            rows = []
            for tp in sorted(set(committed) | set(owners)):
                current, end = committed.get(tp), ends.get(tp)
                lag = end - current if current is not None and end is not None else "-"
                member, client_id, host = owners.get(tp, ("-", "-", "-"))
                rows.append([tp[0], tp[1], "-" if current is None else current, "-" if end is None else end, lag,
                             member, client_id, host])
            total = sum(r[4] for r in rows if isinstance(r[4], int))
            print_table(f"{group} (total lag {total})", ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                                                        "LAG", "MEMBER-ID", "CLIENT-ID", "HOST"], rows)


@groups_group.command("reset-offsets")
@click.argument("group")
@click.option("--topic", "-t", "topics", multiple=True, help="Reset this topic (repeatable; default: every "
                                                              "topic the group has offsets for).")
@click.option("--to-earliest", "target", flag_value="earliest", help="To each partition's log start.")
@click.option("--to-latest", "target", flag_value="latest", help="To each partition's end (skip everything).")
@click.option("--to-offset", type=click.IntRange(min=0), default=None, help="To this offset.")
@click.option("--to-datetime", type=int, default=None, metavar="MS",
              help="To the first offset with a timestamp >= MS (epoch milliseconds).")
@click.option("--shift-by", type=int, default=None, help="Move each committed offset by N (negative: back).")
@click.option("--dry-run", is_flag=True, help="Show the new offsets without committing them.")
@bootstrap_option
def reset_offsets_command(group, topics, target, to_offset, to_datetime, shift_by, dry_run, bootstrap) -> None:
    """Set the committed offsets of GROUP (which must have no members)."""
    from broker.cli.kafka_client import EARLIEST, LATEST, list_offsets, partition_leaders

    chosen = [x for x in (target, to_offset, to_datetime, shift_by) if x is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
    with kafka_client(bootstrap) as client:
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
        elif target is not None:
            wanted = dict(starts if target == "earliest" else ends)
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
    print_table(f"{group}: {'new offsets (dry run, nothing committed)' if dry_run else 'offsets reset'}",
                ["TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"],
                [[t, p, committed.get((t, p), "-"), o] for (t, p), o in sorted(wanted.items())])


@groups_group.command("delete")
@click.argument("groups", nargs=-1, required=True)
@bootstrap_option
def delete_command(groups, bootstrap) -> None:
    """Delete GROUPS and their committed offsets (they must have no members)."""
    failed = []
    with kafka_client(bootstrap) as client:
        rows = []
        for group in groups:
            (result,) = client.call(42, client.coordinator(group), groups_names=[group]).results
            ok = result.error_code.value == 0
            rows.append([group, "OK" if ok else result.error_code.name.upper()])
            failed += [] if ok else [group]
    print_table("deleted groups", ["GROUP", "STATUS"], rows)
    if failed:
        raise click.ClickException(f"{len(failed)} group(s) not deleted: {', '.join(failed)}")
