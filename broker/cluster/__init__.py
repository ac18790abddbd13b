"""Cluster coordination through etcd: registrations under leases, a controller elected through a
lease, partition leader / epochs / ISR changed only by compare-and-swap (see etcd_layout.py for
the keys). `ClusterMetadata` is the entry point; the rest are its parts."""

from broker.cluster.cluster_error import ClusterError
from broker.cluster.cluster_metadata import ClusterMetadata
from broker.cluster.etcd_layout import NO_LEADER, BrokerRegistration, ControllerRecord, PartitionState, TopicRecord
from broker.cluster.metadata_image import MetadataChange, MetadataImage

__all__ = ["ClusterError", "ClusterMetadata", "NO_LEADER", "BrokerRegistration", "ControllerRecord",
           "PartitionState", "TopicRecord", "MetadataChange", "MetadataImage"]
