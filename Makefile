# twinlog: `make serve` runs a broker on 127.0.0.1:9092 with data in ./data (PORT=, DATA= change
# them); `make test` installs everything the tests need and runs the whole suite;
# `make test-unit` runs the unit tests beside each package (wire, segment, replica, broker).
PYTHON ?= python3
PORT ?= 9092
DATA ?= ./data
VENV := .venv
BIN := $(VENV)/bin
# One stamp per set of dependencies: the broker alone (base), + the unit extra, + the test extra,
# + the bench extra.
# Each reinstalls (rebuilding the compiled record walk) when setup.py or the .pyx change.
STAMP := $(VENV)/.installed
UNIT_STAMP := $(VENV)/.installed-unit
TEST_STAMP := $(VENV)/.installed-test
BENCH_STAMP := $(VENV)/.installed-bench
SOURCES := pyproject.toml setup.py wire/_record_walk.pyx
# Every Python process started from here (pytest, its workers, each broker a test starts) keeps
# the repo's bytecode caches, even where the environment turns them off (PYTHONDONTWRITEBYTECODE=1,
# as on the machine CI runs on): without them each broker process compiled ~430 modules again
# (0.35 s of CPU a start), and compat_tests/admin took 176 s of CPU, 134 s with them.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: serve serve-secure cluster image test test-unit test-deps bench bench-full bench-broker bench-breadth spark-demo spark-demo-cluster clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(SOURCES) | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(UNIT_STAMP): $(SOURCES) | $(BIN)/python
	$(BIN)/pip install -q -e '.[unit]'
	touch $@ $(STAMP)

$(TEST_STAMP): $(SOURCES) | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(UNIT_STAMP) $(STAMP)

$(BENCH_STAMP): $(SOURCES) | $(BIN)/python
	$(BIN)/pip install -q -e '.[bench]'
	touch $@ $(STAMP)

serve: $(STAMP)
	$(BIN)/twinlog serve --data-dir $(DATA) --port $(PORT)

# SASL_SSL only, on 127.0.0.1:$(SECURE_PORT): a new self-signed CA and one SCRAM user (admin, a
# random password) made at start-up; prints the client settings (broker/cli/serve_secure.py).
SECURE_PORT ?= 9093
serve-secure: $(STAMP)
	$(BIN)/python -m broker.cli.serve_secure --data-dir $(DATA) --port $(SECURE_PORT)

# etcd (Debian's etcd-server) and three brokers on ports 9092-9094, data in ./data/cluster;
# Ctrl-C stops them cleanly.
cluster: $(STAMP)
	@command -v etcd >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; }
	$(BIN)/python -m broker.cli.local_cluster --data-dir ./data/cluster

# The container image of this tree, tagged twinlog (Dockerfile): starts dockerd where none runs
# and, where Docker Hub is out of reach, makes the Debian base with debootstrap (broker/testing/image.py).
# About 3 minutes the first time; seconds when nothing changed.
image: $(STAMP)
	@command -v dockerd >/dev/null && command -v debootstrap >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null; }
	$(BIN)/python -m broker.testing.image --tag twinlog

# requirements.lock, the image's pinned Python packages (with hashes), from pyproject.toml's
# dependencies and build requirements: run after changing either. pip-tools in a venv of its own.
LOCK_VENV := build/pip-tools
.PHONY: lock
lock:
	@test -x $(LOCK_VENV)/bin/pip-compile || { python3 -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/pip install -q pip-tools; }
	$(LOCK_VENV)/bin/pip-compile -q --generate-hashes --all-build-deps --strip-extras --allow-unsafe \
	  --no-emit-index-url --no-emit-find-links -o requirements.lock pyproject.toml

# System packages (kcat, docker.io), the Java client jars, kafka-python's own test suite and the
# container tests' images.
test-deps: $(TEST_STAMP)
	bash compat_tests/install_deps.sh

# Test modules run on TEST_WORKERS pytest-xdist workers, each module whole on one worker (its
# module-scoped broker started once). The tests mostly wait on brokers, clients and disks, so more
# workers than cores pays: on 2 cores 4 workers beat 3, and 5 (15-18 min, two runs) beat 4 (21 min)
# once the suite spent less CPU (compat_tests/FINDINGS.md, "make test").
TEST_WORKERS ?= 5
UNIT_TESTS := wire/tests segment/tests replica broker/tests broker/cluster/tests broker/coordinator/tests broker/groups/tests broker/txn/tests

# The fault suite's long scenarios (compat_tests/faults/test_fault_suite.py, marker faults_full) are
# deselected here; `make test-faults` runs the whole fault suite, one scenario at a time (each
# is etcd and three brokers in network namespaces; needs root): about 15 minutes. The run ends with
# its 30 slowest steps (a module's broker start is its first test's setup), where wall time goes.
test: $(TEST_STAMP) test-deps typecheck
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile -m "not faults_full" --durations=30

# The request path's types: dispatch, every handler, the transport and the modules around them,
# strictly, against the Protocols of the services they are given (pyproject.toml [tool.mypy];
# broker/api/context.py).
.PHONY: typecheck
typecheck: $(TEST_STAMP)
	$(BIN)/mypy

.PHONY: test-faults
test-faults: $(TEST_STAMP) test-deps
	$(BIN)/pytest -s compat_tests/faults/test_fault_suite.py

