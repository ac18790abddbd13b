"""`make serve-secure`: a broker that only speaks SASL_SSL, ready to try with any Kafka client.

At each start it makes a new throwaway CA and broker certificate (self_signed_tls.py) under
<data-dir>/tls/, sets the SCRAM-SHA-256 and SCRAM-SHA-512 credentials of one user (a new random
password unless --password is given), prints the settings a client needs, then becomes
`twinlog serve` (exec: Ctrl-C and SIGTERM reach the broker itself).
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

import click

from broker.security.self_signed_tls import make_tls_files


def client_settings(bootstrap: str, ca: Path, user: str, password: str) -> str:
    jaas = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'
    return f"""\
twinlog serve-secure: SASL_SSL on {bootstrap}, SCRAM user {user!r}, CA certificate {ca}

Java client / Kafka tools (client.properties):
    bootstrap.servers={bootstrap}
    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-256
    sasl.jaas.config={jaas}
    ssl.truststore.type=PEM
    ssl.truststore.location={ca}

librdkafka (confluent-kafka, kcat -X ...):
    bootstrap.servers={bootstrap} security.protocol=sasl_ssl sasl.mechanisms=SCRAM-SHA-256
    sasl.username={user} sasl.password={password} ssl.ca.location={ca}

kafka-python / aiokafka:
    bootstrap_servers="{bootstrap}", security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256",
    sasl_plain_username="{user}", sasl_plain_password="{password}", ssl_cafile="{ca}"
    (aiokafka: ssl_context=aiokafka.helpers.create_ssl_context(cafile="{ca}"))

kcat -b {bootstrap} -X security.protocol=sasl_ssl -X sasl.mechanisms=SCRAM-SHA-256 \\
     -X sasl.username={user} -X sasl.password={password} -X ssl.ca.location={ca} -L

twinlog client commands (or a profile: docs/operations.md):
    twinlog topics list -b {bootstrap} --user {user} --password {password} --ca {ca}
"""


@click.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("./data"), show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on and put in the certificate.")
@click.option("--port", type=click.IntRange(1, 65535), default=9093, show_default=True)
@click.option("--user", default="admin", show_default=True)
@click.option("--password", default=None, help="[default: a new random one, printed]")
def main(data_dir: Path, host: str, port: int, user: str, password: str | None) -> None:
    password = password or secrets.token_urlsafe(12)
    hosts = ["localhost", "127.0.0.1"] + ([host] if host not in ("localhost", "127.0.0.1", "") else [])
    files = make_tls_files(data_dir / "tls", hosts=tuple(hosts), clients=())
    click.echo(client_settings(f"{host or 'localhost'}:{port}", files.ca.resolve(), user, password))
    twinlog = shutil.which("twinlog", path=os.path.dirname(sys.executable)) or shutil.which("twinlog")
    argv = [twinlog, "serve", "--data-dir", str(data_dir), "--listeners", f"SASL_SSL://{host}:{port}",
            "--ssl-keystore-location", str(files.broker_cert), "--ssl-key-location", str(files.broker_key),
            "--sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512",
            "--sasl-scram-user", f"SCRAM-SHA-256=[name={user},password={password}]",
            "--sasl-scram-user", f"SCRAM-SHA-512=[name={user},password={password}]"]
    sys.stdout.flush()
    os.execv(twinlog, argv)


if __name__ == "__main__":
    main()
