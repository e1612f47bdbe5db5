"""Shared helpers: the repository's root, Ruby for the cross-language
tests (the gem's extension, built by ``rake compile``), servers (MinIO,
nginx), and ``skip_or_fail`` for a test whose environment is missing."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import NoReturn

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def skip_or_fail(required_by: str, missing: str) -> NoReturn:
    """A test whose environment is missing (MinIO, nginx, Spark, fork):
    skips, naming ``missing``, unless the variable ``required_by`` (a
    ``HASHFILE_REQUIRE_*`` name) is ``1``, when it fails, saying what is
    missing and which variable required it. .ci/run sets one for each
    environment it installs (docs/ARCHITECTURE.md, "Checks CI runs", lists
    them). The Rust tests (``require_env!``) and minitest (``skip_or_fail``
    in test/test_helper.rb) follow the same rule. Also at a module's top."""
    if os.environ.get(required_by) == "1":
        pytest.fail(f"{missing}, and {required_by}=1 requires it", pytrace=False)
    pytest.skip(f"{missing} ({required_by}=1 makes this a failure)", allow_module_level=True)


def ruby(script: str, *args: str) -> str:
    """Runs ``script`` with the gem's lib/ on the load path; returns stdout."""
    done = subprocess.run(
        ["ruby", "-I", str(ROOT / "lib"), "-rhashfile", "-rjson", "-e", script, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def ruby_json():
    """Ruby's view of a store: every entry as JSON, in stored order."""

    def read(path: str) -> list:
        return json.loads(ruby("db = Hashfile.open(ARGV[0]); puts JSON.generate(db.to_a)", path))

    return read


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, process: subprocess.Popen, what: str, seconds: float = 60) -> None:
    import socket
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer on port {port}")


class Minio:
    """MinIO on a free port with a temporary data directory: the binary
    bin/setup builds (~/.cache/hashfile/bin/minio), with the environment
    the Rust and Ruby tests give it (test/support/minio.env)."""

    def __init__(self, data: pathlib.Path) -> None:
        env_lines = (ROOT / "test/support/minio.env").read_text().splitlines()
        self.env = dict(line.split("=", 1) for line in env_lines if line.strip() and not line.startswith("#"))
        binary = os.environ.get("HASHFILE_MINIO", os.path.expanduser("~/.cache/hashfile/bin/minio"))
        if not os.access(binary, os.X_OK):
            skip_or_fail("HASHFILE_REQUIRE_MINIO", f"MinIO is not at {binary} (bin/setup --minio builds it with Go)")
        port = _free_port()
        self.process = subprocess.Popen(
            [binary, "server", str(data), "--address", f"127.0.0.1:{port}", "--console-address", f"127.0.0.1:{_free_port()}", "--quiet"],
            env={**os.environ, **self.env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for(port, self.process, "minio")
        self.endpoint = f"http://127.0.0.1:{port}"

    @property
    def client_env(self) -> dict[str, str]:
        """What an S3 client needs, as the standard AWS variables."""
        return {
            "AWS_ACCESS_KEY_ID": self.env["MINIO_ROOT_USER"],
            "AWS_SECRET_ACCESS_KEY": self.env["MINIO_ROOT_PASSWORD"],
            "AWS_REGION": self.env["MINIO_REGION"],
        }

    def make_bucket(self, name: str) -> None:
        """A signed (AWS Signature Version 4) PUT of ``/name``, retried while
        MinIO warms up."""
        import datetime
        import hashlib
        import hmac
        import time
        import urllib.error
        import urllib.request

        user, secret, region = self.env["MINIO_ROOT_USER"], self.env["MINIO_ROOT_PASSWORD"], self.env["MINIO_REGION"]
        host = self.endpoint.removeprefix("http://")
        for _ in range(50):
            now = datetime.datetime.now(datetime.UTC)
            date, stamp = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")
            body_hash = hashlib.sha256(b"").hexdigest()
            signed = "host;x-amz-content-sha256;x-amz-date"
            canonical = "\n".join(["PUT", f"/{name}", "", f"host:{host}", f"x-amz-content-sha256:{body_hash}", f"x-amz-date:{stamp}", "", signed, body_hash])
            scope = f"{date}/{region}/s3/aws4_request"
            to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
            key = f"AWS4{secret}".encode()
            for part in (date, region, "s3", "aws4_request"):
                key = hmac.new(key, part.encode(), hashlib.sha256).digest()
            signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
            request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT", data=b"")
            request.add_header("x-amz-date", stamp)
            request.add_header("x-amz-content-sha256", body_hash)
            request.add_header("Authorization", f"AWS4-HMAC-SHA256 Credential={user}/{scope}, SignedHeaders={signed}, Signature={signature}")
            try:
                urllib.request.urlopen(request, timeout=10).close()
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        raise RuntimeError(f"could not make bucket {name}")

    def stop(self) -> None:
        """Asks MinIO to stop, and kills it if it has not within 30 s: a
        stop never holds the suite up (test/support/servers.rb does the
        same for Ruby's servers)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="session")
def minio(tmp_path_factory):
    server = Minio(tmp_path_factory.mktemp("minio"))
    yield server
    server.stop()


class Nginx:
    """nginx serving a temporary directory at ``/files/``, from the template
    the Rust and Ruby tests use (test/support/nginx.conf); its access log
    records each request's URI and Authorization header."""

    def __init__(self, dir: pathlib.Path) -> None:
        import shutil

        if shutil.which("nginx") is None and not pathlib.Path("/usr/sbin/nginx").exists():
            skip_or_fail("HASHFILE_REQUIRE_NGINX", "nginx is not installed (bin/setup --all installs nginx-light)")
        self.dir = dir
        self.root = dir / "root"
        (self.root / "files").mkdir(parents=True)
        self.port = _free_port()
        config = (
            (ROOT / "test/support/nginx.conf")
            .read_text()
            .replace("@DIR@", str(dir))
            .replace("@ROOT@", str(self.root))
            .replace("@H2_PORT@", str(_free_port()))
            .replace("@PORT@", str(self.port))
        )
        (dir / "nginx.conf").write_text(config)
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.process = subprocess.Popen(
            [binary, "-p", str(dir), "-c", str(dir / "nginx.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for(self.port, self.process, "nginx")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def publish(self, name: str, source: pathlib.Path) -> None:
        """``/files/NAME`` becomes a copy of ``source``, by rename."""
        import shutil

        temp = self.root / f".{name}.tmp"
        shutil.copyfile(source, temp)
        temp.rename(self.root / "files" / name)

    def authorizations(self) -> list[tuple[str, str | None]]:
        """(URI, Authorization header or None) of every request so far."""
        import time

        log = self.dir / "access.log"
        text = log.read_text() if log.exists() else ""
        while True:
            time.sleep(0.03)
            again = log.read_text() if log.exists() else ""
            if len(again) == len(text):
                break
            text = again
        found = []
        for line in text.splitlines():
            quoted = line.split('"')
            found.append((quoted[1], None if quoted[5] == "-" else quoted[5]))
        return found

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def nginx(tmp_path_factory):
    server = Nginx(tmp_path_factory.mktemp("nginx"))
    yield server
    server.stop()


@pytest.fixture
def another_nginx(tmp_path_factory):
    server = Nginx(tmp_path_factory.mktemp("nginx"))
    yield server
    server.stop()
