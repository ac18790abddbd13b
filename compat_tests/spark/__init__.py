"""Spark's Kafka connector's client calls."""
