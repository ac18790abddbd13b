"""A share group as its records say it, to put back: after the coordinator worked a change out on
it (the change is the records, which the runtime replays into the group), and when a write whose
records were replayed into it fails with nothing appended (share_group_replay.py, through the
runtime's undo log).

Only what records hold is kept (share_group.py's docstring has the split): what lives in memory
only — a member's `sent`, the group's `topics` — stays as the change left it. Members are kept as
objects, so their session timers stay theirs; what a change replaces or alters in place — their
fields, the group's epochs, targets and share-partitions — is copied.
"""

from __future__ import annotations

from broker.groups.share.share_group import ShareGroup


class ShareGroupSnapshot:
    def __init__(self, group: ShareGroup) -> None:
        self._epochs = group.epoch, group.metadata_hash, group.assignment_epoch
        self._members = {mid: (m, m.rack_id, m.client_id, m.client_host, m.subscribed, m.epoch, m.previous_epoch,
                               m.assignment) for mid, m in group.members.items()}
        self._targets = dict(group.targets)
        self._state_partitions = dict(group.state_partitions)

    def restore(self, group: ShareGroup) -> None:
        group.epoch, group.metadata_hash, group.assignment_epoch = self._epochs
        group.members = {}
        for mid, (member, rack_id, client_id, client_host, subscribed, epoch, previous_epoch,
                  assignment) in self._members.items():
            member.rack_id, member.client_id, member.client_host, member.subscribed = (
                rack_id, client_id, client_host, subscribed)
            member.epoch, member.previous_epoch, member.assignment = epoch, previous_epoch, assignment
            group.members[mid] = member
        group.targets, group.state_partitions = dict(self._targets), dict(self._state_partitions)
