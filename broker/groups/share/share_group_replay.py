"""Rebuilding share groups from `__consumer_offsets`: records of types 11 and 15, in log order.

Like the consumer groups' replay (consumer/replay.py), `replaying` sits in the stream of records a
load reads (group_loading.py): it applies the share group records as they pass and hands every
other record on. A replayed group has no members (they are not written; they rejoin under their
own ids), so it is Empty: listed, described, its offsets altered or deleted, and deletable.
"""

from __future__ import annotations

import logging
from typing import Iterable, Iterator

from broker.groups.offsets_store import StoredMarker, StoredRecord, applying
from broker.groups.share import share_group_records as rec
from broker.groups.share.share_group import ShareGroup

log = logging.getLogger(__name__)


def replaying(groups: dict[str, ShareGroup],
              records: Iterable[StoredRecord | StoredMarker]) -> Iterator[StoredRecord | StoredMarker]:
    """`groups`: the share coordinator's groups, which the share group records change."""
    touched: set[str] = set()
    yield from applying(records, lambda key: rec.key_type(key) in rec.TYPES,
                        lambda record: touched.add(_apply(groups, record)), "share group")
    if touched:
        log.info("loaded %d share groups", sum(1 for g in touched if g in groups))


def _apply(groups: dict[str, ShareGroup], record: StoredRecord) -> str:
    record_type, group_id = rec.decode_key(record.key)
    if record_type == rec.GROUP_METADATA and record.value is None:
        groups.pop(group_id, None)  # the group was deleted
        return group_id
    group = groups.get(group_id)
    if group is None:
        group = groups[group_id] = ShareGroup(group_id)
    if record_type == rec.GROUP_METADATA:
        # The assignment is computed again when a member joins, at the next epoch.
        group.epoch = group.assignment_epoch = rec.decode_group_metadata(record.value)
    else:
        group.state_partitions = {} if record.value is None else rec.decode_state_partitions(record.value)
    return group_id
