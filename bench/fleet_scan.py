"""How fast `encbench tls-scan --targets` scans a fleet: 200 local endpoints at --jobs 1, 8 and 32.

    .venv/bin/python bench/fleet_scan.py [--targets 200] [--pg 3] [--mariadb 1] [--jobs 1,8,32]
                                         [--jobs1-targets 20] [--timeout 600]

The fleet: a few real servers started as the tests start them (the engines' start_scan_server: PostgreSQL and
MariaDB with TLS on a self-signed certificate), and lightweight endpoints to reach the count: each one a
listening socket in this process that answers PostgreSQL's SSLRequest with 'S' and then does a real TLS
handshake (Python's ssl, OpenSSL; one self-signed RSA-2048 certificate from engines/local/certs.py), served by
a pool of threads. They come in four TLS configurations a fleet has (modern TLS 1.2+1.3 AEAD only, TLS 1.2 with
CBC suites too, TLS 1.3 only, legacy TLS 1.0+ at OpenSSL security level 0), so the scans differ in length
as real ones do.

The scanner is the real CLI in a subprocess (`encbench tls-scan --targets FILE --jobs N --format jsonl`):
wall time from start to exit, targets per second, and its peak memory (RSS of the process, sampled every 20 ms
with psutil; VmHWM from /proc as a check), the total handshakes its scans made, the CPU seconds of the
scanner (the child's rusage) and of the lightweight endpoints (this process's; the real servers' own CPU is
not in it), and the 1-minute load average at the end (other work on the machine slows the wall time, not
the CPU seconds). Every target
must be scanned (exit 0 for each): a run with a failed target is reported as such, never as a rate.
--jobs 1 scans the first --jobs1-targets targets only (200 one after another take minutes): its rate is
labelled with the count it measured. Both sides run on this machine's CPUs: the rate is the machine's,
servers included.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from encbench.engines import ENGINES
from encbench.engines.local import certs
from encbench.host import sslctl

SSLREQUEST = struct.pack("!II", 8, 80877103)

# the key-exchange groups each endpoint accepts: PostgreSQL's default (ssl_ecdh_curve = prime256v1), as the endpoints
# stand for PostgreSQL servers (OpenSSL's own server default would also accept ffdhe2048..8192, which no PostgreSQL
# does: each ffdhe8192 handshake costs both sides about 0.3 s of CPU)
GROUPS = "prime256v1"
PROFILES = {  # name -> (minimum version, maximum version, TLS <= 1.2 cipher string)
    "modern": (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3, "ECDHE+AESGCM:ECDHE+CHACHA20"),
    "compat": (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3, "ECDHE+AESGCM:ECDHE+CHACHA20:ECDHE+AES"),
    "tls13": (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3, "ECDHE+AESGCM"),
    "legacy": (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_3, "DEFAULT:@SECLEVEL=0"),
}


class Endpoints:
    """n listening sockets on 127.0.0.1 speaking the PostgreSQL TLS preamble, one selector thread accepting,
    a thread pool doing the handshakes (OpenSSL releases the GIL while it computes)."""

    def __init__(self, n: int, cert_dir: Path, workers: int = 64):
        crt, key = certs.self_signed(cert_dir)
        self.contexts = {}
        for name, (lo, hi, ciphers) in PROFILES.items():
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version, ctx.maximum_version = lo, hi
            ctx.set_ciphers(ciphers)
            if not sslctl.set_groups(ctx, GROUPS):
                raise SystemExit(f"this OpenSSL does not take the groups {GROUPS!r}")
            ctx.load_cert_chain(crt, key)
            self.contexts[name] = ctx
        names = list(PROFILES)
        self.sel = selectors.DefaultSelector()
        self.listeners = []
        self.ports = []
        for i in range(n):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            s.listen(64)
            s.setblocking(False)
            profile = names[i % len(names)]
            self.sel.register(s, selectors.EVENT_READ, profile)
            self.listeners.append(s)
            self.ports.append((s.getsockname()[1], profile))
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="endpoint")
        self.stopping = False
        self.thread = threading.Thread(target=self._accept_loop, daemon=True)
        self.thread.start()

    def _accept_loop(self) -> None:
        while not self.stopping:
            for key, _ in self.sel.select(timeout=0.2):
                try:
                    conn, _ = key.fileobj.accept()
                except (BlockingIOError, OSError):
                    continue
                self.pool.submit(self._serve, conn, self.contexts[key.data])

    @staticmethod
    def _serve(conn: socket.socket, ctx: ssl.SSLContext) -> None:
        conn.setblocking(True)
        conn.settimeout(10)
        try:
            buf = b""
            while len(buf) < 8:
                chunk = conn.recv(8 - len(buf))
                if not chunk:
                    return
                buf += chunk
            if buf != SSLREQUEST:
                return  # not a PostgreSQL client (e.g. direct TLS): hang up, as PostgreSQL 15 does
            conn.sendall(b"S")
            tls = ctx.wrap_socket(conn, server_side=True)
            try:
                tls.recv(1)  # until the client hangs up
            except (OSError, ssl.SSLError):
                pass
            tls.close()
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stopping = True
        self.thread.join()
        for s in self.listeners:
            self.sel.unregister(s)
            s.close()
        self.pool.shutdown(wait=True)


def run_scan(targets_file: Path, jobs: int, timeout: float) -> dict:
    cmd = [str(Path(sys.executable).parent / "encbench"), "tls-scan", "--targets", str(targets_file),
           "--jobs", str(jobs), "--format", "jsonl", "--timeout", str(timeout)]
    kids0, self0 = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    peak, hwm = 0, None
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    while proc.poll() is None:
        try:
            peak = max(peak, ps.memory_info().rss)
            with open(f"/proc/{proc.pid}/status") as f:
                hwm = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM")), hwm)
        except (psutil.Error, OSError):
            pass
        time.sleep(0.02)
    wall = time.monotonic() - start
    kids1, self1 = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    reader.join()
    err = proc.stderr.read()
    rows = [json.loads(line) for line in "".join(out).splitlines() if line.strip()]
    failed = [r for r in rows if r["exit_code"] != 0]
    return {"jobs": jobs, "targets": len(rows), "wall_s": wall, "targets_per_s": len(rows) / wall if wall else None,
            "peak_rss_mb": peak / 2**20, "vm_hwm_mb": hwm / 2**20 if hwm else None, "exit": proc.returncode,
            "failed": [(r["target"], r["error"]) for r in failed], "stderr": err.strip()[-500:],
            "handshakes": sum((r.get("scan") or {}).get("handshakes", 0) for r in rows),
            "slowest_target_s": max((r["seconds"] for r in rows), default=None),
            "scanner_cpu_s": (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime),
            "endpoints_cpu_s": (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime),
            "load_average_1min": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", type=int, default=200)
    ap.add_argument("--pg", type=int, default=3, help="real PostgreSQL servers among the targets")
    ap.add_argument("--mariadb", type=int, default=1, help="real MariaDB servers among the targets")
    ap.add_argument("--jobs", default="1,8,32")
    ap.add_argument("--jobs1-targets", type=int, default=20, help="targets scanned at --jobs 1")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    servers, endpoints = [], None
    with tempfile.TemporaryDirectory(prefix="encbench-fleet-") as tmp:
        try:
            lines = []
            t0 = time.monotonic()
            for engine, count in (("postgres", args.pg), ("mariadb", args.mariadb)):
                for _ in range(count):
                    srv = ENGINES.get(engine).start_scan_server({})
                    servers.append(srv)
                    lines.append(f"127.0.0.1:{srv.port}/{engine}  # real {engine}")
            n_light = args.targets - len(lines)
            endpoints = Endpoints(n_light, Path(tmp))
            lines += [f"127.0.0.1:{port}/postgres  # lightweight, {profile}" for port, profile in endpoints.ports]
            print(f"fleet: {len(servers)} real servers ({args.pg} PostgreSQL, {args.mariadb} MariaDB) and {n_light} "
                  f"lightweight endpoints, up in {time.monotonic() - t0:.1f} s; CPUs: {os.cpu_count()}", flush=True)
            # real servers first, so that the --jobs 1 subset holds them too
            full, small = Path(tmp) / "fleet.txt", Path(tmp) / "fleet-small.txt"
            full.write_text("\n".join(lines) + "\n")
            small.write_text("\n".join(lines[:args.jobs1_targets]) + "\n")
            print(f"{'jobs':>4} {'targets':>7} {'wall s':>8} {'targets/s':>9} {'peak RSS MB':>11} {'handshakes':>10} "
                  f"{'slowest s':>9} {'CPU s scanner':>13} {'CPU s endpoints':>15} {'load':>5}  result", flush=True)
            results = []
            for jobs in (int(x) for x in args.jobs.split(",")):
                r = run_scan(small if jobs == 1 else full, jobs, args.timeout)
                results.append(r)
                verdict = "all scanned" if not r["failed"] and r["exit"] == 0 else \
                    f"exit {r['exit']}, {len(r['failed'])} failed: {r['failed'][:3]} {r['stderr']}"
                print(f"{jobs:>4} {r['targets']:>7} {r['wall_s']:>8.1f} {r['targets_per_s']:>9.2f} "
                      f"{r['peak_rss_mb']:>11.1f} {r['handshakes']:>10} {r['slowest_target_s']:>9.1f} "
                      f"{r['scanner_cpu_s']:>13.1f} {r['endpoints_cpu_s']:>15.1f} {r['load_average_1min']:>5.1f}  {verdict}",
                      flush=True)
            print(json.dumps({"load_average_at_end": os.getloadavg(), "runs": results}, indent=1))
            return 0 if all(not r["failed"] and r["exit"] == 0 for r in results) else 1
        finally:
            if endpoints is not None:
                endpoints.close()
            for srv in servers:
                srv.stop()


if __name__ == "__main__":
    sys.exit(main())
