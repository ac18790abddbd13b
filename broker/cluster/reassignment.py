"""Moving a partition's replicas (AlterPartitionReassignments), as pure functions of its state.

KRaft keeps an ongoing reassignment on the partition record itself, and so do we: the state in
etcd gains `adding` and `removing`, and every step is one compare-and-swap of that one key.

    start     replicas = target + removing     adding   = target - replicas before any reassignment
              leader, ISR, leader epoch kept    removing = current replicas - target
    catch up  the new replicas host the partition and follow the leader from the next image on;
              the leader adds each to the ISR once it holds everything committed (its own rule,
              through AlterPartition)
    complete  in the same write that puts the last adding replica into the ISR (at once when
              nothing is added): replicas = target, removed replicas out of the ISR, adding and
              removing cleared; a leader no longer among the replicas gives way to the first
              target replica in the ISR that is alive; the leader epoch grows when a replica
              goes or the leader changes, so a removed replica is fenced
    cancel    the adding replicas leave the replica list and the ISR; if nobody else is in the
              ISR, only a topic allowing unclean election may go back (to its first replica)

Completion needs the ISR (without the removed) non-empty and holding every adding replica, so
a reassignment never drops the last copy of a committed record. A partition that changes
nothing but its replica order (no adding, no removing) takes the new order at once; a preferred
election then moves leadership to the new first replica.

Each function gets the state just read from etcd and returns the state to write; the partition
epoch grows by one per write, which the caller's write (start, cancel, AlterPartition) does.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from wire.error_codes import ErrorCode
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import NO_LEADER, PartitionState
from broker.cluster.placement import check_assignments


def in_progress(state: PartitionState) -> bool:
    return bool(state.adding or state.removing)


def target_replicas(state: PartitionState) -> tuple[int, ...]:
    """The replicas the partition will have once its reassignment (if any) completes."""
    return tuple(b for b in state.replicas if b not in state.removing)


def start(state: PartitionState, target: Sequence[int], registered: Collection[int],
          allow_replication_factor_change: bool = True) -> PartitionState | None:
    """AlterPartitionReassignments with a replica list; None when it changes nothing.
    Refusals: INVALID_REPLICA_ASSIGNMENT (empty, a broker twice, an unregistered broker),
    INVALID_REPLICATION_FACTOR (a size change the request does not allow)."""
    (target,) = check_assignments([target], set(registered))
    current = len(target_replicas(state))
    if not allow_replication_factor_change and len(target) != current:
        raise ClusterError(ErrorCode.invalid_replication_factor,
                           f"The replication factor is changed from {current} to {len(target)}")
    # Measured from the replicas before any reassignment in progress, so that naming the same
    # target again keeps a replica still catching up in `adding`, where completion waits for it.
    original = set(state.replicas) - set(state.adding)
    removing = tuple(sorted(set(state.replicas) - set(target)))
    adding = tuple(sorted(set(target) - original))
    merged = tuple(target) + removing
    if (merged, adding, removing) == (state.replicas, state.adding, state.removing):
        return None
    grown = replace(state, replicas=merged, adding=adding, removing=removing,
                    partition_epoch=state.partition_epoch + 1)
    return complete_if_ready(grown, registered)


def complete_if_ready(state: PartitionState, alive: Collection[int]) -> PartitionState:
    """`state` as about to be written, completed if its reassignment can be (see the module
    doc); returned unchanged otherwise."""
    if not in_progress(state):
        return state
    isr = tuple(b for b in state.isr if b not in state.removing)
    replicas = target_replicas(state)
    if not isr or not replicas or any(b not in isr for b in state.adding):
        return state
    return _with_replicas(state, replicas, isr, alive, fence=bool(state.removing))


def cancel(state: PartitionState, alive: Collection[int], unclean_allowed: bool) -> PartitionState:
    """AlterPartitionReassignments with a null replica list: back to the replicas before it.
    Refusals: NO_REASSIGNMENT_IN_PROGRESS; INVALID_REPLICA_ASSIGNMENT when only adding replicas
    are in the ISR and the topic does not allow unclean election."""
    if not in_progress(state):
        raise ClusterError(ErrorCode.no_reassignment_in_progress, "No partition reassignment is in progress.")
    replicas = tuple(b for b in state.replicas if b not in state.adding)
    isr = tuple(b for b in state.isr if b not in state.adding)
    if not isr:
        if not unclean_allowed:
            raise ClusterError(ErrorCode.invalid_replica_assignment,
                               f"Unable to revert partition assignment for {state.topic}:{state.index} because "
                               f"it would require an unclean leader election.")
        isr = replicas[:1]
    reverted = _with_replicas(state, replicas, isr, alive, fence=bool(state.adding))
    return replace(reverted, partition_epoch=state.partition_epoch + 1)


def _with_replicas(state: PartitionState, replicas: tuple[int, ...], isr: tuple[int, ...],
                   alive: Collection[int], fence: bool) -> PartitionState:
    """The reassignment ended with these replicas and ISR: keep the leader if it may still lead,
    else elect the first replica in the ISR that is alive (none: offline)."""
    leader = state.leader
    if leader not in isr:  # the ISR lies within the replicas
        leader = next((b for b in replicas if b in isr and b in alive), NO_LEADER)
    bump = 1 if fence or leader != state.leader else 0
    return replace(state, leader=leader, leader_epoch=state.leader_epoch + bump, replicas=replicas, isr=isr,
                   adding=(), removing=())
