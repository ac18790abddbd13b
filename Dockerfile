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
# pip; the final one has Debian's python3 and the venv the build stage filled, nothing else.
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
# Debian's python3 refuses system-wide pip installs (PEP 668): the broker lives in a venv.
# The dependencies alone first, from pyproject.toml: a change to the sources reuses this layer.
# build-ca.crt is there only where pip must trust a CA of the build machine's own
# (broker/testing/image.py adds it to the build context); it stays in this stage.
COPY pyproject.toml build-ca.cr[t] /src/
# The build requirements come too (the source is built without isolation, offline); wheel
# because the venv's setuptools (Debian's 66) has no bdist_wheel of its own.
RUN python3 -m venv /opt/twinlog \
 && if [ -s /src/build-ca.crt ]; then export PIP_CERT=/src/build-ca.crt; fi \
 && python3 -c 'import tomllib; t = tomllib.load(open("/src/pyproject.toml", "rb")); \
                print("\n".join(t["project"]["dependencies"] + t["build-system"]["requires"]))' \
      > /src/requirements.txt \
 && /opt/twinlog/bin/pip install --no-cache-dir --disable-pip-version-check -q -r /src/requirements.txt wheel
# The packages pyproject.toml installs, and what its metadata reads: tests, bench/ and docs
# changing leave the image's layers cached.
COPY setup.py README.md /src/
COPY wire /src/wire
COPY segment /src/segment
COPY replica /src/replica
COPY broker /src/broker
COPY spark /src/spark
RUN /opt/twinlog/bin/pip install --no-cache-dir --disable-pip-version-check -q --no-deps --no-build-isolation /src \
 && /opt/twinlog/bin/python -c 'import wire._record_walk'

FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
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
    TWINLOG_LOG_DIRS=/var/lib/twinlog/data
EXPOSE 9092
# SIGTERM (docker stop) is a clean shutdown: logs flushed, the clean-shutdown marker written.
STOPSIGNAL SIGTERM
CMD ["twinlog", "serve"]
