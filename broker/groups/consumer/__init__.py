"""KIP-848 consumer groups: the coordinator computes assignments and members reconcile to them
through ConsumerGroupHeartbeat, one partition move at a time, without a stop-the-world rebalance."""
