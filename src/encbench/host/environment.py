"""Environment metadata recorded in every result file."""

from __future__ import annotations

import os
import platform
import sys

import psutil

from .. import __version__
from . import oscache

CPU_FLAGS = ("aes", "pclmulqdq", "sha_ni", "vaes", "vpclmulqdq", "avx", "avx2", "avx512f")


def cpu_info() -> dict:
    model, flags = platform.processor() or "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name":
                    model = value.strip()
                elif key == "flags":
                    flags = set(value.split())
                if model != "unknown" and flags:
                    break
    except OSError:
        pass
    return {
        "model": model,
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "flags": {flag: flag in flags for flag in CPU_FLAGS},
    }


def collect(engine_versions: dict, data_dir) -> dict:
    from cryptography.hazmat.backends.openssl import backend

    import cryptography

    return {
        "encbench": __version__,
        "cpu": cpu_info(),
        "memory_bytes": psutil.virtual_memory().total,
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "engine_versions": engine_versions,
        "crypto_libraries": {
            "cryptography": cryptography.__version__,
            "cryptography_openssl": backend.openssl_version_text(),
        },
        "os_cache": oscache.capabilities(data_dir),
    }
