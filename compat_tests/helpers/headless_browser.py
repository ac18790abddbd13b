"""Debian's headless Chromium, driven over the DevTools protocol on a pipe (no Python driver).

`chromium --remote-debugging-pipe` reads DevTools commands from its fd 3 and writes answers and
events to its fd 4, each a JSON object ended by a NUL byte. That is all a test needs to open a
page, run a script in it (fill a form, click), and read back what the page shows, with nothing
installed but the browser: the console's tests check each view's content (its text, its
elements), never pixels.

    with HeadlessBrowser() as browser:
        page = browser.open("http://127.0.0.1:8080/")
        page.wait_for("document.querySelector('#status').textContent.includes('updated')")
        text = page.evaluate("document.body.innerText")

If chromium is missing the browser fails to start (tests do not skip): install_deps.sh
installs it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

from compat_tests.helpers.waiting import wait_until

DEFAULT_TIMEOUT_S = 20.0


class BrowserError(RuntimeError):
    pass


class HeadlessBrowser:
    def __init__(self, width: int = 1280, height: int = 900) -> None:
        exe = shutil.which("chromium")
        if exe is None:
            raise BrowserError("Debian's chromium is not installed: run compat_tests/install_deps.sh")
        self._profile = tempfile.TemporaryDirectory(prefix="twinlog-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the browser's fd 3 reads our commands, its fd 4 writes its answers
        def child_fds() -> None:  # through fds above 4, so neither pipe end overwrites the other
            commands = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            answers = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(commands, 3)
            os.dup2(answers, 4)
        self._process = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={self._profile.name}", f"--window-size={width},{height}",
             "--no-first-run", "--disable-extensions", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child_fds, pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0

    def __enter__(self) -> "HeadlessBrowser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout_s=5)
        except (BrowserError, OSError):
            pass
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
        """One DevTools command; its result (events in between are dropped)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") != self._next_id:
                continue
            if "error" in answer:
                raise BrowserError(f"{method}: {answer['error']}")
            return answer["result"]

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self._from_browser, 65536)
            if not chunk:
                raise BrowserError(f"chromium exited (code {self._process.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.go(url)
        return page


class Page:
    """One tab: scripts run in it with their result returned as JSON."""

    def __init__(self, browser: HeadlessBrowser, session: str) -> None:
        self._browser = browser
        self._session = session

    def go(self, url: str) -> None:
        self._browser.send("Page.navigate", {"url": url}, self._session)
        wait_until(lambda: self.evaluate("document.readyState") == "complete", f"{url} to load",
                   timeout=DEFAULT_TIMEOUT_S)

    def evaluate(self, expression: str):
        """The value of a JS expression (a promise is awaited)."""
        result = self._browser.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                         "returnByValue": True}, self._session)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = DEFAULT_TIMEOUT_S, message: str = "") -> None:
        wait_until(lambda: self.evaluate(expression), message or f"the page to have {expression}",
                   timeout=timeout_s)

    def text(self, selector: str) -> str:
        return self.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")
