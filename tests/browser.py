"""A small DevTools-protocol client, so that test scripts can drive a headless browser.

    with Browser(workdir) as browser:
        browser.navigate("http://127.0.0.1:8000/")
        browser.wait_for("document.body.dataset.state === 'ready'")
        assert not browser.errors
"""
import base64
import collections
import ctypes
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import websocket  # The websocket-client package.

CHROMIUM = os.environ.get("CHROMIUM", "chromium")

# Loaded before any fork, so that the child only makes one plain call.
try:
    _LIBC = ctypes.CDLL(None, use_errno=True)
except OSError:
    _LIBC = None


def _die_with_parent():
    # Linux sends the browser SIGKILL when the test process dies, even if it is killed outright.
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _exception_text(details):
    # The description holds the message and stack; "text" alone is often just "Uncaught".
    return details.get("exception", {}).get("description") or details.get("text", "unknown exception")


def _element(selector):
    # A JS expression for one element that throws a clear error when nothing matches.
    s = json.dumps(selector)
    return f"(document.querySelector({s}) || (() => {{ throw new Error('no element matches ' + {s}); }})())"


class Browser:
    def __init__(self, workdir):
        self.workdir = workdir
        self.errors = []  # Console errors and uncaught exceptions of the page, as text.
        self.proc = None
        self.ws = None
        self.log = None
        self.profile = None
        self._ids = itertools.count(1)
        # Events read while waiting for replies, kept so that navigate can find its load event.
        self._events = collections.deque(maxlen=1000)

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc):
        self._stop()
        return False

    def _start(self):
        # A fresh profile each time, so that no state leaks between tests.
        self.profile = tempfile.mkdtemp(prefix="browser-", dir=self.workdir)
        self.log = open(self.profile + ".log", "wb")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 30
        port = self._port(deadline)
        # Local addresses must not go through any proxy set in the environment.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while True:
            with opener.open(f"http://127.0.0.1:{port}/json", timeout=10) as answer:
                pages = [t for t in json.load(answer) if t.get("type") == "page"]
            if pages:
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the browser shows no page target")
            time.sleep(0.1)
        # Without an Origin header the browser accepts the connection without an allow-list flag.
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30,
                                              suppress_origin=True, http_no_proxy=["127.0.0.1"])
        self.command("Page.enable")
        self.command("Runtime.enable")

    def _port(self, deadline):
        # The browser writes its chosen port, then a path, to this file once it listens.
        path = os.path.join(self.profile, "DevToolsActivePort")
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the browser exited with {self.proc.returncode}; see {self.log.name}")
            try:
                with open(path) as f:
                    first, newline, _ = f.read().partition("\n")
                if newline:
                    return int(first)
            except (FileNotFoundError, ValueError):
                pass  # Not written yet, or only partly.
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {path} after 30 s; see {self.log.name}")
            time.sleep(0.1)

    def _stop(self):
        if self.ws is not None:
            try:
                self.ws.close()
            except Exception:
                pass
            self.ws = None
        if self.proc is not None:
            # The whole group goes, so that no helper process of the browser outlives the test.
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(5)
                    break
                except subprocess.TimeoutExpired:
                    pass
            self.proc.wait()
            self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.profile is not None:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None

    def _receive(self, deadline):
        # Reads one message; events are recorded here whichever command is waiting.
        self.ws.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            message = json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            raise TimeoutError("the browser did not answer in time") from None
        method = message.get("method")
        if method:
            params = message.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                args = (str(a.get("value", a.get("description", a.get("type")))) for a in params.get("args", []))
                self.errors.append("console.error: " + " ".join(args))
            elif method == "Runtime.exceptionThrown":
                self.errors.append("exception: " + _exception_text(params.get("exceptionDetails", {})))
            self._events.append(message)
        return message

    def command(self, method, params=None, timeout=30):
        """Sends one protocol command and returns its result, matching the reply by id."""
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") == msg_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})

    def navigate(self, url, timeout=30):
        """Loads url and returns once its load event has fired."""
        self._events.clear()
        result = self.command("Page.navigate", {"url": url}, timeout)
        if result.get("errorText"):
            raise RuntimeError(f"navigating to {url}: {result['errorText']}")
        deadline = time.monotonic() + timeout
        # The event may already have arrived while the reply was awaited.
        while not any(e["method"] == "Page.loadEventFired" for e in self._events):
            self._receive(deadline)

    def evaluate(self, js, timeout=30):
        """Runs js in the page and returns its value, awaiting it if it is a promise."""
        result = self.command("Runtime.evaluate", {"expression": js, "returnByValue": True,
                                                   "awaitPromise": True}, timeout)
        if "exceptionDetails" in result:
            raise RuntimeError(f"JS exception in {js!r}: {_exception_text(result['exceptionDetails'])}")
        return result.get("result", {}).get("value")

    def wait_for(self, condition, timeout=30):
        """Polls the JS condition until it is truthy, and returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(condition)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {condition!r}; last value {value!r}")
            time.sleep(0.1)

    def type_text(self, selector, text):
        """Types text into the element as the keyboard would, so that input events fire."""
        self.evaluate(f"{_element(selector)}.focus()")
        self.command("Input.insertText", {"text": text})

    def click(self, selector):
        self.evaluate(f"{_element(selector)}.click()")

    def set_file(self, selector, path):
        """Chooses path in a file input, as a user picking it would."""
        root = self.command("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = self.command("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        if not node:
            raise RuntimeError(f"no element matches {selector!r}")
        self.command("DOM.setFileInputFiles", {"nodeId": node, "files": [os.path.abspath(path)]})

    def screenshot(self, path):
        data = self.command("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
