"""twinlog's container image (Dockerfile, broker/testing/image.py) and the testcontainers helper
(broker/testing/container.py), on a real Docker engine, in both storage layouts:

- the `twinlog_container` fixture's broker serves confluent-kafka and kafka-python, each reading
  what the other wrote, from the host through the published port; the layout on the
  container's disk is the one TWINLOG_STORAGE_MODE chose; it runs as its own user;
- `docker stop` (SIGTERM) is a clean shutdown: exit code 0 and the layout's clean-stop marker
  on the volume; a new container on that volume serves every record, without recovery;
- a container that cannot start raises ContainerStartError with its log and is removed;
- the pytest plugin's `twinlog_container` fixture in a user's project of its own, and a failing
  test's report carrying the container's log;
- etcd and three brokers in containers on their own network: `docker kill` of a partition's
  leader loses no acknowledged acks=all record, and producing goes on through the new leader;
- `pip install -e '.[testing]'` alone, in a fresh venv: enough to import TwinlogContainer and
  run a user's test with the `twinlog_container` fixture, and none of the test suite's clients
  or Spark come with it;
- the image: Docker's health check turns healthy once the broker answers, and its command fails
  while the broker is stopped (SIGSTOP) and passes again once it runs; the metrics port is
  exposed and serves /metrics; the final image holds no compiler, headers, Cython or setuptools.

The module builds the image of this tree first (starting dockerd and making the base where
needed; seconds when nothing changed). No engine is a failure saying what to install or start.
Every container, network and volume is named after the run and removed at teardown, so this
module runs beside others (pytest-xdist) and after a failure leaves nothing behind.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import time
import urllib.request
import uuid
from importlib import metadata

import docker
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KafkaTopicPartition
from testcontainers.core.config import testcontainers_config

from broker.testing.container import ContainerStartError, TwinlogCluster, TwinlogContainer
from broker.testing.image import build_etcd_image, build_image
from broker.testing.ports import free_port
from compat_tests.helpers.broker_process import ROOT
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

DATA = "/var/lib/twinlog/data"
EXEC_TRIES, EXEC_END = 5, "--end-of-output--"
# Per layout: the file a clean stop leaves (or removes) and the line a start without it logs.
CLEAN_STOP = {
    "segment": (f"{DATA}/.kafka_cleanshutdown", True, "no clean-shutdown marker"),
    "commitlog": (f"{DATA}/commitlog-store/abort", False, "was not closed cleanly"),
}


@pytest.fixture(scope="module")
def twinlog_image() -> str:
    # The reaper (Ryuk) is an image from Docker Hub; every fixture here removes what it made.
    testcontainers_config.ryuk_disabled = True
    return build_image(ROOT)


@pytest.fixture(scope="module")
def etcd_image(twinlog_image) -> str:
    return build_etcd_image()


@pytest.fixture
def twinlog_container_options(twinlog_image, storage_mode) -> dict:
    return {"image": twinlog_image, "storage_mode": storage_mode, "host_port": free_port()}


@pytest.fixture
def volume():
    """A Docker volume of this test's own, removed afterwards."""
    client = docker.from_env()
    made = client.volumes.create(f"twinlog-test-{uuid.uuid4().hex[:10]}")
    yield made.name
    made.remove(force=True)
    client.close()


def test_two_clients_round_trip_through_the_container(twinlog_container, storage_mode):
    topic = unique_topic("container")
    twinlog_container.create_topic(topic, partitions=2)
    bootstrap = twinlog_container.get_bootstrap_server()
    from_confluent = [(f"k{i}".encode(), f"confluent {i}".encode()) for i in range(50)]
    from_kafka_python = [(f"k{i}".encode(), f"kafka-python {i}".encode()) for i in range(50)]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for key, value in from_confluent:
        producer.produce(topic, value, key=key, partition=0)
    assert producer.flush(30) == 0
    kp_producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for key, value in from_kafka_python:
        kp_producer.send(topic, value, key=key, partition=1).get(timeout=30)
    kp_producer.close()

    assert _read_with_kafka_python(bootstrap, topic, 0, len(from_confluent)) == from_confluent
    assert _read_with_confluent(bootstrap, topic, 1, len(from_kafka_python)) == from_kafka_python

    listing = _output(twinlog_container, f"ls {DATA}").split()
    if storage_mode == "commitlog":
        assert "commitlog-store" in listing and f"{topic}-0" not in listing, listing
    else:
        assert f"{topic}-0" in listing and "commitlog-store" not in listing, listing
    assert _output(twinlog_container, "id -un").strip() == "twinlog"


def _output(container: TwinlogContainer, command: str) -> str:
    """What a shell command printed in the container. docker-py's exec_run now and then hands
    back an empty output for a command that printed (docker/docker-py#2042, #3332; seen here
    under a loaded make test), so the command ends with a marker line and runs again until the
    marker comes back."""
    for _ in range(EXEC_TRIES):
        out = container.exec(["sh", "-c", f"{command}; echo {EXEC_END}"]).output.decode()
        if out.endswith(f"{EXEC_END}\n"):
            return out[:-len(EXEC_END) - 1]
    raise AssertionError(f"no whole output of {command!r} in {EXEC_TRIES} tries")


