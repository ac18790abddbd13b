"""Consumer, share and streams groups: raw protocol, real clients, clusters."""
