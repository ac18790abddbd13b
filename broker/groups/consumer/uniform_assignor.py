"""The `uniform` server-side assignor (the default): balanced and sticky.

Kafka's UniformAssignor spreads partitions so each member's count differs by at most one
when members subscribe to the same topics, moving as few partitions as it can. Ours, in
three passes over (topic, partition) pairs:

1. keep: each member keeps the partitions of its current target that still exist and that
   it still subscribes to, up to its fair share (partitions it can take / members, rounded
   up), so a newcomer's share comes from those above it;
2. fill: every partition nobody kept goes to the least-loaded member subscribed to it, the
   partitions with the fewest candidates first (they have the least choice);
3. balance: while some member holds two more partitions than a member that could take one
   of them, one moves.

With identical subscriptions the result is balanced (max - min <= 1); with different ones,
no single move can make it more even. Ties break by member id, so the result is a function
of the input.
"""

from __future__ import annotations

import math
import uuid
from typing import Mapping

from broker.groups.consumer.assignor_spec import MemberSpec
from broker.groups.consumer.topic_partitions import Assignment
from broker.groups.consumer import topic_partitions as tp

NAME = "uniform"


def assign(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    candidates: dict[tuple[uuid.UUID, int], list[str]] = {}
    for member, spec in sorted(members.items()):
        for topic in spec.topics:
            for p in range(topics.get(topic, 0)):
                candidates.setdefault((topic, p), []).append(member)
    held: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in members}
    owner: dict[tuple[uuid.UUID, int], str] = {}
    _keep(members, candidates, held, owner)
    _fill(candidates, held, owner)
    _balance(candidates, held, owner)
    return {m: tp.of(pairs) for m, pairs in held.items()}


def _keep(members, candidates, held, owner) -> None:
    reachable = {m: 0 for m in members}
    for subscribers in candidates.values():
        for m in subscribers:
            reachable[m] += 1
    takers = max(1, sum(1 for n in reachable.values() if n))
    for member, spec in sorted(members.items()):
        share = math.ceil(reachable[member] / takers)
        for pair in sorted(tp.pairs(spec.current), key=_order):
            if len(held[member]) >= share:
                break
            if member in candidates.get(pair, ()) and pair not in owner:
                held[member].add(pair)
                owner[pair] = member


def _fill(candidates, held, owner) -> None:
    free = sorted((p for p in candidates if p not in owner), key=lambda p: (len(candidates[p]), _order(p)))
    for pair in free:
        member = min(candidates[pair], key=lambda m: (len(held[m]), m))
        held[member].add(pair)
        owner[pair] = member


def _balance(candidates, held, owner) -> None:
    moved = True
    while moved:
        moved = False
        for giver in sorted(held, key=lambda m: (-len(held[m]), m)):
            for pair in sorted(held[giver], key=_order, reverse=True):
                taker = min(candidates[pair], key=lambda m: (len(held[m]), m))
                if len(held[taker]) + 2 <= len(held[giver]):
                    held[giver].discard(pair)
                    held[taker].add(pair)
                    owner[pair] = taker
                    moved = True
                    break
            if moved:
                break


def _order(pair: tuple[uuid.UUID, int]) -> tuple[str, int]:
    return str(pair[0]), pair[1]