# The quick answer: the unit extra only (pyproject.toml: no install_deps.sh, clients, jars, images
# or etcd), on two workers, each taking the next test when it is free. It leaves the tests marked
# `system` (a real etcd, a tmpfs mount, a child process) to make test and runs a tenth of each
# Hypothesis property's examples (conftest.py). Their files go to /dev/shm where it has a GiB
# free: the tests fsync about 15,000 times, which on a disk is wall time that no unit test
# asserts on (those that count fsyncs count the calls). A passing test's directory is removed
# when it ends, so they hold under 100 MB there. docs/testing.md has the times.
UNIT_WORKERS ?= 2
UNIT_TMPDIR = $(shell df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 > 1048576 { print "/dev/shm" }')
test-unit: $(UNIT_STAMP)
	$(if $(UNIT_TMPDIR),TMPDIR=$(UNIT_TMPDIR)) $(BIN)/pytest -n $(UNIT_WORKERS) --dist worksteal \
	  -o tmp_path_retention_policy=failed -m "not system" --hypothesis-profile=unit $(UNIT_TESTS)

# The mode comparison (bench/compare.py): segment vs commitlog, the machine's limits, Tansu.
# --quick takes about 3 minutes; bench-full runs the whole matrix (about 35 minutes), then
# bench-layout-move, bench-disk and the restart time against the data held (bench/restart.py:
# both layouts, 50k-5M batches, clean and kill -9; about 25 minutes on a quiet machine).
bench: $(BENCH_STAMP)
	$(BIN)/python bench/compare.py --quick

bench-full: $(BENCH_STAMP)
	$(BIN)/python bench/compare.py --full
	$(BIN)/python bench/layout_move.py
	$(BIN)/python bench/disk_bound.py
	$(BIN)/python -m bench.restart

# Live layout moves (bench/layout_move.py): AlterReplicaLogDirs of a 1 GB partition each way, its
# MB/s, and acks=all produce p50/p99 (1 KB, 2,000/s) before and during the move; about 6 minutes.
.PHONY: bench-layout-move
bench-layout-move: $(BENCH_STAMP)
	$(BIN)/python bench/layout_move.py

# IOs per record of each layout on a loop device of its own, and msg/s under a write-IOPS cap
# (bench/disk_bound.py; needs root for losetup, mount and the blkio throttle; about 40 minutes).
.PHONY: bench-disk
bench-disk: $(BENCH_STAMP)
	$(BIN)/python bench/disk_bound.py

# One broker, one configuration, in depth (bench/run.py: CPU per phase, batch sizes, page cache).
bench-broker: $(BENCH_STAMP)
	$(BIN)/python bench/run.py

# Replicated cells (bench/replicated.py): RF=3 acks=all against RF=1 acks=1 on etcd + 3 brokers,
# and leader failover (SIGKILL to the first acks=all ack) at 9 s and 2 s sessions; about 7 minutes.
.PHONY: bench-replicated
bench-replicated: $(BENCH_STAMP)
	$(BIN)/python bench/replicated.py --quick

# Compaction (bench/compaction.py): the cleaner's MB/s per layout over 1 GB of keyed 1 KB records,
# and produce p99 (acks=1, 1 KB, 2,000/s) with the cleaner idle and cleaning; about 5 minutes.
.PHONY: bench-compaction
bench-compaction: $(BENCH_STAMP)
	$(BIN)/python bench/compaction.py

# Transactions (bench/transactions.py): transactional produce (a commit every 100 / 1,000 / 10,000
# records) against idempotent, 1 and 64 partitions, and read_committed against read_uncommitted
# with 10% of transactions aborted, both layouts; about 6 minutes.
.PHONY: bench-transactions
bench-transactions: $(BENCH_STAMP)
	$(BIN)/python bench/transactions.py

# The p99 targets in each of N consecutive runs (bench/latency_runs.py): make bench's two latency
# cells per layout, each beside the mock broker's p99 at the same load; about 40 s a run.
.PHONY: bench-latency
bench-latency: $(BENCH_STAMP)
	$(BIN)/python bench/latency_runs.py --runs 5

# Broker CPU per small Produce request against a bare asyncio server's (bench/request_cost.py):
# the per-request cost that sets the rate of one-Produce-per-partition clients; under a minute.
.PHONY: bench-request-cost
bench-request-cost: $(BENCH_STAMP)
	$(BIN)/python bench/request_cost.py

# Partition breadth (bench/partition_breadth.py): what 50,000 partitions cost one broker in each
# layout: creation, idle CPU, memory per partition, Metadata for all, restart. About 15 minutes.
bench-breadth: $(BENCH_STAMP)
	$(BIN)/python bench/partition_breadth.py

# Orders -> twinlog -> Spark Structured Streaming (windows, watermark) -> parquet + twinlog topic,
# on local Spark against a broker started for the run (needs Java 17; see spark/demo.py).
spark-demo: $(TEST_STAMP)
	$(BIN)/python -m spark.demo

# The same job on etcd + three brokers (RF 3, min.insync.replicas 2) with the leaders of an input
# and of the output partition SIGKILLed mid-stream; checks window contents (spark/demo_cluster.py).
spark-demo-cluster: $(TEST_STAMP)
	$(BIN)/python -m spark.demo_cluster

clean:
	rm -rf $(VENV) data compat_tests/.deps
