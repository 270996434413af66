"""A throw-away single-node Ceph cluster with an S3 gateway (RGW), for the immutability tests.

Ceph RGW enforces Object Lock retention like AWS S3, so promoted copies can be shown to be
undeletable on a real server. One monitor, one OSD on memstore (RAM, nothing on disk but the
monitor's store), one radosgw; no cephx (``auth_* = none``) and CRC-only messenger modes, all on
127.0.0.1 with free ports, in one temporary directory. The Debian packages ``ceph-mon``,
``ceph-osd`` and ``radosgw`` provide the binaries (``.ci/ceph-install.sh``).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from wheelgate.core.objects import META_SHA256, sha256_b64_to_hex

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

REQUIRED_BINARIES = ("monmaptool", "ceph-mon", "ceph", "ceph-osd", "radosgw", "radosgw-admin")
INSTALL_SCRIPT = ".ci/ceph-install.sh"
ACCESS_KEY = "WHEELGATECEPHTEST000"
SECRET_KEY = "wheelgate-ceph-test-secret-not-a-real-one"
REGION = "us-east-1"
#: Start-up budget: a cold start takes well under this (see the measured time in the tests).
START_TIMEOUT = 60.0


def _record_sha256_in_metadata(params: dict[str, Any], **_: Any) -> None:
    # Ceph RGW (16.2) accepts x-amz-checksum-sha256 on PutObject but neither verifies, stores
    # nor returns it, so a HEAD or a copy of a small object written with Bucket.put has no
    # SHA-256 and the promoter's copy verification (rightly) rejects it. This keeps the hash the
    # client computed from the body in user metadata, where WheelGate already records it for
    # multipart uploads and where Ceph keeps it across copies. Test harness only: the product
    # code is unchanged, and on Ceph the hash is the writer's claim, not a server check.
    checksum = params.get("ChecksumSHA256")
    metadata = params.setdefault("Metadata", {})
    if checksum and META_SHA256 not in metadata:
        metadata[META_SHA256] = sha256_b64_to_hex(checksum)


def _drop_if_match(params: dict[str, Any], **_: Any) -> None:
    # Ceph RGW (16.2) answers 412 to every PutObject with If-Match on a versioned bucket, even
    # with the current ETag, and on an unversioned one unless the ETag is sent without quotes,
    # so the index pages' optimistic update could never succeed. These tests have one writer,
    # so the condition is dropped; the page race is covered against moto. If-None-Match is
    # left as sent (Ceph ignores it on versioned buckets, which is why the promoter HEADs
    # a released key before it copies).
    params.pop("IfMatch", None)


def install_ceph_compatibility(client: S3Client) -> None:
    """Register the Ceph-only request fix-ups on ``client`` (see the handlers' comments)."""
    events = client.meta.events
    events.register("before-parameter-build.s3.PutObject", _record_sha256_in_metadata)
    events.register("before-parameter-build.s3.PutObject", _drop_if_match)


def missing_binaries() -> list[str]:
    """The Ceph programs this harness needs that are not on PATH."""
    return [name for name in REQUIRED_BINARIES if shutil.which(name) is None]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class CephStartError(RuntimeError):
    """The cluster did not come up; the message carries the tail of the daemon logs."""


@dataclass(frozen=True)
class CephEndpoint:
    """Where the gateway listens and the S3 user the tests sign as."""

    endpoint_url: str
    access_key: str
    secret_key: str
    region: str
    #: Seconds from an empty directory to an S3 user able to make requests.
    started_in: float

    def client(self) -> S3Client:
        """A boto3 S3 client signed as the test user (path-style: the host is an IP), with
        :func:`install_ceph_compatibility` applied."""
        client: S3Client = boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            config=Config(
                s3={"addressing_style": "path"},
                retries={"mode": "standard", "max_attempts": 3},
            ),
        )
        install_ceph_compatibility(client)
        return client


@dataclass
class CephCluster:
    """Monitor, OSD and gateway under ``root``; :meth:`stop` kills them and deletes ``root``."""

    root: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.root / "ceph.conf"

    def _write_conf(self, fsid: str, mon_addrs: str, rgw_port: int) -> None:
        root = self.root
        # Pacific's radosgw asks for a "secure" connection to the monitor by default, which
        # needs cephx; every ms_*_mode is therefore pinned to crc.
        self.conf.write_text(
            f"""[global]
fsid = {fsid}
mon host = {mon_addrs}
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
ms cluster mode = crc
ms service mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms mon client mode = crc
ms bind ipv6 = false
osd objectstore = memstore
memstore device bytes = 1073741824
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
run dir = {root}/run
admin socket = {root}/run/$name.asok
pid file = {root}/run/$name.pid
log file = {root}/log/$name.log
keyring = {root}/keyring

[mon.a]
mon data = {root}/mon
public addr = 127.0.0.1

[osd.0]
osd data = {root}/osd0

[client.rgw]
rgw data = {root}/rgw
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw enable apis = s3, admin
rgw dns name = 127.0.0.1
"""
        )

    def _run(self, *args: str, timeout: float = 30) -> str:
        result = subprocess.run(
            [*args, "-c", str(self.conf)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise CephStartError(
                f"{' '.join(args)} exited {result.returncode}: {result.stderr.strip()}\n"
                + self.log_tail()
            )
        return result.stdout

    def _daemon(self, *args: str) -> None:
        log = (self.root / "log" / f"{args[0]}.out").open("wb")
        self.processes.append(
            subprocess.Popen(
                [*args, "-f", "-c", str(self.conf)], stdout=log, stderr=subprocess.STDOUT
            )
        )

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(out)

    def start(self) -> CephEndpoint:
        """Bootstrap the cluster and create the S3 user; raise :class:`CephStartError`."""
        began = time.monotonic()
        for name in ("run", "log", "mon", "osd0", "rgw"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        fsid = str(uuid.uuid4())
        mon_addrs = f"[v2:127.0.0.1:{_free_port()},v1:127.0.0.1:{_free_port()}]"
        rgw_port = _free_port()
        self._write_conf(fsid, mon_addrs, rgw_port)
        monmap = str(self.root / "monmap")
        self._run("monmaptool", "--create", "--fsid", fsid, "--addv", "a", mon_addrs, monmap)
        self._run("ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap)
        self._daemon("ceph-mon", "-i", "a")
        osd_id = self._run("ceph", "--connect-timeout", "20", "osd", "create").strip()
        self._run("ceph-osd", "--mkfs", "-i", osd_id)
        self._daemon("ceph-osd", "-i", osd_id)
        self._daemon("radosgw", "-n", "client.rgw")
        endpoint_url = f"http://127.0.0.1:{rgw_port}"
        self._wait_http(endpoint_url, began + START_TIMEOUT)
        self._run(
            "radosgw-admin",
            "user",
            "create",
            "--uid",
            "wheelgate",
            "--display-name",
            "WheelGate tests",
            "--access-key",
            ACCESS_KEY,
            "--secret",
            SECRET_KEY,
        )
        return CephEndpoint(
            endpoint_url=endpoint_url,
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            started_in=time.monotonic() - began,
        )

    def _wait_http(self, url: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise CephStartError(
                        f"{process.args[0]!r} exited {process.returncode}\n" + self.log_tail()
                    )
            try:
                with urllib.request.urlopen(url, timeout=2):
                    return
            except urllib.error.HTTPError:
                return  # any HTTP answer means the gateway is serving
            except OSError:
                time.sleep(0.2)
        raise CephStartError(f"radosgw did not answer on {url} in time\n" + self.log_tail())

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.processes.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> CephCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        with contextlib.suppress(Exception):
            self.stop()
