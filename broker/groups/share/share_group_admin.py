"""A share group's admin side (Kafka's GroupCoordinatorService for KIP-932): its start offsets
described, altered and deleted, and the group itself deleted, each through the share coordinator's
state (state_persister.py: in-process, or ReadShareGroupStateSummary / InitializeShareGroupState /
DeleteShareGroupState to the coordinator of each share-partition).

Which share-partitions a group has state for: those its records in `__consumer_offsets` say may
have state (share_group_records.py, as Kafka's ShareGroupStatePartitionMetadata: every one it was
assigned or an admin altered, not deleted since); the share coordinator is asked about these only,
and those with a state are kept. A group exists while it is known here: a live one, or one its
records brought back after a restart or a coordinator move (share_group_replay.py). Nothing is
asked while `__share_group_state` does not exist (no group has state then), so an admin call on a
broker without share groups never creates it.

As Kafka's: altering or deleting offsets needs the group empty (NON_EMPTY_GROUP), an id taken by
a classic or consumer group is GROUP_ID_NOT_FOUND, an alter writes each start offset as a new
state at the next state epoch (InitializeShareGroupState: nothing in flight), and an alter of an
unknown group creates it empty. The share-partitions this broker has loaded for altered or
deleted state are dropped, so their next use reads the new state.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import NamedTuple

from wire.error_codes import ErrorCode
from broker.groups.share import state_log
from broker.groups.share.share_group import ChangeRefused, ShareGroup
from broker.groups.share.state_persister import ShareStateUnavailable
from broker.topic_names import INTERNAL_TOPICS

NO_TOPIC_ID = uuid.UUID(int=0)
UNINITIALIZED = -1  # a start offset or lag with no state behind it, as Kafka answers
DEFAULT_LEADER_EPOCH = 0  # the leader epoch Kafka answers for a share-partition without state


class PartitionOffset(NamedTuple):
    partition: int
    start_offset: int = UNINITIALIZED
    leader_epoch: int = DEFAULT_LEADER_EPOCH
    lag: int = UNINITIALIZED
    error: ErrorCode = ErrorCode.none
    message: str | None = None


class TopicResult(NamedTuple):
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionOffset]  # Describe's and Alter's answers per partition
    error: ErrorCode = ErrorCode.none  # Delete's answer per topic
    message: str | None = None


class Refused(NamedTuple):
    error: ErrorCode
    message: str


class ShareGroupAdmin:
    def __init__(self, share_groups, persister, store, topics, end_offsets, other_group_kind) -> None:
        """`share_groups`: the ShareGroupCoordinator; `store`: the ShareStateStore (does the state
        topic exist); `topics`: the broker's topic table; `end_offsets`: PartitionEndOffsets (the
        leaders' end offsets, for the lag); `other_group_kind(group_id)`: "classic", "consumer" or "streams"
        when such a group holds the id."""
        self._share_groups = share_groups
        self._persister = persister
        self._store = store
        self._topics = topics
        self._end_offsets = end_offsets
        self._other_group_kind = other_group_kind

    async def describe(self, group_id: str, wanted: list[tuple[str, list[int]]] | None) -> list[TopicResult]:
        """Start offsets (and lag) of the partitions asked for, or of every one with state."""
        if wanted is None:
            found = await self.with_state(group_id)
            described = []
            for topic in self._known_topics():
                had = [(i, s) for (_g, topic_id, i), s in sorted(found.items(), key=lambda kv: kv[0][2])
                       if topic_id == topic.topic_id]
                if had:
                    described.append((topic, had))
            return await self._offsets(described)
        described, absent = [], []
        for name, indexes in wanted:
            topic = self._topics.get(name)
            if topic is None:  # absent data, not an error (Kafka's answer, as OffsetFetch's)
                absent.append(TopicResult(name, NO_TOPIC_ID, [PartitionOffset(i) for i in indexes]))
                continue
            summaries = await asyncio.gather(*(self._summary((group_id, topic.topic_id, i)) for i in indexes))
            described.append((topic, list(zip(indexes, summaries))))
        return await self._offsets(described) + absent

    async def alter(self, group_id: str, wanted: list[tuple[str, list[tuple[int, int]]]]) -> Refused | list[TopicResult]:
        """Each (partition, start offset) written as the share-partition's new state."""
        refused = await self._refusal(group_id, must_exist=False)
        if refused is not None:
            return refused
        refused = await self._note_altered(group_id, wanted)
        if refused is not None:
            return refused
        results = []
        for name, offsets in wanted:
            topic = self._topics.get(name)
            parts = await asyncio.gather(*(self._alter_one(group_id, name, topic, i, start) for i, start in offsets))
            results.append(TopicResult(name, topic.topic_id if topic else NO_TOPIC_ID, list(parts)))
        return results

    async def delete_offsets(self, group_id: str, names: list[str]) -> Refused | list[TopicResult]:
        """Every partition's state of these topics deleted (a topic without any: nothing to do)."""
        refused = await self._refusal(group_id, must_exist=True)
        if refused is not None:
            return refused
        results = []
        for name in names:
            topic = self._topics.get(name)
            if topic is None:
                results.append(TopicResult(name, NO_TOPIC_ID, [], ErrorCode.unknown_topic_or_partition,
                                           f"Topic {name} does not exist."))
                continue
            group = self._share_groups.groups[group_id]
            _name, indexes = group.state_partitions.get(topic.topic_id, (name, frozenset()))
            try:  # deleting a state that is not there is no error
                await self._delete([(group_id, topic.topic_id, i) for i in sorted(indexes)])
            except ShareStateUnavailable as exc:
                results.append(TopicResult(name, topic.topic_id, [], exc.coordinator_error, str(exc)))
                continue
            topic_id = topic.topic_id
            try:
                stored, _ = await self._share_groups.change(
                    group_id, lambda g: g.state_partitions.pop(topic_id, None), must_exist=True)
            except ChangeRefused as exc:
                results.append(TopicResult(name, topic.topic_id, [], exc.error, exc.message))
                continue
            if stored is not ErrorCode.none:  # the state is gone; the group still says it may have some
                results.append(TopicResult(name, topic.topic_id, [], stored,
                                           f"Writing share group {group_id} failed: {stored.name}."))
                continue
            results.append(TopicResult(name, topic.topic_id, []))
        return results

    async def delete_group(self, group_id: str) -> ErrorCode | None:
        """DeleteGroups of a share group: its error (ErrorCode.none: deleted with all its state), or None
        when `group_id` is no share group here (another kind of group may hold it)."""
        groups = self._share_groups.groups
        group = groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return ErrorCode.non_empty_group
        try:
            await self._delete(list(await self.with_state(group_id, raising=True)))
        except ShareStateUnavailable as exc:
            return exc.coordinator_error

        def empty(g: ShareGroup) -> None:  # a member may have joined while the state was deleted
            if g.members:
                raise ChangeRefused(ErrorCode.non_empty_group, f"Share group {group_id} is not empty.")
        try:  # its tombstones' replay deletes it; a failed write leaves it as the log holds it
            stored, _ = await self._share_groups.change(group_id, empty, must_exist=True, deleting=True)
        except ChangeRefused as exc:
            return exc.error
        return stored

    async def with_state(self, group_id: str, raising: bool = False) -> dict[state_log.Key, state_log.StateSummary]:
        """The group's share-partitions that have state, with it. A partition whose state cannot
        be read is left out, or (`raising`) raises ShareStateUnavailable."""
        group = self._share_groups.groups.get(group_id)
        if self._store.topic() is None or group is None:
            return {}
        keys = []
        for topic_id, (_name, indexes) in sorted(group.state_partitions.items()):
            topic = self._topics.get_by_id(topic_id)  # a topic deleted since has no state to ask about
            keys += [(group_id, topic_id, i) for i in sorted(indexes) if topic is not None and i < len(topic.partitions)]
        summaries = await self._summaries(keys, raising)
        return {k: s for k, s in zip(keys, summaries) if s.start_offset >= 0}

    # --- inside -----------------------------------------------------------------------------------

    def _known_topics(self) -> list:
        return [t for t in list(self._topics.topics.values()) if t.name not in INTERNAL_TOPICS]

    async def _refusal(self, group_id: str, must_exist: bool) -> Refused | None:
        if self._other_group_kind(group_id):
            return Refused(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
        group = self._share_groups.groups.get(group_id)
        if group is not None and group.members:
            return Refused(ErrorCode.non_empty_group, f"Share group {group_id} is not empty: its offsets cannot change "
                                              "while it has members.")
        if must_exist and group is None:
            return Refused(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
        return None

    async def _note_altered(self, group_id: str, wanted: list[tuple[str, list[tuple[int, int]]]]) -> Refused | None:
        """The group (created empty if unknown) records the share-partitions about to be altered as
        ones that may have state, before any state is written, as Kafka records them initializing."""
        altered = {}
        for name, offsets in wanted:
            topic = self._topics.get(name)
            if topic is not None:
                indexes = frozenset(i for i, start in offsets if 0 <= i < len(topic.partitions) and start >= 0)
                if indexes:
                    altered[topic.topic_id] = (name, indexes)
        try:  # nothing written when the group knows of them all already
            stored, _ = await self._share_groups.change(group_id, lambda g: g.note_state_partitions(altered))
        except ChangeRefused as exc:
            return Refused(exc.error, exc.message)
        if stored is not ErrorCode.none:
            return Refused(stored, f"Writing share group {group_id} failed: {stored.name}.")
        return None

    async def _summaries(self, keys: list[state_log.Key], raising: bool = True) -> list[state_log.StateSummary]:
        got = await asyncio.gather(*(self._summary(k, raising) for k in keys))
        return list(got)

    async def _summary(self, key: state_log.Key, raising: bool = False) -> state_log.StateSummary:
        """The key's summary; one that cannot be read reads as no state unless `raising`."""
        if self._store.topic() is None:
            return state_log.StateSummary(0, -1, UNINITIALIZED, -1)
        try:
            return await self._persister.read_summary(key)
        except ShareStateUnavailable:
            if raising:
                raise
            return state_log.StateSummary(0, -1, UNINITIALIZED, -1)

    async def _offsets(self, described: list[tuple]) -> list[TopicResult]:
        """Each (topic, [(partition, summary)]) as start offset, leader epoch and lag. The lag is
        Kafka's (GroupCoordinatorService.computeShareGroupLagAndBuildResponse): the end offset
        its leader answers (partition_end_offsets.py) less the start offset and the records past
        it that are done with; -1 without state, or when the leader could not tell. It is not
        held at zero: a start an alter put past the end gives a negative lag, as Kafka's does."""
        wanted = [(topic.name, index) for topic, summaries in described for index, s in summaries
                  if s.start_offset >= 0 and s.delivery_complete_count >= 0]
        ends = await self._end_offsets.latest(wanted) if wanted else {}
        results = []
        for topic, summaries in described:
            parts = []
            for index, s in summaries:
                if s.start_offset < 0:
                    parts.append(PartitionOffset(index))
                    continue
                end = ends.get((topic.name, index))
                lag = UNINITIALIZED if end is None else end - s.start_offset - s.delivery_complete_count
                parts.append(PartitionOffset(index, s.start_offset, s.leader_epoch, lag))
            results.append(TopicResult(topic.name, topic.topic_id, parts))
        return results

    async def _alter_one(self, group_id: str, name: str, topic, index: int, start: int) -> PartitionOffset:
        if topic is None or not 0 <= index < len(topic.partitions):
            return PartitionOffset(index, error=ErrorCode.unknown_topic_or_partition,
                                   message=f"The topic-partition {name}-{index} does not exist.")
        if start < 0:
            return PartitionOffset(index, error=ErrorCode.invalid_request, message=f"Start offset {start} is negative.")
        key = (group_id, topic.topic_id, index)
        try:
            kept = await self._persister.read_summary(key)
            await self._persister.initialize(key, max(kept.state_epoch, 0) + 1, start)
        except ShareStateUnavailable as exc:
            return PartitionOffset(index, error=exc.coordinator_error, message=str(exc))
        self._share_groups.partitions.forget([key])
        return PartitionOffset(index, start)

    async def _delete(self, keys: list[state_log.Key]) -> None:
        """Raises ShareStateUnavailable for the first state that could not be deleted."""
        outcomes = await asyncio.gather(*(self._persister.delete(k) for k in keys), return_exceptions=True)
        self._share_groups.partitions.forget(keys)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
