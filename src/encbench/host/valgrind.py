"""valgrind on this machine: where it is, the callgrind command line encbench uses, the client requests a
Python process sends to the callgrind counting it, and the CPU valgrind simulates.

Client requests without a compiler: valgrind recognises a fixed x86-64 instruction sequence (four
rotations of rdi that leave it unchanged, then `xchg rbx, rbx`) and runs the request whose arguments
rax points to; on a real CPU the sequence does nothing and returns the default. The few bytes below are
that sequence (valgrind.h's VALGRIND_DO_CLIENT_REQUEST_EXPR) as a function called through ctypes.
The CPUID function is the same idea: valgrind emulates the instruction, so under valgrind it answers with
the simulated CPU's features (reading /proc/cpuinfo there would show the host's).
"""

from __future__ import annotations

import ctypes
import functools
import json
import mmap
import os
import platform
import shutil
import subprocess
import sys

from ..errors import EngineUnavailableError

INSTALL_HINT = "install it with: apt-get install valgrind"

# (%rdi = the argument block, %rsi = the default) -> %rdx after the magic sequence
_REQUEST_CODE = bytes.fromhex("4889f8" "4889f2" "48c1c703" "48c1c70d" "48c1c73d" "48c1c733" "4887db" "4889d0" "c3")
# (edi = leaf, esi = subleaf, rdx = 4 x uint32 out): eax, ebx, ecx, edx; rbx saved (callee-saved)
_CPUID_CODE = bytes.fromhex("53" "4989d0" "89f8" "89f1" "0fa2" "418900" "41895804" "41894808" "4189500c" "5b" "c3")

RUNNING_ON_VALGRIND = 0x1001
_CT = (ord("C") << 24) | (ord("T") << 16)  # callgrind's requests (callgrind.h)
DUMP_STATS, ZERO_STATS, TOGGLE_COLLECT, DUMP_STATS_AT, START_INSTRUMENTATION, STOP_INSTRUMENTATION = range(_CT, _CT + 6)


def find() -> str:
    """The valgrind executable, or EngineUnavailableError (exit 10) with the line that installs it."""
    path = shutil.which("valgrind")
    if not path:
        raise EngineUnavailableError("valgrind not found: --meter instructions counts instructions under valgrind's "
                                     "callgrind", hint=INSTALL_HINT)
    return path


@functools.cache
def version() -> str:
    try:
        out = subprocess.run([find(), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "?"
    return out.stdout.strip().removeprefix("valgrind-") or "?"


def start_timeout(default: float) -> float:
    """How long a process started under valgrind may take to be ready: `default`, or ENCBENCH_VALGRIND_START_TIMEOUT_S
    (a slow machine; the tests shorten it to see the time-out's error)."""
    try:
        return float(os.environ.get("ENCBENCH_VALGRIND_START_TIMEOUT_S") or default)
    except ValueError:
        return default


def supported_machine() -> bool:
    return platform.machine() in ("x86_64", "AMD64")


# valgrind's gdbserver is on by default: each process under valgrind makes three vgdb-pipe-* FIFOs in $TMPDIR, which
# stay when it is killed (and even after a clean interrupt). Nothing here debugs a process: none are made.
NO_VGDB = "--vgdb=no"


def callgrind_argv(out_pattern: str, *, cache_sim: bool, options: tuple[str, ...] = (), log_file: str | None = None
                   ) -> list[str]:
    """valgrind's part of a command line: callgrind, no gdbserver (no vgdb-pipe-* files), one output file per
    process (%p) and dump, no per-instruction detail (function and line costs are enough), the cache simulation
    when asked, and the caller's options."""
    argv = [find(), "--tool=callgrind", "-q", NO_VGDB, f"--callgrind-out-file={out_pattern}", "--dump-instr=no",
            f"--cache-sim={'yes' if cache_sim else 'no'}"]
    if log_file:
        argv.append(f"--log-file={log_file}")
    return argv + list(options)


# -- in-process: the requests, and CPUID -----------------------------------------------------------


class _Code:
    """A few bytes of machine code in an executable page, callable through ctypes."""

    def __init__(self, code: bytes, restype, argtypes):
        self.page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self.page.write(code)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self.page))
        self.fn = ctypes.CFUNCTYPE(restype, *argtypes)(address)


