"""Cluster coordination through etcd: registrations under leases, a controller elected through a
lease, partition leader / epochs / ISR changed only by compare-and-swap (see etcd_layout.py for
the keys). `ClusterMetadata` (cluster_metadata.py) is the entry point; the rest are its parts.

The package itself does not import ClusterMetadata: that loads the etcd client (aetcd, gRPC,
protobuf), about 40% of a broker's start-up CPU, which a broker without --etcd never uses."""

from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import NO_LEADER, BrokerRegistration, ControllerRecord, PartitionState, TopicRecord
from broker.cluster.metadata_image import MetadataChange, MetadataImage

__all__ = ["ClusterError", "NO_LEADER", "BrokerRegistration", "ControllerRecord",
           "PartitionState", "TopicRecord", "MetadataChange", "MetadataImage"]
