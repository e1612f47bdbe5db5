"""Ctrl-C during a read that waits on the network: Python runs signal
handlers only in its main thread holding the GIL, so the wait runs on a
thread of its own and the caller looks for a signal every 20 ms
(python/src/gil.rs). A KeyboardInterrupt ends the read well before its
timeout, as Ruby's Interrupt does (test/remote_test.rb)."""

from __future__ import annotations

import http.server
import pathlib
import subprocess
import sys
import threading
import time

import hashfile


class _StallingHandler(http.server.BaseHTTPRequestHandler):
    """Serves one file with Range requests; once `stall` is set, each
    request waits (up to a minute) before it answers."""

    body = b""
    stall = threading.Event()
    stop = threading.Event()

    def do_GET(self) -> None:  # noqa: N802
        cls = type(self)
        if cls.stall.is_set():
            cls.stop.wait(60)
        body = cls.body
        wanted = self.headers.get("Range", "").removeprefix("bytes=")
        spans = []
        for span in filter(None, wanted.split(",")):
            start, _, end = span.strip().partition("-")
            spans.append((int(start), min(int(end) if end else len(body) - 1, len(body) - 1)))
        if not spans:
            self.send_response(200)
            out = body
        elif len(spans) == 1:
            (first, last), = spans
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
            out = body[first : last + 1]
        else:
            # Several ranges: multipart/byteranges, as nginx answers.
            self.send_response(206)
            self.send_header("Content-Type", "multipart/byteranges; boundary=PART")
            parts = [
                f"--PART\r\nContent-Type: application/octet-stream\r\n"
                f"Content-Range: bytes {first}-{last}/{len(body)}\r\n\r\n".encode()
                + body[first : last + 1]
                + b"\r\n"
                for first, last in spans
            ]
            out = b"".join(parts) + b"--PART--\r\n"
        self.send_header("Content-Length", str(len(out)))
        self.send_header("ETag", '"fixed"')
        self.end_headers()
        try:
            self.wfile.write(out)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self) -> None:  # noqa: N802
        # The child says when it has opened: lookups stall from then on.
        type(self).stall.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


CHILD = """
import os, signal, sys, threading, time, urllib.request
import hashfile
# A shell without job control starts background jobs with SIGINT ignored,
# and Python keeps an inherited SIG_IGN: the test says what it needs.
signal.signal(signal.SIGINT, signal.default_int_handler)
url = sys.argv[1]
db = hashfile.open(url + "/s.hf", timeout=30, retries=0)
urllib.request.urlopen(urllib.request.Request(url + "/stall", method="POST")).read()
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
began = time.monotonic()
try:
    db["k19999"]
    print("answered")
except KeyboardInterrupt:
    print("interrupted", round(time.monotonic() - began, 2))
"""


def test_ctrl_c_ends_a_remote_read_that_waits(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.hf"
    hashfile.build(path, {f"k{i}": "v" * 200 for i in range(20_000)})
    _StallingHandler.body = path.read_bytes()
    _StallingHandler.stall.clear()
    _StallingHandler.stop.clear()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StallingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, f"http://127.0.0.1:{server.server_port}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        took = time.monotonic() - began
    finally:
        _StallingHandler.stop.set()
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    word, *after = done.stdout.split()
    assert word == "interrupted", done.stdout
    # Sent at 0.5 s; the read's timeout is 30 s.
    assert float(after[0]) < 5, done.stdout
    assert took < 20
