"""estimate --live on MariaDB: the rate of each term of the encryption bill from SHOW GLOBAL STATUS, and the setup
from SHOW GLOBAL VARIABLES, read-only (SHOW only: no SET, no FLUSH).

- page reads: Innodb_buffer_pool_reads (pages read from storage into the buffer pool: each decrypted once);
- page writes: Innodb_pages_written;
- log bytes: Innodb_os_log_written (redo), plus Binlog_bytes_written where a binary log is written;
- temporary file bytes: absent (MariaDB counts temporary files made, not their bytes);
- new TLS sessions: Ssl_finished_accepts less Ssl_session_cache_hits (full handshakes); resumptions:
  Ssl_session_cache_hits;
- bytes over TLS: Bytes_sent + Bytes_received, times the share of connections made over TLS since the server
  started (Ssl_finished_accepts / Connections); TLS records received and sent by the server (MariaDB counts
  none): those bytes times the records received, and sent, per byte on the server's TCP sockets, from the kernel's
  own counters (host/sockets.py: tcp_info through sock_diag; a record is a TCP segment that carried data). The bytes are
  MariaDB's own count (every connection, Unix socket or TCP, short or long), the sockets give only the shape (bytes
  per segment) of the connections a look saw. Where the server is not on this host, or no TCP socket carried a
  byte, Questions as the requests received and the results sent (one each per statement), said as assumed.
"""

from __future__ import annotations

from ...host import sockets
from ...vocab.live import COMMITS_AS_LOG, LiveRates, LiveSampler, per_second

STATUS = ("Innodb_buffer_pool_reads", "Innodb_pages_written", "Innodb_os_log_written", "Binlog_bytes_written",
          "Ssl_finished_accepts", "Ssl_session_cache_hits", "Bytes_sent", "Bytes_received", "Questions",
          "Connections")
VARIABLES = ("innodb_page_size", "log_bin", "have_ssl", "version", "file_key_management_encryption_algorithm",
             "innodb_encrypt_log", "encrypt_binlog")
OWN_STATEMENTS = 1  # this sampler's SHOW GLOBAL STATUS, counted in Questions


def _show(conn, what: str, names) -> dict[str, str]:
    cur = conn.cursor()
    cur.execute(f"SHOW GLOBAL {what} WHERE Variable_name IN ({', '.join(['%s'] * len(names))})", tuple(names))
    return {k: v for k, v in cur.fetchall()}


def facts(conn) -> dict:
    v = _show(conn, "VARIABLES", VARIABLES)
    algo = v.get("file_key_management_encryption_algorithm")  # absent: the key management plugin is not loaded
    return {"engine": "mariadb", "version": v.get("version", "?"), "page_size": int(v.get("innodb_page_size", 16384)),
            "cipher": algo, "log_bin": v.get("log_bin") == "ON", "ssl": v.get("have_ssl") == "YES",
            "encrypt_log": v.get("innodb_encrypt_log"), "encrypt_binlog": v.get("encrypt_binlog")}


def sample(conn) -> dict[str, float]:
    return {k: float(v) for k, v in _show(conn, "STATUS", STATUS).items()}


def _records(f: dict, tls_bytes: float, statements: float, share: float, word: str) -> dict:
    """TLS records received and sent by the server per second: the TLS bytes x the data segments received and sent
    per byte on the server's TCP sockets, or (no socket counter, or no byte on a TCP socket) one request received and
    one result sent per statement (Questions), said as assumed."""
    counter = f.get("sockets")
    seen = counter.totals() if counter is not None else None
    if seen is not None and seen.bytes > 0 and seen.messages_in is not None and seen.messages_out is not None:
        where = (f"(TCP segments that carried data, on the server's {seen.sockets} TCP sockets seen: "
                 f"{sockets.blind_spot(counter.discover_s, LiveSampler.LOOK_S)})")
        return {name: (tls_bytes * n / seen.bytes, f"Bytes_sent + Bytes_received {word}, x {n / seen.bytes * 1000:.3g} "
                       f"records {way} per kB {where}", None)
                for name, n, way in (("tls_records_in", seen.messages_in, "received"),
                                     ("tls_records_out", seen.messages_out, "sent"))}
    why = (f.get("sockets_why") or "no socket counter was set up") if counter is None else \
        "no byte crossed the server's TCP sockets in the window"
    return {name: (statements * share, f"assumed: Questions as {what} (one per statement) {word} ({why})", None)
            for name, what in (("tls_records_in", "requests received"), ("tls_records_out", "results sent"))}


