"""A consumer group as it was before a change, to put back if the change's records are not stored.

A heartbeat changes the group in memory first, then writes the records saying so; a member
must never be told of (or act on) a state a restarted coordinator would not load, so a failed
write restores this. Members are kept as objects (their timers stay theirs); what a change
replaces — metadata, current assignment, the group's maps and epochs — is copied.
"""

from __future__ import annotations

from broker.groups.consumer.consumer_group import ConsumerGroup


class GroupSnapshot:
    def __init__(self, group: ConsumerGroup) -> None:
        self._epochs = group.epoch, group.assignment_epoch
        self._members = {mid: (m, m.metadata, m.current) for mid, m in group.members.items()}
        self._targets = dict(group.targets)
        self._topics = dict(group.topics)
        self._holders = dict(group.holders)

    def restore(self, group: ConsumerGroup) -> None:
        for mid, member in group.members.items():
            if mid not in self._members:
                member.cancel_timers()  # added by the change that failed
        group.epoch, group.assignment_epoch = self._epochs
        group.members = {}
        for mid, (member, metadata, current) in self._members.items():
            member.metadata, member.current = metadata, current
            group.members[mid] = member
        group.targets, group.topics, group.holders = dict(self._targets), dict(self._topics), dict(self._holders)
