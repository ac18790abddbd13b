"""Kafka's "simple" assignor for share groups: every subscribed partition goes to some member, and
every member gets some partition of each topic it subscribes to when there are partitions enough
to go round or not: a partition may be shared, since its records are handed out one at a time.

Per topic, with its m subscribed members sorted by id and n partitions: when m <= n, partition p
goes to member p mod m (each member gets n/m, rounded); when m > n, member i gets partition
i mod n (each partition is shared by m/n members, rounded). Deterministic, so every broker and
every retry computes the same thing.
"""

from __future__ import annotations

import uuid

Assignment = dict[uuid.UUID, frozenset[int]]  # topic id -> partitions


def assign(subscriptions: dict[str, set[uuid.UUID]], partitions: dict[uuid.UUID, int]) -> dict[str, Assignment]:
    """member id -> its assignment; `subscriptions`: member id -> topic ids, `partitions`: topic id -> count."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {mid: {} for mid in subscriptions}
    for topic_id, count in sorted(partitions.items(), key=lambda kv: str(kv[0])):
        members = sorted(mid for mid, topics in subscriptions.items() if topic_id in topics)
        if not members or count <= 0:
            continue
        if len(members) <= count:
            pairs = ((members[p % len(members)], p) for p in range(count))
        else:
            pairs = ((mid, i % count) for i, mid in enumerate(members))
        for mid, p in pairs:
            out[mid].setdefault(topic_id, set()).add(p)
    return {mid: {t: frozenset(ps) for t, ps in a.items()} for mid, a in out.items()}
