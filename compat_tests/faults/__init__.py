"""Faults held against a cluster or a broker: network partitions, full disks, the fault suite."""