@functools.cache
def _request_fn() -> _Code:
    return _Code(_REQUEST_CODE, ctypes.c_ulong, (ctypes.POINTER(ctypes.c_ulong), ctypes.c_ulong))


def request(code: int, *args: int, default: int = 0) -> int:
    """One client request (a no-op returning `default` outside valgrind)."""
    if not supported_machine():
        return default
    block = (ctypes.c_ulong * 6)(code, *[int(a) for a in args], *([0] * (5 - len(args))))
    return int(_request_fn().fn(block, default))


def running_on_valgrind() -> bool:
    return request(RUNNING_ON_VALGRIND) > 0


def dump_at(label: bytes) -> None:
    buf = ctypes.create_string_buffer(label)
    request(DUMP_STATS_AT, ctypes.addressof(buf))


@functools.cache
def _cpuid_fn() -> _Code:
    return _Code(_CPUID_CODE, None, (ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint32)))


def cpuid(leaf: int, subleaf: int = 0) -> tuple[int, int, int, int]:
    out = (ctypes.c_uint32 * 4)()
    _cpuid_fn().fn(leaf, subleaf, out)
    return out[0], out[1], out[2], out[3]


# the CPU features a crypto library chooses its code by: (name as /proc/cpuinfo says it, leaf, subleaf, register, bit)
FEATURES = (
    ("sse4_1", 1, 0, "ecx", 19), ("sse4_2", 1, 0, "ecx", 20), ("ssse3", 1, 0, "ecx", 9),
    ("pclmulqdq", 1, 0, "ecx", 1), ("aes", 1, 0, "ecx", 25), ("avx", 1, 0, "ecx", 28), ("movbe", 1, 0, "ecx", 22),
    ("bmi1", 7, 0, "ebx", 3), ("avx2", 7, 0, "ebx", 5), ("bmi2", 7, 0, "ebx", 8), ("adx", 7, 0, "ebx", 19),
    ("sha_ni", 7, 0, "ebx", 29), ("avx512f", 7, 0, "ebx", 16), ("avx512dq", 7, 0, "ebx", 17),
    ("avx512ifma", 7, 0, "ebx", 21), ("avx512bw", 7, 0, "ebx", 30), ("avx512vl", 7, 0, "ebx", 31),
    ("gfni", 7, 0, "ecx", 8), ("vaes", 7, 0, "ecx", 9), ("vpclmulqdq", 7, 0, "ecx", 10),
)
_REGISTERS = {"eax": 0, "ebx": 1, "ecx": 2, "edx": 3}


def cpu_features() -> list[str]:
    """The FEATURES this process's CPU reports through CPUID (the simulated one's under valgrind)."""
    if not supported_machine():
        return []
    max_leaf = cpuid(0)[0]
    out = []
    for name, leaf, sub, reg, bit in FEATURES:
        if leaf <= max_leaf and cpuid(leaf, sub)[_REGISTERS[reg]] >> bit & 1:
            out.append(name)
    return out


def simulated_cpu_features(timeout: float = 120) -> list[str] | None:
    """The features of the CPU valgrind simulates: this module's CPUID under `valgrind --tool=none`; None when
    it cannot be run."""
    code = "import json; from encbench.host.valgrind import cpu_features; print(json.dumps(cpu_features()))"
    try:
        done = subprocess.run([find(), "--tool=none", "-q", NO_VGDB, sys.executable, "-c", code], capture_output=True,
                              text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=_src_path()))
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, EngineUnavailableError):
        return None


def _src_path() -> str:
    """The directory this package is imported from, first on a child's path (a test's checkout, not another)."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.pathsep.join([here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
