"""Keeps a MetadataImage current with the etcd prefix: a full read, then a watch from there on.

The watch starts at the revision after the read, so no change falls between the two. Events
are applied to an ImageBuilder as they arrive; a separate task publishes the next image and
tells listeners what changed. aetcd hands over all events of one watch response (etcd puts
every event of one revision, i.e. of one transaction, in one response) before this task can
run, so a listener never sees half of a transaction — a topic without its partitions.

The first read is tried until etcd answers; when the watch fails (etcd restarted, the revision
compacted away, the connection reset) the whole prefix is read again, with a backoff between
attempts while etcd is unreachable, and watching resumes from the new read. Listeners then get
the difference between the last image they saw and the reloaded one, as if it had come as
events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import aetcd  # type: ignore[import-untyped]  # no type information

from replica.cancellation import cancel_and_wait
from broker.cluster.etcd_store import EtcdStore
from broker.cluster.metadata_image import ImageBuilder, MetadataChange, MetadataImage

log = logging.getLogger(__name__)

Listener = Callable[[MetadataImage, MetadataChange], Awaitable[None]]

FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 1.0  # a full read is cheap; longer kept the image stale after a partition healed


class MetadataWatch:
    def __init__(self, store: EtcdStore) -> None:
        self._store = store
        self._builder = ImageBuilder(store.layout)
        self.image = MetadataImage()
        self._listeners: list[Listener] = []
        self._dirty = asyncio.Event()
        self._published = asyncio.Condition()
        self._tasks: list[asyncio.Task] = []

    def add_listener(self, listener: Listener) -> None:
        """`await listener(image, change)` after every published change, one call at a time."""
        self._listeners.append(listener)

    async def start(self) -> None:
        """Read everything and publish the first image before returning. A read etcd does not
        answer in time (etcd restarting, or slow on a loaded machine) is tried again with the
        watch's backoff, as a reload is, until it answers: the broker's session is registered
        by now, and a start that gave up on one slow read would take a member out of the cluster."""
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                await self._reload()
                break
            except aetcd.exceptions.ClientError as exc:
                log.warning("etcd metadata read failed (%r); trying again in %.1f s", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
        await self._publish()
        self._tasks = [asyncio.create_task(self._watch_loop(), name="etcd-metadata-watch"),
                       asyncio.create_task(self._publish_loop(), name="etcd-metadata-publish")]

    async def close(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks = []

    async def wait_for(self, predicate: Callable[[MetadataImage], bool], timeout: float) -> MetadataImage:
        """The first published image that satisfies `predicate` (asyncio.TimeoutError if none
        comes within `timeout` seconds)."""
        async with self._published:
            await asyncio.wait_for(self._published.wait_for(lambda: predicate(self.image)), timeout)
            return self.image

    async def _reload(self) -> None:
        kvs, revision = await self._store.load()
        self._builder.reset(revision)
        for key, value, mod_revision in kvs:
            self._builder.put(key, value, mod_revision)
        self._builder.revision = revision
        self._dirty.set()

    async def _watch_loop(self) -> None:
        backoff = FIRST_BACKOFF_S
        need_reload = False
        while True:
            try:
                if need_reload:
                    await self._reload()
                    need_reload = False
                watch = await self._store.client.watch_prefix(
                    self._store.layout.prefix, start_revision=self._builder.revision + 1)
                backoff = FIRST_BACKOFF_S
                async for event in watch:
                    if event.kind == "PUT":
                        self._builder.put(event.kv.key, event.kv.value, event.kv.mod_revision)
                    else:
                        self._builder.delete(event.kv.key, event.kv.mod_revision)
                    self._dirty.set()
                raise ConnectionError("etcd ended the watch")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("etcd metadata watch failed (%r); reloading in %.1f s", exc, backoff)
                need_reload = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _publish_loop(self) -> None:
        while True:
            await self._dirty.wait()
            await self._publish()

    async def _publish(self) -> None:
        self._dirty.clear()
        image = self._builder.snapshot()
        change = MetadataChange.between(self.image, image)
        async with self._published:
            self.image = image
            self._published.notify_all()
        if not change:
            return
        for listener in self._listeners:
            try:
                await listener(image, change)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("metadata listener %r failed on %r", listener, change)
