#!/bin/sh
# Stand-in for Kafka's `kafka-storage.sh format -t ID -c PROPS [--add-scram SPEC]`, as
# kafka-python's KafkaFixture calls it before starting a SCRAM broker. Kafka writes the SCRAM
# credential into the bootstrap metadata; twinlog takes the same SPEC at start-up
# (--sasl-scram-user), so we keep it next to the properties for the stand-in SpawnedService.
set -eu
props=""; scram=""
while [ $# -gt 0 ]; do
  case "$1" in
    -c) props="$2"; shift 2 ;;
    --add-scram) scram="$2"; shift 2 ;;
    *) shift ;;
  esac
done
[ -n "$props" ] || { echo "kafka-storage.sh stand-in: no -c PROPS" >&2; exit 2; }
: > "$props.add-scram"
[ -z "$scram" ] || printf '%s\n' "$scram" > "$props.add-scram"
