"""The commitlog storage engine: RocketMQ's layout behind the PartitionLog interface.

Every partition appends to one shared commitlog (commitlog.py, units drawn in
unit_format.py); per-partition consume queues (consume_queue.py) and a key index
(index_file.py, key_lookup.py) are derived from it by dispatch (dispatch.py),
with a checkpoint and abort file bounding recovery (checkpoint.py). store.py
holds RocketLogStore, partition_log.py RocketPartitionLog.
"""
