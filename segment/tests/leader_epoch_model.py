"""The leader-epoch cache's list model: Kafka's OffsetForLeaderEpoch answer over a plain list of
(epoch, start) pairs, by brute force."""

from __future__ import annotations


def model_end_offset_for(model: list[tuple[int, int]], epoch: int, leo: int) -> tuple[int, int]:
    """Kafka's OffsetForLeaderEpoch answer, by brute force over the model."""
    if epoch == -1 or not model:
        return -1, -1
    if model[-1][0] == epoch:
        return epoch, leo
    above = [(e, s) for e, s in model if e > epoch]
    if not above:
        return -1, -1
    at_or_below = [e for e, _ in model if e <= epoch]
    return (at_or_below[-1] if at_or_below else epoch), above[0][1]
