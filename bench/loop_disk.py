"""A disk of the benchmark's own: ext4 on a file, attached as a loop device, mounted for the
broker's data directory, so /proc/diskstats' line for that device counts the broker's IO and
nothing else, and an IOPS budget set on it throttles no one else.

    with LoopDisk(image=Path("/tmp/x/disk.img"), size_gib=6) as disk:
        before = disk.counters()          # after disk.sync()
        ...
        disk.set_write_iops(3000)         # cgroup v1 blkio throttle on this device only

The loop device reads and writes its backing file with O_DIRECT (`--direct-io=on`), so a write
the loop device completes has reached the real disk, not the host's page cache. mkfs turns lazy
inode-table and journal initialisation off: otherwise ext4lazyinit writes in the background for
minutes after the mount and every cell would count some of its IO.

The mount is made in a mount namespace of the benchmark's own (unshare(CLONE_NEWNS), then every
mount made private), which the broker inherits. In the shared namespace, any process that
unshares its own namespace while the disk is mounted (the compat harness's network-fault brokers
do) takes a copy of the mount with it, and the loop device then stays attached until that
process exits.

IOPS limiting: cgroup v1's `blkio.throttle.write_iops_device` set on the *root* blkio cgroup
with this device's major:minor. At the root it covers every writer of the device: the broker's
fsyncs, the flusher threads' writeback and jbd2's journal commits (a child cgroup would
catch only the bios its own tasks submit, and in v1 writeback is not charged to the cgroup
that dirtied the pages). No cgroup is created. cgroup v2's io.max has no root-level file, so
there the limit is reported as unavailable rather than half-applied. This kernel has no
device-mapper (no dm-delay), so there is no fallback.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

BLKIO_V1 = Path("/sys/fs/cgroup/blkio")
CLONE_NEWNS = 0x00020000


@dataclass(frozen=True)
class DiskCounters:
    """The device's cumulative counters (/proc/diskstats, kernel's Documentation/admin-guide/iostats)."""
    writes: int  # write requests completed (after merging in the device queue)
    write_sectors: int  # 512-byte sectors written
    flushes: int  # cache-flush requests completed (kernel ≥ 5.5; fsync on ext4 sends one)

    def __sub__(self, other: DiskCounters) -> DiskCounters:
        return DiskCounters(self.writes - other.writes, self.write_sectors - other.write_sectors,
                            self.flushes - other.flushes)


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120).stdout.strip()


def private_mount_namespace() -> None:
    """Move this process (still single-threaded: unshare refuses otherwise) into a mount namespace
    of its own whose mounts propagate nowhere; children started later inherit it."""
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    _run("mount", "--make-rprivate", "/")


def cgroup_version() -> str:
    """'v1 (blkio)', 'v2' or 'none': which IO controller this machine mounts."""
    if (BLKIO_V1 / "blkio.throttle.write_iops_device").exists():
        return "v1 (blkio)"
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return "v2"
    return "none"


class LoopDisk:
    def __init__(self, image: Path, size_gib: int):
        self.image, self.size_gib = image, size_gib
        self.mount_point = image.parent / "mnt"
        self.device: str | None = None
        self.mounted = False
        self.limited = False

    def __enter__(self) -> LoopDisk:
        try:
            private_mount_namespace()
            self.image.parent.mkdir(parents=True, exist_ok=True)
            with open(self.image, "wb") as f:
                f.truncate(self.size_gib << 30)
            _run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(self.image))
            self.device = _run("losetup", "--find", "--show", "--direct-io=on", str(self.image))
            self.mount_point.mkdir(exist_ok=True)
            _run("mount", "-o", "noatime", self.device, str(self.mount_point))
            self.mounted = True
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def name(self) -> str:
        return os.path.basename(self.device)

    @property
    def major_minor(self) -> str:
        return Path(f"/sys/block/{self.name}/dev").read_text().strip()

    def counters(self) -> DiskCounters:
        with open("/proc/diskstats") as f:
            for line in f:
                fields = line.split()
                if fields[2] == self.name:
                    flushes = int(fields[18]) if len(fields) > 18 else 0
                    return DiskCounters(int(fields[7]), int(fields[9]), flushes)
        raise RuntimeError(f"{self.name} is not in /proc/diskstats")

    def sync(self) -> None:
        """syncfs(2) on the mounted filesystem: every dirty page and the journal reach the device."""
        _run("sync", "-f", str(self.mount_point))

    def set_write_iops(self, iops: int) -> None:
        """Cap this device's write requests per second (0 lifts the cap). Raises where the
        machine offers no way to do it (see the module docstring)."""
        if cgroup_version() != "v1 (blkio)":
            raise RuntimeError(f"no root-level IOPS throttle with cgroup {cgroup_version()}")
        (BLKIO_V1 / "blkio.throttle.write_iops_device").write_text(f"{self.major_minor} {iops}\n")
        self.limited = iops > 0

    def write_iops_limit(self) -> int:
        for line in (BLKIO_V1 / "blkio.throttle.write_iops_device").read_text().splitlines():
            dev, value = line.split()
            if dev == self.major_minor:
                return int(value)
        return 0

    def close(self) -> None:
        """Lift the cap, unmount, detach, delete the image: idempotent, safe half-way through."""
        if self.limited:
            self.set_write_iops(0)
        if self.mounted:
            _run("umount", str(self.mount_point))
            self.mounted = False
        if self.device:
            _run("losetup", "-d", self.device)
            self.device = None
        self.image.unlink(missing_ok=True)