def test_docker_stop_is_a_clean_shutdown_and_the_volume_keeps_the_data(twinlog_image, storage_mode, volume):
    topic = unique_topic("restart")
    records = [f"record {i}".encode() for i in range(300)]
    marker, present_after_clean_stop, recovery_line = CLEAN_STOP[storage_mode]
    first = TwinlogContainer(twinlog_image, storage_mode, volume=volume, host_port=free_port())
    with first:
        first.create_topic(topic)
        producer = Producer({"bootstrap.servers": first.get_bootstrap_server(), "acks": "all"})
        for value in records:
            producer.produce(topic, value)
        assert producer.flush(30) == 0
        del producer
        assert first.docker_stop(timeout=30) == 0, first.log_tail()  # 137 would be SIGKILL after the grace
        assert "broker stopped cleanly" in first.logs(), first.log_tail()
        assert _exists_in(first, marker) is present_after_clean_stop, first.log_tail()

    with TwinlogContainer(twinlog_image, storage_mode, volume=volume, host_port=free_port()) as second:
        assert [v for _, v in _read_with_kafka_python(second.get_bootstrap_server(), topic, 0,
                                                         len(records))] == records
        assert recovery_line not in second.logs(), second.log_tail()


def test_a_container_that_cannot_start_says_why_and_is_removed(twinlog_image):
    name = f"twinlog-test-{uuid.uuid4().hex[:10]}"
    container = TwinlogContainer(twinlog_image, env={"TWINLOG_NUM_PARTITIONS": "zero"}, name=name,
                                 host_port=free_port(), start_timeout=30)
    with pytest.raises(ContainerStartError) as failure:
        with container:
            pass
    assert "exited during start-up" in str(failure.value) and "num.partitions" in str(failure.value)
    client = docker.from_env()
    try:
        assert client.containers.list(all=True, filters={"name": name}) == []
    finally:
        client.close()


def test_a_cluster_in_containers_survives_docker_kill_of_the_leader(twinlog_image, etcd_image, storage_mode):
    topic = unique_topic("failover")
    # A killed container's address stops answering rather than refusing: its etcd lease lapses,
    # so a short session keeps the test short.
    with TwinlogCluster(twinlog_image, etcd_image, storage_mode=storage_mode,
                        env={"TWINLOG_BROKER_SESSION_TIMEOUT_MS": "4000"}) as cluster:
        cluster.create_topic(topic, configs={"min.insync.replicas": "2"})
        producer = Producer({"bootstrap.servers": cluster.get_bootstrap_server(), "acks": "all",
                             "enable.idempotence": True})
        acked: list[bytes] = []
        failed: list[str] = []

        def delivered(error, message):
            if error is None:
                acked.append(message.value())
            else:
                failed.append(str(error))

        for i in range(100):
            producer.produce(topic, f"before {i}".encode(), callback=delivered)
        assert producer.flush(30) == 0 and not failed, failed

        old_leader = cluster.leader_id(topic, 0)
        cluster.broker(old_leader).kill()
        for i in range(100):
            producer.produce(topic, f"after {i}".encode(), callback=delivered)
        assert producer.flush(90) == 0 and not failed, failed
        del producer

        survivors = [b for b in cluster.brokers if b is not cluster.broker(old_leader)]
        new_leader = cluster.leader_id(topic, 0, via=survivors[0])
        assert new_leader != old_leader
        bootstrap = ",".join(b.get_bootstrap_server() for b in survivors)
        read = [v for _, v in _read_with_kafka_python(bootstrap, topic, 0, len(acked))]
        assert read == [f"before {i}".encode() for i in range(100)] + [f"after {i}".encode() for i in range(100)]


USER_TESTS = '''
import pytest

@pytest.fixture
def twinlog_container_options():
    return {"image": "IMAGE", "storage_mode": "commitlog"}

def test_passes(twinlog_container):
    twinlog_container.create_topic("t")
    assert twinlog_container.storage_mode == "commitlog"

def test_fails(twinlog_container):
    assert twinlog_container.get_bootstrap_server() == "nowhere:1"
'''


