"""pytest plugin loaded (-p metadata_race_fix) into the kafka-python suite's own pytest run: a
fix for a race in kafka-python 3.0.12's client (the newest on PyPI), not in the broker.

The race: `ClusterMetadata.set_topics` (kafka/cluster.py; its own comment says "TODO: handle
future when old metadata request is currently in-flight") marks the metadata for an update, but
if a Metadata request built from the old topic set is in flight, its answer clears the mark and
the refresh loop sleeps metadata.max.age.ms (5 minutes). A consumer that subscribes while its
bootstrap request is in flight then never learns its topic's partitions and reads nothing. Seen
in kafka-python's suite against twinlog, with the client's own log (2026-12-06):

    13:13:36.865 kafka.cluster  Sending metadata request MetadataRequest(topics=[] ...)
    13:13:36.869 kafka.consumer.subscription_state  Updating subscribed topics to: ['LEdcB']
    13:13:36.882 kafka.cluster  Updated metadata: ClusterMetadata(brokers: 1, topics: 0 ...)
    13:13:36.883 kafka.cluster  Sleeping 299.99 for next Metadata refresh

and the test's 30 s poll got nothing. The same happens against Kafka: the window is the
Metadata round trip, wider on a loaded machine. Java's client avoids it by counting update
requests (Metadata.requestVersion) and keeping the update wanted when the answer is for an older
one; this does the same with the topic set the request was built from. compat_tests/
test_kafka_python_metadata_race.py shows the consumer reading nothing without it.
"""

from kafka.cluster import ClusterMetadata

_ORIGINAL_REQUEST = ClusterMetadata.metadata_request
_ORIGINAL_UPDATE = ClusterMetadata.update_metadata


def _asked_for(cluster) -> tuple:
    return frozenset(cluster._topics), cluster.need_all_topic_metadata


def _metadata_request(self):
    self._topics_requested = _asked_for(self)
    return _ORIGINAL_REQUEST(self)


def _update_metadata(self, metadata):
    requested = getattr(self, "_topics_requested", None)
    _ORIGINAL_UPDATE(self, metadata)
    if requested is not None and requested != _asked_for(self):
        self._need_update = True  # the topics changed while this answer was in flight: ask again


def apply() -> None:
    ClusterMetadata.metadata_request = _metadata_request
    ClusterMetadata.update_metadata = _update_metadata


def undo() -> None:
    ClusterMetadata.metadata_request = _ORIGINAL_REQUEST
    ClusterMetadata.update_metadata = _ORIGINAL_UPDATE


def pytest_configure(config):
    apply()
