"""Replication, leadership and placement on etcd and several brokers."""
