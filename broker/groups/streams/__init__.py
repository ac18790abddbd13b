"""KIP-1071 streams groups: topology, task assignment, the coordinator."""
