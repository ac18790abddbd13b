"""`twinlog consume TOPIC`: print records over the Kafka protocol (ListOffsets, Fetch, OffsetFetch/Commit).

Where each partition starts: --offset start|end|N (default start), --from-beginning (start),
--timestamp MS (the first record at or after it, through ListOffsets), or with --group the
group's committed offset (--offset where it has none). With --group, what was printed is
committed as the group's offsets when the command ends (as a standalone consumer: a group with
live members refuses such a commit, as Kafka does).

It fetches until --num records were printed, or with --exit-at-end (-e) until every partition
reached the high watermark it had when the command started; otherwise it follows the topic
until interrupted. Batches come back whole (Fetch returns the batch holding the fetch offset),
so records below a partition's position are skipped, and control batches are not printed.

--format: `value` (the default, as kafka-console-consumer), `json` (one object per record,
bytes as UTF-8 with invalid bytes escaped), or a template with %t topic, %p partition,
%o offset, %T timestamp, %k key, %v value, %h headers, \\n and \\t.
"""

from __future__ import annotations

import json
import time

import click

from broker.cli.client_settings import client_options
from broker.cli.options import exclusive, kafka_client

_MAX_WAIT_MS = 500
_PARTITION_MAX_BYTES = 1 << 20


@click.command("consume")
@click.argument("topic")
@click.option("--offset", "-o", default="start", show_default=True, help="start, end or an offset.")
@click.option("--from-beginning", is_flag=True, help="Same as --offset start.")
@click.option("--timestamp", type=int, default=None, metavar="MS",
              help="Start at the first record with a timestamp >= MS (epoch milliseconds).")
@click.option("--partition", "-p", "partitions", type=click.IntRange(min=0), multiple=True,
              help="Read only these partitions (repeatable).")
@click.option("--group", "-g", default=None, help="Start at this group's committed offsets and commit at the end.")
@click.option("--num", "-n", type=click.IntRange(min=1), default=None, help="Stop after this many records.")
@click.option("--exit-at-end", "-e", is_flag=True, help="Stop at the end of every partition.")
@click.option("--format", "-f", "fmt", default="value", show_default=True, help="value, json or a %-template.")
@client_options
@click.pass_context
def consume_command(ctx, topic, offset, from_beginning, timestamp, partitions, group, num, exit_at_end, fmt,
                    connection) -> None:
    """Print the records of TOPIC."""
    from broker.cli.kafka_client import partition_leaders

    exclusive(ctx, "from_beginning", "offset", "timestamp")
    render = _renderer(fmt)
    with kafka_client(connection) as client:
        leaders = partition_leaders(client.metadata([topic]), [topic])
        chosen = sorted(p for _t, p in leaders) if not partitions else sorted(set(partitions))
        missing = [p for p in chosen if (topic, p) not in leaders]
        if missing:
            raise click.ClickException(f"{topic} has no partition {missing[0]}")
        tps = [(topic, p) for p in chosen]
        positions = _start_positions(client, leaders, tps, "start" if from_beginning else offset, timestamp, group)
        stop_at = _ends(client, leaders, tps) if exit_at_end else None
        printed = 0
        try:
            while num is None or printed < num:
                if stop_at is not None and all(positions[tp] >= stop_at[tp] for tp in tps):
                    break
                for record in fetch_records(client, leaders, positions, stop_at):
                    click.echo(render(topic, *record))
                    printed += 1
                    if num is not None and printed >= num:
                        break
        except KeyboardInterrupt:
            pass
        if group is not None:
            _commit(client, group, topic, positions)
    click.echo(f"consumed {printed} record(s)", err=True)


def _start_positions(client, leaders, tps, offset: str, timestamp, group) -> dict:
    from broker.cli.kafka_client import EARLIEST, LATEST, list_offsets

    if timestamp is not None:
        found = list_offsets(client, leaders, dict.fromkeys(tps, timestamp))
        ends = _ends(client, leaders, tps)
        positions = {tp: (o if o >= 0 else ends[tp]) for tp, o in found.items()}
    elif offset in ("start", "end"):
        positions = list_offsets(client, leaders, dict.fromkeys(tps, EARLIEST if offset == "start" else LATEST))
    elif offset.isdigit():
        positions = dict.fromkeys(tps, int(offset))
    else:
        raise click.BadParameter(f"{offset!r}: expected start, end or an offset", param_hint="--offset")
    if group is not None:
        committed = _committed(client, group, tps)
        positions.update({tp: o for tp, o in committed.items() if o >= 0})
    return positions