def test_the_container_fixture_in_a_users_project(twinlog_image, tmp_path):
    (tmp_path / "test_user.py").write_text(USER_TESTS.replace("IMAGE", twinlog_image))
    installed = any(ep.value == "broker.testing.pytest_plugin" for ep in metadata.entry_points(group="pytest11"))
    load = [] if installed else ["-p", "broker.testing.pytest_plugin"]
    run = subprocess.run([sys.executable, "-m", "pytest", *load, "-p", "no:cacheprovider", "-q", "test_user.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=180,
                         env={"PYTHONPATH": str(ROOT), "PATH": os.environ["PATH"], "TESTCONTAINERS_RYUK_DISABLED": "true"})
    out = run.stdout + run.stderr
    assert "1 failed, 1 passed" in out, out
    assert "twinlog container log" in out and "twinlog listening on" in out, out


METRICS_PORT = 9308  # the Dockerfile's TWINLOG_METRICS_PORT and EXPOSE


def _health(container: TwinlogContainer) -> str:
    wrapped = container.get_wrapped_container()
    wrapped.reload()
    return wrapped.attrs["State"]["Health"]["Status"]


def test_the_health_check_follows_the_broker_and_metrics_are_exposed(twinlog_image):
    client = docker.from_env()
    try:
        config = client.images.get(twinlog_image).attrs["Config"]
    finally:
        client.close()
    assert f"{METRICS_PORT}/tcp" in config["ExposedPorts"] and "9092/tcp" in config["ExposedPorts"]
    check = config["Healthcheck"]["Test"]
    assert check[0] == "CMD", check
    with TwinlogContainer(twinlog_image, host_port=free_port()).with_exposed_ports(METRICS_PORT) as broker:
        wait_until(lambda: _health(broker) == "healthy", "the container healthy", timeout=60)
        assert broker.exec(check[1:]).exit_code == 0
        # The broker stops answering, its process alive (from the host: PID 1 of the container
        # ignores a SIGSTOP sent from inside it)
        broker.get_wrapped_container().kill(signal="SIGSTOP")
        try:
            stopped = broker.exec(check[1:])
            assert stopped.exit_code != 0, stopped.output
        finally:
            broker.get_wrapped_container().kill(signal="SIGCONT")
        assert broker.exec(check[1:]).exit_code == 0
        port = broker.get_exposed_port(METRICS_PORT)
        with urllib.request.urlopen(f"http://{broker.host}:{port}/metrics", timeout=10) as reply:
            assert b"kafka_server_replicamanager_partitioncount" in reply.read()


def test_the_final_image_holds_no_build_tools(twinlog_image):
    client = docker.from_env()
    try:
        found = client.containers.run(twinlog_image, remove=True, entrypoint=[
            "python3", "-c", "import shutil, os, importlib.util as u; print([shutil.which('gcc'), shutil.which('cc'), "
            "os.path.exists('/usr/include/python3.11/Python.h'), os.path.exists('/usr/include/stdio.h'), "
            "u.find_spec('Cython'), u.find_spec('setuptools')])"])
    finally:
        client.close()
    assert found.decode().strip() == "[None, None, False, False, None, None]", found


def _copy_of_the_tree(target) -> None:
    """The tree's files as `make image` sends them (git-listed, as on disk), without build output:
    an editable install builds the record walk in place, and must not touch this tree's."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() and not name.startswith(("compat_tests/", "bench/")):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(source.read_bytes())


def test_the_testing_extra_alone_runs_the_container_fixture(twinlog_image, tmp_path):
    tree, venv, project = tmp_path / "twinlog", tmp_path / "venv", tmp_path / "project"
    _copy_of_the_tree(tree)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e",
                                f"{tree}[testing]"], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    absent = subprocess.run([python, "-c", "import importlib.util as u; print([m for m in ('confluent_kafka', "
                             "'kafka', 'aiokafka', 'pyspark', 'pyarrow', 'hypothesis') if u.find_spec(m)])"],
                            capture_output=True, text=True, timeout=60)
    assert absent.stdout.strip() == "[]", absent.stdout + absent.stderr
    project.mkdir()
    (project / "test_user.py").write_text(USER_TESTS.replace("IMAGE", twinlog_image))
    run = subprocess.run([python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_user.py"], cwd=project,
                         capture_output=True, text=True, timeout=180,
                         env={"PATH": os.environ["PATH"], "TESTCONTAINERS_RYUK_DISABLED": "true"})
    out = run.stdout + run.stderr
    assert "1 failed, 1 passed" in out, out
    assert "twinlog container log" in out and "twinlog listening on" in out, out


def _exists_in(container: TwinlogContainer, path: str) -> bool:
    """Whether `path` exists in the (possibly stopped) container, read with `docker cp`."""
    try:
        stream, _ = container.get_wrapped_container().get_archive(path)
    except docker.errors.NotFound:
        return False
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        return bool(tar.getnames())


def _read_with_kafka_python(bootstrap: str, topic: str, partition: int, count: int,
                            timeout: float = 60.0) -> list[tuple[bytes | None, bytes | None]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), enable_auto_commit=False,
                             auto_offset_reset="earliest")
    consumer.assign([KafkaTopicPartition(topic, partition)])
    read: list[tuple[bytes | None, bytes | None]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(read) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                read.extend((r.key, r.value) for r in batch)
    finally:
        consumer.close()
    return read


def _read_with_confluent(bootstrap: str, topic: str, partition: int, count: int,
                         timeout: float = 60.0) -> list[tuple[bytes | None, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    read: list[tuple[bytes | None, bytes | None]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                read.append((message.key(), message.value()))
    finally:
        consumer.close()
    return read
