# twinlog in a container: one broker on port 9092, its data in the volume /var/lib/twinlog.
#
#   docker build -t twinlog .            (or `make image`, which also works where Docker Hub is out
#   docker run -p 9092:9092 twinlog       of reach: broker/testing/image.py)
#
# Every setting comes from a TWINLOG_<KAFKA_NAME> variable (broker/settings/table.py), e.g.
# -e TWINLOG_STORAGE_MODE=commitlog. Clients connect to the address Metadata advertises,
# TWINLOG_ADVERTISED_HOST_NAME (localhost) and the port: publish the same port on both sides
# (-p 9092:9092, or TWINLOG_PORT=P with -p P:P), or set TWINLOG_LISTENERS and
# TWINLOG_ADVERTISED_LISTENERS (one listener for the host, one for a docker network:
# broker/testing/container.py does). The broker logs "twinlog listening on" once it serves.
#
# Two stages: the build stage has gcc for the compiled record walk (wire/_record_walk.pyx) and
# pip; the final one has Debian's python3 and the venv the build stage filled, nothing else (no
# compiler, no headers, no pip cache).
#
# Versions are pinned: Python packages by requirements.lock (versions and hashes, generated from
# pyproject.toml: `make lock`), Debian's below by version. Debian's archive keeps only the
# current version of a package, so a Debian point or security release that replaces one makes
# the build fail with "Version ... was not found": move the pin to `apt-cache policy`'s candidate.
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3=3.11.2-1+b1 python3.11=3.11.2-6+deb12u9 \
      python3-venv=3.11.2-1+b1 python3.11-venv=3.11.2-6+deb12u9 \
      python3-dev=3.11.2-1+b1 python3.11-dev=3.11.2-6+deb12u9 \
      gcc=4:12.2.0-3 gcc-12=12.2.0-14+deb12u1 libc6-dev=2.36-9+deb12u14 \
 && rm -rf /var/lib/apt/lists/*
# Debian's python3 refuses system-wide pip installs (PEP 668): the broker lives in a venv.
# The dependencies alone first, from the lock: a change to the sources reuses this layer.
# build-ca.crt is there only where pip must trust a CA of the build machine's own
# (broker/testing/image.py adds it to the build context); it stays in this stage.
# The lock holds the build requirements too (setuptools, Cython): the source is built without
# isolation, offline.
COPY requirements.lock build-ca.cr[t] /src/
RUN python3 -m venv /opt/twinlog \
 && if [ -s /src/build-ca.crt ]; then export PIP_CERT=/src/build-ca.crt; fi \
 && /opt/twinlog/bin/pip install --no-cache-dir --disable-pip-version-check -q --require-hashes --no-deps \
      -r /src/requirements.lock
# The packages pyproject.toml installs, and what its metadata reads: tests, bench/ and docs
# changing leave the image's layers cached.
COPY pyproject.toml setup.py README.md /src/
COPY wire /src/wire
COPY segment /src/segment
COPY replica /src/replica
COPY broker /src/broker
COPY spark /src/spark
# Then the build requirements leave the venv: the final stage gets no Cython or setuptools.
RUN /opt/twinlog/bin/pip install --no-cache-dir --disable-pip-version-check -q --no-deps --no-build-isolation /src \
 && /opt/twinlog/bin/pip uninstall --disable-pip-version-check -q -y cython setuptools \
 && /opt/twinlog/bin/python -c 'import wire._record_walk, broker.cli.main'

FROM ${BASE}
# The interpreter the build stage's venv was made with, at the same version.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3=3.11.2-1+b1 python3.11=3.11.2-6+deb12u9 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /var/lib/twinlog --create-home twinlog
COPY --from=build /opt/twinlog /opt/twinlog

USER twinlog
WORKDIR /var/lib/twinlog
VOLUME /var/lib/twinlog
ENV PATH=/opt/twinlog/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    TWINLOG_HOST_NAME=0.0.0.0 \
    TWINLOG_PORT=9092 \
    TWINLOG_ADVERTISED_HOST_NAME=localhost \
    TWINLOG_LOG_DIRS=/var/lib/twinlog/data \
    TWINLOG_METRICS_PORT=9308
# 9092: Kafka clients; 9308: Prometheus /metrics, /health and the console.
EXPOSE 9092 9308
# Healthy while the broker answers ApiVersions on its own port (TWINLOG_PORT: with
# TWINLOG_LISTENERS set, keep it the port of a PLAINTEXT or SASL_PLAINTEXT listener), so a
# wedged event loop shows too, not only a dead process.
HEALTHCHECK --interval=5s --timeout=4s --start-period=60s --retries=3 \
  CMD ["python3", "-c", "import os; from broker.testing.twinlog_broker import ask_api_versions; ask_api_versions('127.0.0.1', int(os.environ['TWINLOG_PORT']), timeout=3.0)"]
# SIGTERM (docker stop) is a clean shutdown: logs flushed, the clean-shutdown marker written.
STOPSIGNAL SIGTERM
CMD ["twinlog", "serve"]
