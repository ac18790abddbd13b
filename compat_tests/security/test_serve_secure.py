"""`make serve-secure` (broker/cli/serve_secure.py): the settings it prints are enough for a real
client to connect over SASL_SSL, trusting the CA it just made; nothing else is listening."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

from compat_tests.helpers.broker_process import ROOT, free_port
from compat_tests.helpers.waiting import wait_until


def test_serve_secure_prints_settings_a_client_can_use(tmp_path):
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka.admin import AdminClient
    port = free_port()
    log = tmp_path / "out.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "broker.cli.serve_secure", "--data-dir", str(tmp_path / "data"),
                                 "--port", str(port)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        def listening() -> bool:
            assert proc.poll() is None, log.read_text()
            return "twinlog listening" in log.read_text()

        wait_until(listening, "twinlog listening", timeout=30)
        text = log.read_text()
        # The librdkafka block: "key=value" pairs over two lines.
        block = text.split("librdkafka (confluent-kafka, kcat -X ...):\n")[1].split("\n\n")[0]
        conf = dict(pair.split("=", 1) for pair in block.split())
        assert conf["security.protocol"] == "sasl_ssl" and re.fullmatch(r"[\w-]{16}", conf["sasl.password"])
        md = AdminClient(conf).list_topics(timeout=15)
        assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", port)]
        errors = []
        wrong = Producer({**conf, "sasl.password": "wrong", "error_cb": errors.append})
        for _ in range(40):
            wrong.poll(0.25)
            if errors:
                break
        assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
        # The twinlog block: the CLI's own command line, run as printed.
        line = text.split("twinlog client commands (or a profile: docs/operations.md):\n")[1].splitlines()[0]
        argv = line.split()
        assert argv[:3] == ["twinlog", "topics", "list"]
        listed = subprocess.run([str(ROOT / ".venv" / "bin" / "twinlog"), *argv[1:], "--format", "json"],
                                capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert listed.returncode == 0 and json.loads(listed.stdout) == [], (listed.stdout, listed.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, log.read_text()
