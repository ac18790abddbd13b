"""Kafka's rules for changing one partition's leader and ISR, as pure functions of its state.

Each function takes the partition's current state (read from etcd just before the
compare-and-swap that writes the result) and returns the next state, None when nothing is to
change, or raises ClusterError with the code Kafka answers. The epochs follow KRaft:

  - a new leader bumps leader_epoch and partition_epoch (followers and clients fence on the
    leader epoch; the leader's AlterPartition fences on the partition epoch);
  - an ISR change alone bumps partition_epoch only;
  - the ISR never becomes empty: when its last live member dies the partition goes offline
    (leader -1) and keeps that ISR, so whichever of those replicas returns first, having every
    committed record, leads again. Only an unclean election (unclean.leader.election.enable)
    may hand leadership to a replica outside the ISR, and then the ISR restarts as that one.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from wire.error_codes import ErrorCode
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import NO_LEADER, PartitionState


def _with_leader(state: PartitionState, leader: int, isr: Sequence[int]) -> PartitionState:
    return replace(state, leader=leader, isr=tuple(isr), leader_epoch=state.leader_epoch + 1,
                   partition_epoch=state.partition_epoch + 1)


def on_broker_change(state: PartitionState, alive: Collection[int], unclean: bool) -> PartitionState | None:
    """What the controller does to a partition after brokers died or came back.

    A dead leader is replaced by the first replica (in replica order) that is in the ISR and
    alive; dead followers leave the ISR; an offline partition gets back the first returning
    ISR member, or with `unclean` any live replica."""
    live_isr = [b for b in state.isr if b in alive]
    if state.leader != NO_LEADER and state.leader in alive:
        if len(live_isr) == len(state.isr):
            return None
        return replace(state, isr=tuple(live_isr), partition_epoch=state.partition_epoch + 1)
    candidates = [b for b in state.replicas if b in live_isr]
    if candidates:
        # ISR kept in replica order with the new leader in it, the dead left out
        return _with_leader(state, candidates[0], [b for b in state.replicas if b in live_isr])
    if unclean:
        live_replicas = [b for b in state.replicas if b in alive]
        if live_replicas:
            return _with_leader(state, live_replicas[0], [live_replicas[0]])
    if state.leader == NO_LEADER:
        return None
    return replace(state, leader=NO_LEADER, leader_epoch=state.leader_epoch + 1,
                   partition_epoch=state.partition_epoch + 1)


def preferred(state: PartitionState, alive: Collection[int]) -> PartitionState:
    """ElectLeaders(PREFERRED): the first replica leads if it is alive and in the ISR."""
    first = state.replicas[0]
    if state.leader == first:
        raise ClusterError(ErrorCode.election_not_needed, "Leader election not needed for topic partition.")
    if first not in alive or first not in state.isr:
        raise ClusterError(ErrorCode.preferred_leader_not_available,
                           f"Failed to elect leader for partition {state.topic}-{state.index} under strategy "
                           f"PreferredReplicaPartitionLeaderElectionStrategy")
    return _with_leader(state, first, state.isr)


def unclean(state: PartitionState, alive: Collection[int]) -> PartitionState:
    """ElectLeaders(UNCLEAN): only for an offline partition; an ISR member if one is alive,
    else any live replica."""
    if state.leader != NO_LEADER:
        raise ClusterError(ErrorCode.election_not_needed, "Leader election not needed for topic partition.")
    elected = on_broker_change(state, alive, unclean=True)
    if elected is None or elected.leader == NO_LEADER:
        raise ClusterError(ErrorCode.eligible_leaders_not_available,
                           f"No live replica of {state.topic}-{state.index} can lead.")
    return elected


def alter_partition(state: PartitionState, requester: int, leader_epoch: int, partition_epoch: int,
                    new_isr: Sequence[int], alive: Collection[int]) -> PartitionState:
    """Kafka's AlterPartition from the partition's leader: checked against the current state,
    applied only if both epochs still match; returns the state with partition_epoch bumped."""
    if leader_epoch != state.leader_epoch:
        # KRaft answers any mismatch so: the sender's view of leadership is not the current one
        raise ClusterError(ErrorCode.fenced_leader_epoch,
                           f"Leader epoch {leader_epoch} of {state.topic}-{state.index} does not match the "
                           f"current {state.leader_epoch}.")
    if requester != state.leader:
        raise ClusterError(ErrorCode.not_leader_or_follower,
                           f"Broker {requester} is not the leader of {state.topic}-{state.index} "
                           f"(the leader is {state.leader}).")
    if partition_epoch != state.partition_epoch:
        raise ClusterError(ErrorCode.invalid_update_version,
                           f"Partition epoch {partition_epoch} does not match the current {state.partition_epoch}.")
    isr = list(dict.fromkeys(new_isr))
    if len(isr) != len(new_isr) or state.leader not in isr or any(b not in state.replicas for b in isr):
        raise ClusterError(ErrorCode.invalid_request,
                           f"The new ISR {list(new_isr)} must hold the leader {state.leader} and only "
                           f"replicas of {list(state.replicas)}, each once.")
    dead = [b for b in isr if b not in alive]
    if dead:
        raise ClusterError(ErrorCode.ineligible_replica, f"The new ISR {isr} holds broker(s) {dead} that are not alive.")
    return replace(state, isr=tuple(isr), partition_epoch=state.partition_epoch + 1)
