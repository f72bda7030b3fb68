"""Issue 23: reading callgrind's output files (host/callgrind.py): the totals of a dump and each function's
own instructions, as `callgrind_annotate --inclusive=no` lists them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from encbench.host import callgrind

# a dump as callgrind writes it (--dump-instr=no, --compress-strings): names given once with an id, then by the id;
# a call's line is the callee's inclusive cost, never the caller's; fi/fe change the file, not the function
DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  /usr/lib/postgresql/15/bin/postgres -D /data
part: 3


desc: I1 cache: 
desc: D1 cache: 
desc: LL cache: 

desc: Timerange: Basic block 100 - 200
desc: Trigger: --dump-before=pg_trigger_depth

positions: line
events: Ir

summary: 1500

ob=(1) /usr/lib/x86_64-linux-gnu/libcrypto.so.3
fl=(1) ???
fn=(1) sha512_block_data_order_avx2
0 1000

ob=(2) /usr/lib/postgresql/15/bin/postgres
fl=(2) ???
fn=(2) secure_write
0 200
cob=(1)
cfi=(1)
cfn=(1)
calls=10 0
0 1000
fi=(3) ./inlined.h
+3 50
fe=(2)
-3 50
cob=(3) /usr/lib/x86_64-linux-gnu/libc.so.6
cfi=(4) ???
cfn=(3) __memcpy_avx_unaligned_erms
calls=2 0
0 100

ob=(3)
fl=(4)
fn=(3)
0 100
fn=(4) free
0 50
fn=(5) 0x00000000001d70e0
0 50

totals: 1500
"""


def test_a_dump_parses_into_totals_and_own_costs():
    d = callgrind.parse(DUMP, "cg.4242.3")
    assert d.pid == 4242 and d.part == 3 and d.trigger == "--dump-before=pg_trigger_depth"
    assert d.events == ["Ir"] and d.instructions == 1500
    own = {f: c["Ir"] for (_, f), c in d.functions.items()}
    # secure_write's own 200 + 50 + 50 (its inlined lines); the calls' lines are its callees' inclusive costs
    assert own == {"sha512_block_data_order_avx2": 1000, "secure_write": 300, "__memcpy_avx_unaligned_erms": 100,
                   "free": 50, "0x00000000001d70e0": 50}
    assert sum(own.values()) == d.instructions
    assert {o for o, _ in d.functions} == {"/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
                                           "/usr/lib/postgresql/15/bin/postgres", "/usr/lib/x86_64-linux-gnu/libc.so.6"}


def test_the_top_functions_keep_what_is_left_out_by_library():
    d = callgrind.parse(DUMP)
    top = d.top(limit=2)
    assert top[:2] == [["/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "sha512_block_data_order_avx2", 1000],
                       ["/usr/lib/postgresql/15/bin/postgres", "secure_write", 300]]
    assert top[2:] == [["/usr/lib/x86_64-linux-gnu/libc.so.6", callgrind.OTHER, 200]]  # memcpy, free, 0x...
    assert sum(n for _, _, n in top) == d.instructions


def test_the_cache_simulation_columns_are_read_by_name():
    text = DUMP.replace("events: Ir", "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw").replace(
        "totals: 1500", "totals: 1500 400 200 3 30 20 1 2 3")
    d = callgrind.parse(text)
    assert d.totals == {"Ir": 1500, "Dr": 400, "Dw": 200, "I1mr": 3, "D1mr": 30, "D1mw": 20, "ILmr": 1, "DLmr": 2,
                        "DLmw": 3}


@pytest.mark.parametrize("text", ["", "just text\n", DUMP.replace("totals: 1500\n", "").replace("summary: 1500", "")])
def test_not_a_whole_dump_is_a_format_error(text):
    with pytest.raises(callgrind.FormatError):
        callgrind.parse(text, "x")


def test_the_parts_of_a_process_in_order(tmp_path):
    for name in ("cg.7.2", "cg.7.10", "cg.7.1", "cg.7", "cg.77.1", "cg.7.x", "other.7.1"):
        (tmp_path / name).write_text("")
    assert [p.name for p in callgrind.parts(tmp_path, 7)] == ["cg.7.1", "cg.7.2", "cg.7.10"]
    assert callgrind.final(tmp_path, 7).name == "cg.7"
    assert callgrind.parts(tmp_path / "missing", 7) == []


@pytest.mark.skipif(not shutil.which("valgrind") or not shutil.which("callgrind_annotate"), reason="valgrind missing")
def test_the_own_costs_are_callgrind_annotates(tmp_path):
    """A real dump (a Python process under callgrind): the same totals and per-function figures as
    `callgrind_annotate --inclusive=no`."""
    out = tmp_path / "cg.out"
    subprocess.run(["valgrind", "--tool=callgrind", "-q", f"--callgrind-out-file={out}", "--dump-instr=no",
                    sys.executable, "-c", "import hashlib; hashlib.sha512(b'x' * 100000).digest()"],
                   check=True, capture_output=True, timeout=300, env=dict(os.environ, PYTHONHASHSEED="0"))
    d = callgrind.read(out)
    done = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out)], check=True,
                          capture_output=True, text=True, timeout=300)
    # a row per function and source file ("file:function", its object named on the first only): summed by function
    rows = re.findall(r"^\s*([\d,]+) \([ \d.]+%\)\s+(\S+)(?: \[[^\]]+\])?\s*$", done.stdout, re.M)
    total = int(re.search(r"^\s*([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", done.stdout, re.M).group(1).replace(",", ""))
    assert d.instructions == total
    listed: dict[str, int] = {}
    for n, where in rows:
        if where != "TOTALS":
            fn = where.rsplit(":", 1)[-1]
            listed[fn] = listed.get(fn, 0) + int(n.replace(",", ""))
    own: dict[str, int] = {}
    for (_, f), c in d.functions.items():
        own[f] = own.get(f, 0) + c["Ir"]
    top = sorted(listed, key=lambda k: -listed[k])[:10]
    assert len(top) == 10 and [own.get(k) for k in top] == [listed[k] for k in top]
