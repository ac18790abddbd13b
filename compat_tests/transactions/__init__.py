"""Transactions and idempotence: raw protocol, real clients, clusters."""
