"""twinlog's container image, built from a source tree: `make image` and the container tests'
fixture (compat_tests/clients/test_container.py) both call `build_image`.

    python -m broker.testing.image [--tag twinlog] [--etcd]     prints the image id(s)

Three steps, each reusing its result when it is there, so a second call on an unchanged tree
takes seconds:
1. A Docker engine: `docker info` answers, or dockerd (Debian's docker.io) is started in the
   background as root and waited for. It stays running for the next build or test run.
2. The base (the Dockerfile's BASE): debian:bookworm-slim where it is present or Docker Hub
   gives it; where the Hub is out of reach, the same Debian made from Debian's own archive
   (debootstrap --variant=minbase, apt set up as in the slim image), imported once as
   twinlog-base:bookworm.
3. The image: `docker build` of the tree's files (git ls-files: tracked, and untracked but not
   ignored, as they are on disk now, less what .dockerignore leaves out of `docker build .`)
   plus the CA bundle this machine's pip trusts, as build-ca.crt: pip in the build stage
   trusts it too (here PyPI is reached through a CA of the machine's own), and the final stage
   never holds it. Docker's layer cache turns an unchanged tree into a no-op, and a change to
   the packages rebuilds from their COPY on, not the dependencies.

A missing or unstartable engine raises ImageError saying what to install or start.
"""

from __future__ import annotations

import fcntl
import fnmatch
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import click

HUB_BASE = "debian:bookworm-slim"
LOCAL_BASE = "twinlog-base:bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
ETCD_TAG = "twinlog-etcd"
ENGINE_START_TIMEOUT = 60.0
_STATE_DIR = Path(tempfile.gettempdir())
_LOCK = _STATE_DIR / "twinlog-docker.lock"
DOCKERD_LOG = _STATE_DIR / "twinlog-dockerd.log"
_CA_BUNDLES = (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt")

# What debian:bookworm-slim has and debootstrap does not write: updates and security suites,
# and apt that drops downloaded packages after installing them (the official image's
# /etc/apt/apt.conf.d/docker-clean).
_APT_SOURCES = f"""Types: deb
URIs: {DEBIAN_MIRROR}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {DEBIAN_MIRROR}-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
_APT_CLEAN = """DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
"""
_ETCD_DOCKERFILE = b"""ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends etcd-server && rm -rf /var/lib/apt/lists/*
CMD ["etcd"]
"""


class ImageError(RuntimeError):
    """The engine, the base or the build failed; the message says what to do or ends with the output."""


def build_image(root: Path, tag: str | None = None) -> str:
    """The id of the image of the tree at `root` (tagged `tag` too, when given)."""
    base = prepare()
    return _build(build_context(root), base, tag)


def build_etcd_image(tag: str | None = ETCD_TAG) -> str:
    """The id of an image running Debian's etcd-server: the container tests' etcd, where
    quay.io/coreos/etcd is out of reach as Docker Hub is."""
    base = prepare()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(_ETCD_DOCKERFILE)
        tar.addfile(info, io.BytesIO(_ETCD_DOCKERFILE))
    return _build(buffer.getvalue(), base, tag)


def prepare() -> str:
    """A running engine and a base image; the base's name."""
    with _machine_lock():
        ensure_engine()
        return ensure_base()


def _build(context: bytes, base: str, tag: str | None) -> str:
    with tempfile.TemporaryDirectory(prefix="twinlog-image-") as tmp:
        iidfile = Path(tmp) / "iid"
        command = ["docker", "build", "--build-arg", f"BASE={base}", "--iidfile", str(iidfile), "--force-rm",
                   *(["--tag", tag] if tag else []), "-"]
        done = subprocess.run(command, input=context, capture_output=True)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode("utf-8", "replace")
            raise ImageError(f"docker build failed (exit {done.returncode}):\n{_tail(output, 60)}")
        return iidfile.read_text().strip()


def ensure_engine() -> None:
    """Return once `docker info` answers, starting dockerd first where none runs."""
    if shutil.which("docker") is None:
        raise ImageError("no docker command on this machine: install Debian's docker.io "
                         "(apt-get install -y docker.io; `make test-deps` does)")
    if _engine_answers():
        return
    if shutil.which("dockerd") is None:
        raise ImageError("no Docker engine answers and dockerd is not installed: install Debian's docker.io "
                         "(apt-get install -y docker.io; `make test-deps` does) or start your engine")
    if os.geteuid() != 0:
        raise ImageError("the Docker engine is not running and only root may start it here: "
                         "start it (sudo systemctl start docker, or sudo dockerd &)")
    with open(DOCKERD_LOG, "ab") as log:
        proc = subprocess.Popen(["dockerd"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    deadline = time.monotonic() + ENGINE_START_TIMEOUT
    while not _engine_answers():
        if proc.poll() is not None or time.monotonic() > deadline:
            state = f"exited with code {proc.returncode}" if proc.poll() is not None else \
                f"did not answer within {ENGINE_START_TIMEOUT:g} s"
            raise ImageError(f"dockerd {state}; last lines of {DOCKERD_LOG}:\n"
                             f"{_tail(DOCKERD_LOG.read_text('utf-8', 'replace'), 30)}")
        time.sleep(0.2)


def ensure_base() -> str:
    """The name of a Debian bookworm base image present in the engine, made if need be."""
    for name in (HUB_BASE, LOCAL_BASE):
        if _docker("image", "inspect", name).returncode == 0:
            return name
    if _docker("pull", HUB_BASE).returncode == 0:
        return HUB_BASE
    make_local_base()
    return LOCAL_BASE


def make_local_base() -> None:
    """debian:bookworm-slim's equivalent from Debian's archive, as LOCAL_BASE (about 30 s)."""
    if shutil.which("debootstrap") is None:
        raise ImageError(f"Docker Hub is out of reach ({HUB_BASE} cannot be pulled) and debootstrap, "
                         "which makes the base from Debian's archive instead, is missing: "
                         "apt-get install -y debootstrap")
    with tempfile.TemporaryDirectory(prefix="twinlog-base-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        done = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), DEBIAN_MIRROR],
                              capture_output=True)
        if done.returncode != 0:
            raise ImageError(f"debootstrap failed:\n{_tail((done.stdout + done.stderr).decode('utf-8', 'replace'), 30)}")
        (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
        (rootfs / "etc/apt/sources.list.d/debian.sources").write_text(_APT_SOURCES)
        (rootfs / "etc/apt/apt.conf.d/docker-clean").write_text(_APT_CLEAN)
        for cache in ("var/cache/apt", "var/lib/apt/lists"):
            for entry in (rootfs / cache).glob("**/*"):
                if entry.is_file():
                    entry.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["docker", "import", "-", LOCAL_BASE], stdin=tar.stdout, capture_output=True)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise ImageError(f"docker import of the debootstrapped base failed: {imported.stderr.decode()}")


