"""Stand-in for kafka-python's test/service.py, which its sdist does not ship.

test_kafka_python_suite.py copies this file to <suite>/test/service.py before each run.
The integration fixtures only touch it in two ways:

- `ExternalService(host, port)`: the child of a KafkaFixture built with external=True, i.e.
  when KAFKA_URI names a broker that is already running (ours). Nothing to start or stop, no
  log to read: every method is a no-op and `wait_for` reports the pattern as seen, since the
  broker was up before the suite began.
- `SpawnedService(args, env)`: what KafkaFixture.start() launches for the SASL and SSL tests
  (run without KAFKA_URI): `kafka-run-class.sh kafka.Kafka <kafka.properties>` with the JAAS file
  in KAFKA_OPTS. We start `twinlog serve` with the equivalent settings instead, read from the very
  files the fixture rendered (our templates in servers/resources/default/), so the broker gets
  the fixture's listener, mechanism, users and certificates:
    listeners, node.id, log.dirs, num.partitions -> the same-named twinlog flags;
    sasl.enabled.mechanisms -> --sasl-enabled-mechanisms; the JAAS file -> --sasl-plain-users
      (PLAIN's user_NAME="PASSWORD" entries); kafka-storage's --add-scram SPEC (kept by our
      kafka_root/bin/kafka-storage.sh) -> --sasl-scram-user SPEC;
    ssl.keystore/truststore (JKS made by the fixture's keytool) -> PEM files, converted with
      keytool and `cryptography`, -> --ssl-keystore-location / --ssl-truststore-location;
    authorizer.class.name, allow.everyone.if.no.acl.found -> --authorizer,
      --allow-everyone-if-no-acl-found.
  A setting we do not know is an error, not silently dropped. `wait_for` ignores Kafka's log
  pattern and waits for the listener to accept TCP connections.
  TWINLOG_SUITE_STORAGE_MODE picks the storage mode (the compat test's parametrization).
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

# Single broker: nothing to talk to, so the inter-broker mechanism has no twinlog counterpart.
IGNORED_SETTINGS = {"sasl.mechanism.inter.broker.protocol"}
# Password settings are consumed while converting the JKS files.
JKS_PASSWORDS = {"ssl.keystore.password", "ssl.key.password", "ssl.truststore.password"}
FLAG_OF_SETTING = {"node.id": "--node-id", "log.dirs": "--data-dir", "num.partitions": "--num-partitions",
                   "listeners": "--listeners", "sasl.enabled.mechanisms": "--sasl-enabled-mechanisms"}


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


def read_properties(path):
    props = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                props[key.strip()] = value.strip()
    return props


def jks_key_and_chain_to_pem(keystore, store_password, key_password, out_path):
    """The keystore's private key and certificate chain, as one unencrypted PEM file."""
    p12 = out_path + ".p12"
    subprocess.run(["keytool", "-importkeystore", "-noprompt", "-srckeystore", keystore,
                    "-srcstorepass", store_password, "-srckeypass", key_password, "-srcalias", "localhost",
                    "-destkeystore", p12, "-deststoretype", "PKCS12", "-deststorepass", store_password,
                    "-destkeypass", store_password], check=True, capture_output=True)
    with open(p12, "rb") as f:
        key, cert, extra = pkcs12.load_key_and_certificates(f.read(), store_password.encode())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    for c in [cert, *extra]:
        pem += c.public_bytes(serialization.Encoding.PEM)
    with open(out_path, "wb") as f:
        f.write(pem)


def jks_certificates_to_pem(truststore, store_password, out_path):
    listing = subprocess.run(["keytool", "-list", "-rfc", "-keystore", truststore, "-storepass", store_password],
                             check=True, capture_output=True, text=True).stdout
    certs = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", listing, re.S)
    if not certs:
        raise RuntimeError("no certificate in " + truststore)
    with open(out_path, "w") as f:
        f.write("\n".join(certs) + "\n")


def twinlog_command(properties_path, env):
    props = read_properties(properties_path)
    cli = os.path.join(os.path.dirname(sys.executable), "twinlog")
    cmd = [cli, "serve", "--storage-mode", os.environ.get("TWINLOG_SUITE_STORAGE_MODE", "segment")]
    conf_dir = os.path.dirname(properties_path)
    for key, value in props.items():
        if key in FLAG_OF_SETTING:
            cmd += [FLAG_OF_SETTING[key], value]
        elif key == "authorizer.class.name":
            cmd.append("--authorizer")
        elif key == "allow.everyone.if.no.acl.found":
            cmd += ["--allow-everyone-if-no-acl-found"] if value == "true" else []
        elif key == "ssl.keystore.location":
            pem = os.path.join(conf_dir, "broker-key-and-chain.pem")
            jks_key_and_chain_to_pem(value, props["ssl.keystore.password"], props["ssl.key.password"], pem)
            cmd += ["--ssl-keystore-location", pem]
        elif key == "ssl.truststore.location":
            pem = os.path.join(conf_dir, "truststore.pem")
            jks_certificates_to_pem(value, props["ssl.truststore.password"], pem)
            cmd += ["--ssl-truststore-location", pem]
        elif key not in IGNORED_SETTINGS | JKS_PASSWORDS:
            raise RuntimeError(f"twinlog stand-in: no equivalent for {key}={value} in {properties_path}")
    jaas = re.search(r"-Djava.security.auth.login.config=(\S+)", env.get("KAFKA_OPTS", ""))
    if jaas and "PLAIN" in props.get("sasl.enabled.mechanisms", "").split(","):
        cmd += ["--sasl-plain-users", jaas.group(1)]
    if os.path.exists(properties_path + ".add-scram"):
        with open(properties_path + ".add-scram") as f:
            for spec in filter(None, (line.strip() for line in f)):
                cmd += ["--sasl-scram-user", spec]
    host, port = re.match(r"[A-Z_]+://([^:,]*):(\d+)", props["listeners"]).groups()
    return cmd, (host, int(port))


class SpawnedService:
    def __init__(self, args=None, env=None):
        if not args or args[-2:-1] != ["kafka.Kafka"]:
            raise RuntimeError("twinlog's stand-in SpawnedService only starts a Kafka broker "
                               "(kafka-run-class.sh kafka.Kafka PROPS), not " + repr(args))
        self.cmd, self.address = twinlog_command(args[-1], env or {})
        self.log = tempfile.NamedTemporaryFile(prefix="twinlog-suite-", suffix=".log", delete=False)
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def wait_for(self, pattern, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                socket.create_connection(self.address, timeout=1).close()
                return True
            except OSError:
                time.sleep(0.1)
        return False

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def dump_logs(self):
        with open(self.log.name, errors="replace") as f:
            tail = f.read().splitlines()[-40:]
        print("twinlog " + " ".join(self.cmd) + "\n" + "\n".join(tail))
