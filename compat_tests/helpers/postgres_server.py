"""A throwaway PostgreSQL cluster from Debian's postgresql package, for Debezium tests.

`PostgresServer()` runs initdb and pg_ctl from /usr/lib/postgresql/<version>/bin in a new
directory under the system temp dir (pytest's own tmp dirs are private to root, out of reach of
the `postgres` user), on a free loopback port, with wal_level=logical (what Debezium's pgoutput
replication needs). PostgreSQL refuses to run as root, so when the tests run as root the
cluster belongs to the `postgres` user the package creates and its commands run through runuser.
Clients connect over TCP as the superuser `postgres` with trust authentication; `sql()` runs
statements through psql.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from compat_tests.helpers.broker_process import free_port

PG_ROOT = Path("/usr/lib/postgresql")
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "wal_level": "logical",
    "max_wal_senders": "4",
    "max_replication_slots": "4",
    # A test database: losing it to a crash costs nothing, and fsyncs cost seconds on a busy disk.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


class PostgresSetupError(RuntimeError):
    """PostgreSQL is not installed: a harness problem."""


def _bin_dir() -> Path:
    found = sorted(PG_ROOT.glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise PostgresSetupError(f"no initdb under {PG_ROOT}: run `bash compat_tests/install_deps.sh` "
                                 "(Debian package postgresql)")
    return found[-1].parent


class PostgresServer:
    user = "postgres"
    database = "postgres"

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.workdir = Path(tempfile.mkdtemp(prefix="twinlog-postgres-"))
        self.data_dir = self.workdir / "pgdata"
        self.log_path = self.workdir / "postgres.log"
        self.host = "127.0.0.1"
        self.port = free_port()
        self._as_postgres = os.geteuid() == 0

    def _run(self, *cmd: str, input_text: str | None = None) -> str:
        if self._as_postgres:
            cmd = ("runuser", "-u", "postgres", "--", *cmd)
        # cwd: runuser keeps the caller's, which the postgres user may not be allowed to enter.
        done = subprocess.run(cmd, cwd=self.workdir, input=input_text, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done.stdout

    def start(self) -> "PostgresServer":
        if self._as_postgres:
            shutil.chown(self.workdir, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data_dir), "-U", self.user, "--auth=trust",
                  "--no-sync", "-E", "UTF8")
        settings = "".join(f"{k} = {v}\n" for k, v in SERVER_SETTINGS.items())
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write(settings + f"port = {self.port}\nunix_socket_directories = '{self.workdir}'\n")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_path), "-w",
                  "-t", "60", "start")
        return self

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")

    def cleanup(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def sql(self, statements: str) -> str:
        """Run statements in one psql session (stops at the first error); return what it printed."""
        return self._run(str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-A", "-t",
                         "-h", self.host, "-p", str(self.port), "-U", self.user, "-d", self.database,
                         input_text=statements)
