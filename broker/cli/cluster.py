"""`twinlog cluster status`: brokers, controller and partition health, over the Kafka protocol.

DescribeCluster names the cluster, its brokers and its controller; an all-topics Metadata
(internal topics included) gives every partition's replicas and ISR. A partition is
under-replicated when its ISR is smaller than its replica set (Kafka's
UnderReplicatedPartitions) and offline when it has no leader. The exit status is 0 for a
healthy cluster and 2 when a partition is under-replicated or offline, so scripts can wait on it.
"""

from __future__ import annotations

import click

from broker.cli.client_settings import client_options
from broker.cli.options import check, kafka_client, print_table
from broker.cli.output import emit, format_option


@click.group("cluster")
def cluster_group() -> None:
    """Cluster-wide information."""


@cluster_group.command("status")
@format_option
@client_options
def status_command(output_format, connection) -> None:
    """Brokers, controller, and under-replicated or offline partitions."""
    with kafka_client(connection) as client:
        described = client.call(60, include_cluster_authorized_operations=False, endpoint_type=1)
        check(described.error_code, "DescribeCluster", described.error_message)
        metadata = client.metadata(None)
    brokers = [{"id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack,
                "controller": b.broker_id == described.controller_id}
               for b in sorted(described.brokers, key=lambda b: b.broker_id)]
    partitions = [(t.name, p) for t in metadata.topics if t.error_code.value == 0 for p in t.partitions]
    unhealthy = [{"topic": name, "partition": p.partition_index, "leader": p.leader_id if p.leader_id >= 0 else None,
                  "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes)}
                 for name, p in sorted(partitions, key=lambda x: (x[0], x[1].partition_index))
                 if p.leader_id < 0 or len(p.isr_nodes) < len(p.replica_nodes)]
    document = {"cluster_id": described.cluster_id, "controller": described.controller_id, "brokers": brokers,
                "topics": len(metadata.topics), "partitions": len(partitions),
                "under_replicated": sum(1 for u in unhealthy if u["leader"] is not None),
                "offline": sum(1 for u in unhealthy if u["leader"] is None), "unhealthy_partitions": unhealthy}

    def text() -> None:
        click.echo(f"cluster {described.cluster_id}  controller {described.controller_id}  brokers {len(brokers)}")
        print_table("brokers", ["ID", "HOST", "PORT", "RACK", "ROLE"],
                    [[b["id"], b["host"], b["port"], b["rack"] or "-", "controller" if b["controller"] else "broker"]
                     for b in brokers])
        click.echo(f"topics {document['topics']}  partitions {document['partitions']}  "
                   f"under-replicated {document['under_replicated']}  offline {document['offline']}")
        if unhealthy:
            print_table("unhealthy partitions", ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"],
                        [[u["topic"], u["partition"], "none" if u["leader"] is None else u["leader"],
                          ",".join(map(str, u["replicas"])), ",".join(map(str, u["isr"]))] for u in unhealthy])
    emit(output_format, document, text)
    if unhealthy:
        raise SystemExit(2)