def _ends(client, leaders, tps) -> dict:
    from broker.cli.kafka_client import LATEST, list_offsets

    return list_offsets(client, leaders, dict.fromkeys(tps, LATEST))


def _committed(client, group, tps) -> dict:
    node = client.coordinator(group)
    topic = tps[0][0]
    answer = client.call(9, node, groups=[{"group_id": group, "member_id": None, "member_epoch": -1, "topics": [
        {"name": topic, "partition_indexes": [p for _t, p in tps]}]}], require_stable=False)
    (g,) = answer.groups
    if g.error_code.value != 0:
        raise click.ClickException(f"OffsetFetch {group}: {g.error_code.name.upper()}")
    return {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions}


def _commit(client, group, topic, positions) -> None:
    node = client.coordinator(group)
    answer = client.call(8, node, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                         group_instance_id=None, retention_time_ms=-1, topics=[{"name": topic, "partitions": [
                             {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                              "committed_metadata": ""} for (_t, p), o in sorted(positions.items())]}])
    for t in answer.topics:
        for p in t.partitions:
            if p.error_code.value != 0:
                raise click.ClickException(f"commit for group {group}: {p.error_code.name.upper()}")


def fetch_records(client, leaders, positions, stop_at):
    """One Fetch per leader from the current positions; yields (partition, offset, timestamp,
    key, value, headers) and advances the positions past every whole batch returned."""
    from wire.record_batch import iter_batches
    from wire.records import iter_records

    by_leader: dict[int, dict[str, list]] = {}
    for (topic, partition), position in positions.items():
        if stop_at is not None and position >= stop_at[(topic, partition)]:
            continue
        by_leader.setdefault(leaders[(topic, partition)], {}).setdefault(topic, []).append({
            "partition": partition, "current_leader_epoch": -1, "fetch_offset": position, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": _PARTITION_MAX_BYTES})
    for node, topics in by_leader.items():
        answer = client.call(1, node, cluster_id=None, replica_id=-1, max_wait=_MAX_WAIT_MS, min_bytes=1,
                             max_bytes=50 * _PARTITION_MAX_BYTES, isolation_level=0, session_id=0, session_epoch=-1,
                             topics=[{"topic": t, "partitions": ps} for t, ps in topics.items()],
                             forgotten_topics_data=[], rack_id="")
        if answer.error_code.value != 0:
            raise click.ClickException(f"Fetch: {answer.error_code.name.upper()}")
        for t in answer.responses:
            for p in t.partitions:
                tp = (t.topic, p.partition_index)
                if p.error_code.value != 0:
                    raise click.ClickException(f"fetch {tp[0]}/{tp[1]} at offset {positions[tp]}: "
                                               f"{p.error_code.name.upper()}")
                data = bytes(p.records or b"")
                for pos, header in iter_batches(data):
                    if not header.is_control:
                        for r in iter_records(memoryview(data)[pos:pos + header.size]):
                            if r.offset >= positions[tp] and (stop_at is None or r.offset < stop_at[tp]):
                                positions[tp] = r.offset + 1  # before the yield: the caller may stop here
                                yield (tp[1], r.offset, r.timestamp, r.key, r.value, r.headers)
                    positions[tp] = max(positions[tp], header.last_offset + 1)
    if not by_leader:
        time.sleep(_MAX_WAIT_MS / 1000)


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "backslashreplace")


def _renderer(fmt: str):
    if fmt == "value":
        return lambda topic, p, o, ts, k, v, h: _text(v) or ""
    if fmt == "json":
        return lambda topic, p, o, ts, k, v, h: json.dumps({
            "topic": topic, "partition": p, "offset": o, "timestamp": ts, "key": _text(k), "value": _text(v),
            "headers": {name: _text(value) for name, value in h}})
    if "%" not in fmt:
        raise click.BadParameter(f"{fmt!r}: expected value, json or a template with %-fields", param_hint="--format")
    template = fmt.replace("\\n", "\n").replace("\\t", "\t")

    def render(topic, p, o, ts, k, v, h) -> str:
        fields = {"t": topic, "p": str(p), "o": str(o), "T": str(ts), "k": _text(k) or "", "v": _text(v) or "",
                  "h": ",".join(f"{name}={_text(value) or ''}" for name, value in h), "%": "%"}
        out, i = [], 0
        while i < len(template):
            if template[i] == "%" and i + 1 < len(template) and template[i + 1] in fields:
                out.append(fields[template[i + 1]])
                i += 2
            else:
                out.append(template[i])
                i += 1
        return "".join(out)
    return render
