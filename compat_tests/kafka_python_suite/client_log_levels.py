"""pytest plugin loaded (-p client_log_levels) into the kafka-python suite's own pytest run.

The harness captures the suite's logs at DEBUG, so a failed test's report shows what the
client's metadata, consumer and coordinator code decided (a consumer that read nothing in its
poll window: did it get partitions assigned, a position, a fetch answer?). The loggers that write
a line per request, response or metric stay at WARNING: they would make a run slower and its
output hundreds of kilobytes per test for nothing these questions need.
"""

import logging

PER_REQUEST_LOGGERS = ("kafka.metrics", "kafka.protocol", "kafka.net", "kafka.producer", "kafka.admin")


def pytest_configure(config):
    for name in PER_REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
