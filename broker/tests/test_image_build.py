"""The image build's parts that need no engine (broker/testing/image.py).

The build context: the tree as git sees it on disk, so the
image reflects the current tree — an edit not yet committed and a new file not yet added are in
it, what .gitignore leaves out (a venv, data, build output) is not — and the CA bundle pip must
trust, under the one name the Dockerfile looks for. What .dockerignore leaves out of
`docker build .` stays out here too.

No engine: an error that says what to install, not a traceback from deep in docker."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile

import pytest

from broker.testing import image
from broker.testing.image import ImageError, build_context, ensure_engine


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    (root / "wire").mkdir(parents=True)
    (root / "Dockerfile").write_text("FROM scratch\n")
    (root / "wire" / "frame.py").write_text("committed\n")
    (root / "gone.py").write_text("deleted before the build\n")
    (root / ".gitignore").write_text(".venv/\n*.so\n")
    (root / ".dockerignore").write_text("# not for the image\n**/tests\nbench\n")
    (root / "wire" / "tests").mkdir()
    (root / "wire" / "tests" / "test_frame.py").write_text("a test\n")
    (root / "bench").mkdir()
    (root / "bench" / "run.py").write_text("a benchmark\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tree")
    (root / "wire" / "frame.py").write_text("edited, not committed\n")
    (root / "wire" / "new.py").write_text("not added\n")
    (root / "gone.py").unlink()
    (root / ".venv").mkdir()
    (root / ".venv" / "python").write_text("ignored\n")
    (root / "wire" / "_walk.so").write_text("ignored\n")
    bundle = tmp_path / "ca.crt"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(image, "_CA_BUNDLES", (str(bundle),))
    return root


def _members(context: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_the_context_is_the_tree_on_disk_less_what_git_and_docker_ignore(tree):
    members = _members(build_context(tree))
    assert set(members) == {"Dockerfile", ".gitignore", ".dockerignore", "wire/frame.py", "wire/new.py",
                            "build-ca.crt"}
    assert members["wire/frame.py"] == b"edited, not committed\n"
    assert members["build-ca.crt"] == b"-----BEGIN CERTIFICATE-----\n"


def test_the_context_reads_as_a_tar_to_docker(tree):
    # `docker build -` takes its input for a tar only if the first 512 bytes are a plain ustar
    # header; a PAX header first (a fractional mtime makes one) turns it into a Dockerfile.
    with tarfile.open(fileobj=io.BytesIO(build_context(tree)[:512])) as tar:
        first = tar.next()
    assert first is not None and first.type == tarfile.REGTYPE


def test_no_ca_bundle_leaves_the_name_out(tree, monkeypatch):
    monkeypatch.setattr(image, "_CA_BUNDLES", ("/nonexistent/ca.crt", None))
    assert "build-ca.crt" not in _members(build_context(tree))


def test_a_tree_outside_git_is_refused(tmp_path):
    with pytest.raises(ImageError, match="not a git work tree"):
        build_context(tmp_path)


def test_no_docker_command_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ImageError, match="install Debian's docker.io"):
        ensure_engine()


def test_no_engine_and_no_dockerd_says_what_to_install(monkeypatch, tmp_path):
    (tmp_path / "docker").symlink_to(shutil.which("docker"))  # the real CLI, pointed at no engine
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(ImageError, match="no Docker engine answers and dockerd is not installed"):
        ensure_engine()
