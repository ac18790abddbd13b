"""Stand-in for kafka-python's test/service.py, which its sdist does not ship.

test_kafka_python_suite.py copies this file to <suite>/test/service.py before each run.
The integration fixtures only touch it in two ways:

- `ExternalService(host, port)`: the child of a KafkaFixture built with external=True, i.e.
  when KAFKA_URI names a broker that is already running (ours). Nothing to start or stop, no
  log to read: every method is a no-op and `wait_for` reports the pattern as seen, since the
  broker was up before the suite began.
- `SpawnedService`: imported by name for fixtures that launch a real Kafka/ZooKeeper from
  KAFKA_ROOT. We never launch one (the SSL/SASL tests that would are deselected), so using it
  is a harness error and says so instead of failing somewhere obscure.
"""


class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def open(self):
        pass

    def start(self):
        pass

    def stop(self):
        pass

    def close(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, args=None, env=None):
        raise RuntimeError(
            "twinlog's compat harness runs kafka-python's suite against an external broker "
            "(KAFKA_URI); a test tried to spawn a Kafka/ZooKeeper process: " + repr(args))