def build_context(root: Path) -> bytes:
    """A tar of the tree's files as they are on disk, and the CA bundle pip should trust."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True)
    if listed.returncode != 0:
        raise ImageError(f"{root} is not a git work tree (the image is built from its git-listed files): "
                         f"{listed.stderr.decode().strip()}")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        ignored = _dockerignore_patterns(root)
        for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
            path = root / name
            if _ignored(name, ignored):
                continue
            if path.is_file() or path.is_symlink():  # a file deleted but not yet staged is skipped
                tar.add(path, arcname=name, recursive=False, filter=_anonymous)
        bundle = next((Path(p) for p in _CA_BUNDLES if p and Path(p).is_file()), None)
        if bundle is not None:
            tar.add(bundle, arcname="build-ca.crt", filter=_anonymous)
    return buffer.getvalue()


def _dockerignore_patterns(root: Path) -> list[str]:
    """The .dockerignore patterns `docker build .` would apply (exceptions, `!`, are not used)."""
    path = root / ".dockerignore"
    lines = path.read_text().splitlines() if path.is_file() else []
    return [line.strip().rstrip("/") for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _ignored(name: str, patterns: list[str]) -> bool:
    """Whether a pattern matches the path or a folder above it; `**/` also matches no folder."""
    parts = name.split("/")
    paths = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatchcase(p, pattern) or (pattern.startswith("**/") and fnmatch.fnmatchcase(p, pattern[3:]))
               for p in paths for pattern in patterns)


def _anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # A whole-second mtime: a fractional one takes a PAX header, and a tar whose first member has
    # one is not recognised as a tar by `docker build -`, which then reads it as a Dockerfile.
    info.mtime = int(info.mtime)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _engine_answers() -> bool:
    return _docker("info").returncode == 0


def _docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True)


@contextmanager
def _machine_lock():
    """One engine start and one base import at a time, across processes (pytest workers, make)."""
    with open(_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


@click.command(help="Build twinlog's container image from a source tree and print its id.")
@click.option("--tag", default="twinlog", show_default=True, help="Name the image is tagged with.")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="The source tree (a git work tree).")
@click.option("--etcd", is_flag=True, help=f"Also build {ETCD_TAG}, the container tests' etcd.")
def main(tag: str, root: Path, etcd: bool) -> None:
    try:
        click.echo(build_image(root.resolve(), tag))
        if etcd:
            click.echo(build_etcd_image())
    except ImageError as exc:
        raise click.ClickException(str(exc)) from exc


if __name__ == "__main__":
    main()
