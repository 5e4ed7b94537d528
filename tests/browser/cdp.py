#!/usr/bin/env python3
"""Open a page in headless Chromium and report what a test asserts on.

    cdp.py URL [--eval JS] [--screenshot PNG] [--width PX]

Drives Chromium over the DevTools protocol on a pipe (--remote-debugging-
pipe: commands on fd 3, events and answers on fd 4, NUL-separated JSON), with
the Python standard library only. Prints one JSON object:

  {"value": <the result of JS, evaluated after the load event>,
   "console": [messages logged at warning or error level],
   "exceptions": [uncaught script errors],
   "requests": [every URL the page asked for, the page itself included],
   "violations": [Content-Security-Policy violations reported],
   "dialogs": [messages of alert(), confirm() or prompt() dialogs, dismissed]}

Exit status 3 when Chromium is not installed (the caller says so), 1 on any
other failure. The network is closed to the page: every host name resolves
to nothing (--host-resolver-rules), and every request is listed.
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-pipe",
]


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Pipe:
    def __init__(self, write_fd, read_fd):
        self.w = os.fdopen(write_fd, "wb", buffering=0)
        self.r = os.fdopen(read_fd, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.w.write(json.dumps(msg).encode() + b"\0")
        want = self.next_id
        return self.wait_for(lambda m: m.get("id") == want)

    def read(self):
        while b"\0" not in self.buf:
            chunk = self.r.read(1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def wait_for(self, pred, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            m = self.read()
            if m.get("method") == "Page.javascriptDialogOpening":
                # An alert() would block the page: record it, dismiss it.
                self.next_id += 1
                self.w.write(json.dumps({"id": self.next_id, "sessionId": m.get("sessionId"),
                                         "method": "Page.handleJavaScriptDialog",
                                         "params": {"accept": False}}).encode() + b"\0")
            if pred(m):
                if "error" in m:
                    raise RuntimeError(json.dumps(m["error"]))
                return m
            self.events.append(m)
        raise RuntimeError("timed out waiting for chromium")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--eval", default="null")
    ap.add_argument("--screenshot")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--clip", help="x,y,width,height of the screenshot")
    a = ap.parse_args()
    chromium = find_chromium()
    if not chromium:
        print("chromium is not installed (apt-get install -y chromium)", file=sys.stderr)
        return 3
    profile = tempfile.mkdtemp(prefix="chatfsck-chromium-")
    # fds 3 and 4 of the child: it reads commands on 3, writes on 4.
    cmd_r, cmd_w = os.pipe()
    ev_r, ev_w = os.pipe()

    def child_fds():
        # Through fresh descriptors first: the pipe's own may be 3 or 4.
        r, w = os.dup(cmd_r), os.dup(ev_w)
        os.dup2(r, 3)
        os.dup2(w, 4)

    proc = subprocess.Popen(
        [chromium, *FLAGS, "--user-data-dir=" + profile, "about:blank"],
        pass_fds=(3, 4, cmd_r, ev_w),  # kept open after preexec_fn
        preexec_fn=child_fds,
        stdout=subprocess.DEVNULL,
        stderr=(None if os.environ.get("CDP_DEBUG") else subprocess.DEVNULL),
    )
    os.close(cmd_r)
    os.close(ev_w)
    pipe = Pipe(cmd_w, ev_r)
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["result"]["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["result"]["sessionId"]
        for m in ("Runtime.enable", "Log.enable", "Network.enable", "Page.enable"):
            pipe.send(m, session=session)
        pipe.send("Emulation.setDeviceMetricsOverride",
                  {"width": a.width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        pipe.send("Page.navigate", {"url": a.url}, session=session)
        pipe.wait_for(lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session)
        value = pipe.send("Runtime.evaluate",
                          {"expression": a.eval, "returnByValue": True, "awaitPromise": True},
                          session=session)["result"]
        if "exceptionDetails" in value:
            raise RuntimeError("the test's expression failed: " + json.dumps(value["exceptionDetails"]))
        shot = None
        if a.screenshot:
            params = {"format": "png", "captureBeyondViewport": True}
            if a.clip:
                x, y, w, h = (float(v) for v in a.clip.split(","))
                params["clip"] = {"x": x, "y": y, "width": w, "height": h, "scale": 1}
            shot = pipe.send("Page.captureScreenshot", params,
                             session=session)["result"]["data"]
        # Let late events (console, requests) arrive.
        pipe.send("Runtime.evaluate", {"expression": "new Promise(r => setTimeout(r, 200))",
                                       "awaitPromise": True}, session=session)
        console, exceptions, requests, violations, dialogs = [], [], [], [], []
        for m in pipe.events:
            method, p = m.get("method"), m.get("params", {})
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                console.append(" ".join(str(x.get("value", x.get("description", ""))) for x in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                exceptions.append(d.get("exception", {}).get("description") or d.get("text", ""))
            elif method == "Log.entryAdded":
                e = p.get("entry", {})
                if e.get("level") in ("error", "warning"):
                    console.append(e.get("text", ""))
                    if "Content Security Policy" in e.get("text", ""):
                        violations.append(e.get("text", ""))
            elif method == "Page.javascriptDialogOpening":
                dialogs.append(p.get("message", ""))
            elif method == "Network.requestWillBeSent":
                requests.append(p.get("request", {}).get("url", ""))
        if shot is not None:
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(shot))
        print(json.dumps({"value": value["result"].get("value"), "console": console,
                          "exceptions": exceptions, "requests": requests,
                          "violations": violations, "dialogs": dialogs}))
        try:
            pipe.send("Browser.close")
        except RuntimeError:
            pass
        return 0
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
