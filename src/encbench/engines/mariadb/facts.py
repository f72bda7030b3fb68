"""What a MariaDB server is, read from the server itself once per run (engine.prepare): version, TLS, page size,
performance_schema, the encryption plugins and the cipher InnoDB's pages are encrypted with, and the address the
benchmark's clients reach it at (for the result file's header)."""

from __future__ import annotations

# the cipher of the encryption service when the key management plugin does not say (file_key_management is the
# one with a setting for it; its default, and the service's, is AES_CBC)
DEFAULT_ALGORITHM = "AES_CBC"
ALGORITHM_VARIABLE = "file_key_management_encryption_algorithm"


def address(params: dict) -> tuple[str, int | None, str]:
    """(host, port, 'host:port') the clients connect to; over a Unix socket: (its path, None, its path)."""
    if params.get("unix_socket"):
        return str(params["unix_socket"]), None, str(params["unix_socket"])
    host, port = str(params.get("host") or "localhost"), int(params.get("port") or 3306)
    return host, port, f"{host}:{port}"


def algorithm(value: str | None) -> tuple[str, str]:
    """(the cipher in capitals, where that came from) from the server's file_key_management_encryption_algorithm
    (None: the variable does not exist, no file_key_management plugin: the service's default)."""
    if value:
        return str(value).upper(), ALGORITHM_VARIABLE
    return DEFAULT_ALGORITHM, f"no {ALGORITHM_VARIABLE} on this server: the encryption service's default"


def _waits_consumer(cur) -> bool:
    try:
        cur.execute("SELECT ENABLED FROM performance_schema.setup_consumers WHERE NAME = 'events_waits_current'")
        row = cur.fetchone()
    except Exception:
        return False
    return bool(row and row[0] == "YES")


def server_facts(cur, clients: dict) -> dict:
    """The server's own word on what it is; `clients`: the connection parameters the benchmark's clients use."""
    def var(name: str) -> str | None:
        cur.execute("SHOW GLOBAL VARIABLES LIKE %s", (name,))
        row = cur.fetchone()
        return row[1] if row else None

    cur.execute("SELECT PLUGIN_NAME FROM information_schema.PLUGINS WHERE PLUGIN_TYPE = 'ENCRYPTION' "
                "AND PLUGIN_STATUS = 'ACTIVE'")
    plugins = [r[0] for r in cur.fetchall()]
    ps = var("performance_schema")
    algo, algo_source = algorithm(var(ALGORITHM_VARIABLE))
    host, port, where = address(clients)
    return {
        "version": var("version"), "have_ssl": var("have_ssl"), "ssl_library": var("version_ssl_library"),
        "innodb_page_size": var("innodb_page_size"), "performance_schema": ps,
        "waits_consumer": _waits_consumer(cur) if ps == "ON" else False, "encryption_plugins": plugins,
        "encryption_algorithm": algo, "encryption_algorithm_source": algo_source,
        "innodb_encrypt_tables": var("innodb_encrypt_tables") or "OFF",
        "innodb_encrypt_log": var("innodb_encrypt_log"), "innodb_flush_method": var("innodb_flush_method"),
        "buffer_pool_bytes": int(var("innodb_buffer_pool_size") or 0),
        "host": host, "port": port, "address": where,
    }


# the instance-level settings that decide what is encrypted besides the tables (the result file's instance_settings)
INSTANCE_VARIABLES = ("file_key_management_encryption_algorithm", "innodb_encrypt_tables", "innodb_encrypt_log",
                      "innodb_encrypt_temporary_tables", "encrypt_tmp_files", "encrypt_binlog", "aria_encrypt_tables",
                      "log_bin")


def instance_settings(cur) -> dict[str, str]:
    """The server's own values of INSTANCE_VARIABLES (those it has), in capitals."""
    cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ",".join(["%s"] * len(INSTANCE_VARIABLES)) + ")",
                INSTANCE_VARIABLES)
    return {k: str(v).upper() for k, v in cur.fetchall()}
