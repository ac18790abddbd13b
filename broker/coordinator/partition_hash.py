"""Which partition of a coordinator's internal topic a key lives in, as every Kafka coordinator
picks it (group ids in `__consumer_offsets`, transactional ids in `__transaction_state`, share
coordinator keys in `__share_group_state`): Java's String.hashCode of the key, then Kafka's
Utils.abs (which maps MIN_VALUE to 0), modulo the partition count. Clients compute nothing of
it, but a broker that picked otherwise would read another broker's records as its own.
"""

from __future__ import annotations

import struct
from functools import lru_cache


# Each request of a group or transaction asks again for the same few ids: computed once per
# id (the hash walks the id a UTF-16 unit at a time).
@lru_cache(maxsize=4096)
def partition_for(key: str, partitions: int) -> int:
    h = 0
    for unit in struct.unpack(f">{len(key.encode('utf-16-be')) // 2}H", key.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return (h & 0x7FFFFFFF) % partitions
