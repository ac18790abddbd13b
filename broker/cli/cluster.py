"""`twinlog cluster status`: brokers, controller and partition health, over the Kafka protocol.

DescribeCluster names the cluster, its brokers and its controller; an all-topics Metadata
(internal topics included) gives every partition's replicas and ISR. A partition is
under-replicated when its ISR is smaller than its replica set (Kafka's
UnderReplicatedPartitions) and offline when it has no leader. The exit status is 0 for a
healthy cluster and 2 when a partition is under-replicated or offline, so scripts can wait on it.
"""

from __future__ import annotations

import click

from broker.cli.options import bootstrap_option, check, kafka_client, print_table


@click.group("cluster")
def cluster_group() -> None:
    """Cluster-wide information."""


@cluster_group.command("status")
@bootstrap_option
def status_command(bootstrap) -> None:
    """Brokers, controller, and under-replicated or offline partitions."""
    with kafka_client(bootstrap) as client:
        described = client.call(60, include_cluster_authorized_operations=False, endpoint_type=1)
        check(described.error_code, "DescribeCluster", described.error_message)
        metadata = client.metadata(None)
    click.echo(f"cluster {described.cluster_id}  controller {described.controller_id}  "
               f"brokers {len(described.brokers)}")
    print_table("brokers", ["ID", "HOST", "PORT", "RACK", "ROLE"],
                [[b.broker_id, b.host, b.port, b.rack or "-",
                  "controller" if b.broker_id == described.controller_id else "broker"]
                 for b in sorted(described.brokers, key=lambda b: b.broker_id)])
    partitions = [(t.name, p) for t in metadata.topics if t.error_code.value == 0 for p in t.partitions]
    unhealthy = [(name, p) for name, p in partitions
                 if p.leader_id < 0 or len(p.isr_nodes) < len(p.replica_nodes)]
    click.echo(f"topics {len(metadata.topics)}  partitions {len(partitions)}  "
               f"under-replicated {sum(1 for _n, p in unhealthy if p.leader_id >= 0)}  "
               f"offline {sum(1 for _n, p in unhealthy if p.leader_id < 0)}")
    if unhealthy:
        print_table("unhealthy partitions", ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"],
                    [[name, p.partition_index, p.leader_id if p.leader_id >= 0 else "none",
                      ",".join(map(str, p.replica_nodes)), ",".join(map(str, p.isr_nodes))]
                     for name, p in sorted(unhealthy, key=lambda x: (x[0], x[1].partition_index))])
        raise SystemExit(2)
