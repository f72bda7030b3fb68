"""`encbench list`: engines, workloads, variants, params and probes, from the registries."""

from __future__ import annotations

import argparse
import json
from ..engines import ENGINES
from ..vocab.variants import PLACEBO_KEY
from ..probes import PROBES
from ..workloads import WORKLOADS, capabilities


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")


def cmd_list(args) -> int:
    data = {
        "engines": {n: e.description for n, e in ENGINES.items()},
        "workloads": {n: w.description for n, w in WORKLOADS.items()},
        # what each engine lists and its session can serve (workloads/capabilities.py)
        "supported": {n: list(capabilities.supported(e, WORKLOADS)) for n, e in ENGINES.items()},
        "variants": {f"{n}:{k.name}": f"{k.description} (default {','.join(k.default)}"
                     + "".join(f"; {w}: {','.join(k.default_for(w)) or 'only when named'}"
                               for w in dict.fromkeys((*k.named_only, *dict(k.workload_defaults)))) + ")"
                     + (f"; workloads {','.join(k.workloads)}" if k.workloads else "")
                     for n, e in ENGINES.items() for k in e.variant_keys}
                    | {"*:placebo": PLACEBO_KEY.description},
        "params": {f"{w.name}:{p.name}": f"{p.description} (default {p.default}, --quick {p.quick})"
                   for n, w in WORKLOADS.items() for p in w.params},
        "probes": {n: p.description for n, p in PROBES.items()},
    }
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    for section, items in data.items():
        print(f"{section}:")
        if not items:
            continue
        width = max(len(k) for k in items)
        for k, v in items.items():
            print(f"  {k:<{width}}  {v if isinstance(v, str) else ', '.join(v)}")
    return 0
