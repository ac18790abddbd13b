# twinlog in a container: one broker on port 9092, its data in the volume /var/lib/twinlog.
#
#   docker build -t twinlog .
#   docker run -p 9092:9092 twinlog
#
# Every setting comes from a TWINLOG_<KAFKA_NAME> variable (broker/settings/table.py), e.g.
# -e TWINLOG_STORAGE_MODE=commitlog. Clients connect to the address Metadata advertises,
# TWINLOG_ADVERTISED_HOST_NAME and the port: with testcontainers' GenericContainer bind the same
# port on both sides (with_bind_ports(9092, 9092), or TWINLOG_PORT=P and P:P), or set
# TWINLOG_ADVERTISED_LISTENERS=PLAINTEXT://HOST:MAPPED_PORT; wait for the log line
# "twinlog listening on".
FROM python:3.11-slim

COPY . /src
# gcc builds the record walk (wire/_record_walk.pyx) and leaves with the build: without it the
# walk would run in Python, slower.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && pip install --no-cache-dir /src \
 && apt-get purge -y gcc libc6-dev && apt-get autoremove -y \
 && rm -rf /var/lib/apt/lists/* /src \
 && useradd --system --home-dir /var/lib/twinlog --create-home twinlog

USER twinlog
WORKDIR /var/lib/twinlog
VOLUME /var/lib/twinlog
ENV TWINLOG_HOST_NAME=0.0.0.0 \
    TWINLOG_PORT=9092 \
    TWINLOG_ADVERTISED_HOST_NAME=localhost \
    TWINLOG_LOG_DIRS=/var/lib/twinlog/data
EXPOSE 9092
CMD ["twinlog", "serve"]
