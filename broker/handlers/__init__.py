"""One module per API; each exposes `async def handle(broker, header, request)`."""

from . import (
    api_versions,
    create_partitions,
    create_topics,
    delete_topics,
    describe_cluster,
    describe_configs,
    fetch,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)

HANDLERS = {
    0: produce.handle,
    1: fetch.handle,
    2: list_offsets.handle,
    3: metadata.handle,
    18: api_versions.handle,
    19: create_topics.handle,
    20: delete_topics.handle,
    22: init_producer_id.handle,
    32: describe_configs.handle,
    37: create_partitions.handle,
    60: describe_cluster.handle,
}
