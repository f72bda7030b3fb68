"""Every module of src/encbench imports on its own (issue 29): `import encbench.workloads` once failed on a cycle
(workloads/base -> engines/__init__ -> engines/mariadb/engine -> workloads/oltp) that an import from another
module first had hidden.

One fresh interpreter imports each module in turn with every encbench module forgotten before it (third-party
packages stay loaded, which only saves time: a cycle among encbench's own modules shows all the same).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

_PROBE = r"""
import importlib, json, sys, traceback
from pathlib import Path
src = Path(sys.argv[1])
part, parts = int(sys.argv[2]), int(sys.argv[3])
names = sorted(".".join(p.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
               for p in (src / "encbench").rglob("*.py"))[part::parts]
failed = {}
for name in names:
    for key in [k for k in sys.modules if k == "encbench" or k.startswith("encbench.")]:
        del sys.modules[key]
    try:
        importlib.import_module(name)
    except BaseException as e:  # SystemExit too: importing a module must not run a command
        failed[name] = traceback.format_exception_only(type(e), e)[-1].strip()
print(json.dumps({"count": len(names), "failed": failed}))
"""


PARTS = max(2, os.cpu_count() or 2)  # interpreters side by side: the check takes a few seconds per core, not a minute


def test_every_module_imports_on_its_own():
    procs = [subprocess.Popen([sys.executable, "-c", _PROBE, str(SRC), str(i), str(PARTS)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=SRC.parent) for i in range(PARTS)]
    count, failed = 0, {}
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        got = json.loads(out.strip().splitlines()[-1])
        count += got["count"]
        failed.update(got["failed"])
    assert count > 150  # the walk found the package
    assert failed == {}, "modules that fail to import first:\n" + "\n".join(f"  {k}: {v}" for k, v in failed.items())