def _tls(first: dict, last: dict, seconds: float, all_tls: bool, f: dict | None = None) -> dict:
    def rate(name):
        return per_second(first, last, name, seconds)

    resumed = rate("Ssl_session_cache_hits")
    if all_tls:
        share, word = 1.0, "every connection priced as TLS (--all-tls)"
        full = rate("Connections") - resumed
    else:
        share = last["Ssl_finished_accepts"] / last["Connections"] if last.get("Connections") else 0.0
        word = f"x {share:.0%} of connections on TLS since the server started (Ssl_finished_accepts / Connections)"
        full = rate("Ssl_finished_accepts") - resumed
    statements = rate("Questions") - OWN_STATEMENTS / seconds
    tls_bytes = (rate("Bytes_sent") + rate("Bytes_received")) * share
    return {"tls_handshakes": (full, "Ssl_finished_accepts - Ssl_session_cache_hits" if not all_tls
                               else "Connections - Ssl_session_cache_hits (--all-tls)", None),
            "tls_resumptions": (resumed, "Ssl_session_cache_hits", None),
            "tls_bytes": (tls_bytes, f"Bytes_sent + Bytes_received {word}", None),
            **_records(f or {}, tls_bytes, statements, share, word)}


# the logs whose bytes the log term prices, each where the server encrypts it: (counter, its words, the setting)
LOGS = (("Innodb_os_log_written", "Innodb_os_log_written (redo)", "encrypt_log"),
        ("Binlog_bytes_written", "Binlog_bytes_written (binary log)", "encrypt_binlog"))


def _log(first: dict, last: dict, seconds: float, f: dict) -> tuple[tuple | None, str | None]:
    """The log term ((rate, source, None), None) over the logs this server encrypts (the redo log with
    innodb_encrypt_log=ON, the binary log with log_bin and encrypt_binlog=ON), or (None, why it is absent): a log
    written in the clear costs no encryption (the tables' pages are priced whatever their setting: what encrypting
    them costs)."""
    on = [(name, words) for name, words, setting in LOGS
          if str(f.get(setting) or "").upper() == "ON" and (setting != "encrypt_binlog" or f.get("log_bin"))]
    if not on:
        return None, (f"this server writes its logs in the clear (innodb_encrypt_log={f.get('encrypt_log') or '?'}"
                      f"{', encrypt_binlog=' + str(f.get('encrypt_binlog') or '?') if f.get('log_bin') else ''}): "
                      "no log byte is encrypted")
    return (sum(per_second(first, last, name, seconds) for name, _ in on), " + ".join(w for _, w in on), None), None


def rates(first: dict, last: dict, seconds: float, all_tls: bool, f: dict) -> LiveRates:
    out = {"reads": (per_second(first, last, "Innodb_buffer_pool_reads", seconds), "Innodb_buffer_pool_reads", None),
           "writes": (per_second(first, last, "Innodb_pages_written", seconds), "Innodb_pages_written", None)}
    absent = {"temp_bytes": "MariaDB counts temporary files made (Created_tmp_files), not their bytes",
              "commits": COMMITS_AS_LOG}
    log, why = _log(first, last, seconds, f)
    if log is None:
        absent["log_bytes"] = why
    else:
        out["log_bytes"] = log
    if f["ssl"] or all_tls:
        out.update(_tls(first, last, seconds, all_tls, f))
    else:
        absent.update({k: "have_ssl is not YES on this server (--all-tls prices TLS for every connection)"
                       for k in ("tls_handshakes", "tls_resumptions", "tls_bytes", "tls_records_in", "tls_records_out")})
    return LiveRates(out, absent, f, seconds)


def sampler(conn) -> LiveSampler:
    f = facts(conn)
    port = int(_show(conn, "VARIABLES", ("port",)).get("port") or 0)
    sock = getattr(conn, "_sock", None)
    f["sockets"], f["sockets_why"] = sockets.for_server(port, sock.fileno() if sock is not None else None)
    counter = f["sockets"]

    def sample_all(c) -> dict[str, float]:
        if counter is not None:
            counter.sample(full=True)  # the window's first and last look: every socket
        return sample(c)

    return LiveSampler(conn, sample_all, rates, f, None, counter.sample if counter is not None else None)


# `encbench calibrate` (Engine.calibration_not_fitted, read by analysis/calibration.py): the terms its designed mixes do
# not fit on MariaDB, each with the run that would measure it
NOT_FITTED = {
    "log_bytes": "the calibrated mixes' encrypted and plain schemas share one redo log (innodb_encrypt_log is "
                 "server-wide, so it cancels); what would measure it: encbench run --engine mariadb --workload oltp "
                 "--variant script=oltp_read_write --variant encrypt_log=off,on",
    "temp_bytes": "no calibrated mix spills to temporary files, and MariaDB counts temporary files, not their bytes; "
                  "what would measure it: encbench run --engine mariadb --workload sort --variant encrypt_tmp_files="
                  "off,on",
    "tls_resumptions": "no calibrated mix resumes a TLS session (each of encbench's connections is a full "
                       "handshake)",
}
