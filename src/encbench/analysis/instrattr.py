"""Where the instructions go (`--meter instructions`, issue 23): the instructions an encrypted variant adds,
by function and library, the added instructions per page beside the raw cipher's, and the CPU-model gap.

Every metered operation stores the functions that executed the most instructions (the probe's
`instructions_profile`: [object, function, own instructions], from callgrind's dump: what
`callgrind_annotate --inclusive=no` lists). For each comparison of a metered row the mean own
instructions of every function over the contender's runs minus the baseline's are the added
instructions of that function; functions are put in groups (GROUPS, after the engine's own
Engine.instruction_groups): the crypto library's cipher and MAC families (AES, SHA-512, GHASH...),
the rest of the crypto library, the TLS library, the engine's page code, memory allocation and
copying, the engine's other code, Python, the C library. A fixed-duration workload (roundtrip) is
attributed per unit of what it got done (per query), as its verdict is.

The CPU-model gap: valgrind's simulated CPU lacks some of this CPU's instructions (the result file's
`meter.missing_cpu_features`), and a crypto library picks its code by the CPU it sees; `meter.code_paths`
(host/cpugap) says, per crypto family, which functions ran under valgrind and which natively. Where
they differ, every figure of that family says so, and instruction counts are not used to rank options.

`instructions(doc, groups, comps)` is computed once by analysis.summary.analyze (`Analysis.instructions`);
`lines` and `headline_figures` word it and compute nothing.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from dataclasses import dataclass

from ..util.units import fmt_count
from . import stats
from ..engines import engine_named
from ..lab.meter import is_metered

PROFILE_KEY = "instructions_profile"
METRIC = "instructions"
MIN_SHARE = 0.01  # a group below 1% of the added instructions is not listed
TOP_FUNCTIONS = 3  # the functions named per group

# (group, regex on the object, regex on the function), first match wins; the engine's own come first
# (host/cpugap names a stripped library's functions by the same families: meter.function_families)
CRYPTO_FAMILIES = (
    ("SHA-512", "", r"sha512|SHA512"),
    ("SHA-256", "", r"sha256|SHA256"),
    ("SHA-1", "", r"sha1_|SHA1"),
    ("MD5", "", r"md5|MD5"),
    ("AES-GCM", "", r"gcm|ghash|GHASH|GCM"),
    ("AES-CBC", "", r"aes.*cbc|cbc.*aes|AES.*CBC|CBC.*AES"),
    ("AES", "", r"aes|AES"),
    ("ChaCha20-Poly1305", "", r"chacha|ChaCha|poly1305|Poly1305"),
    ("HMAC", "", r"HMAC|hmac"),
    ("public-key (handshake)", "", r"^(bn_|BN_|ecp_|ec_|EC_|x25519|X25519|ossl_ec|ossl_bn|RSA_|rsa_|rsaz|mul4x|sqr8x|"
                                   r"__ecp|ecdh|ECDH|ossl_rsa)"),
)
SHARED_GROUPS = CRYPTO_FAMILIES + (
    ("crypto library (stripped: functions by address)", r"libcrypto", r"^0x"),
    ("crypto library (other)", r"libcrypto", r""),
    ("crypto library (other)", "", r"^(EVP_|evp_|ossl_|OSSL_|CRYPTO_|OPENSSL_|ERR_|err_|OBJ_|PROV_|RAND_|rand_|drbg|"
                                   r"PKCS5_|pkcs5_|HASH_|KDF|kdf_|EVP|cipher_|digest_)"),
    ("TLS library", r"libssl", r""),
    ("memory allocation", "", r"^(malloc|free|realloc|calloc|_int_malloc|_int_free|_int_realloc|malloc_consolidate|"
                              r"unlink_chunk|tcache|cfree|__libc_(malloc|free|calloc|realloc)|AllocSet|palloc|pfree|"
                              r"repalloc|MemoryContext|my_malloc|my_free|my_realloc|sqlite3Malloc|sqlite3_free|"
                              r"sqlite3DbFree|sqlite3_malloc|sqlite3MemMalloc|sqlite3MemFree|PyObject_Malloc|"
                              r"PyObject_Free|_PyObject_Malloc|_PyObject_Free|pymalloc)"),
    ("memory copy and compare", "", r"^(__)?(memcpy|memmove|memset|memcmp|bcmp|mempcpy|wmem)|^__(memcpy|memmove|"
                                    r"memset|memcmp)"),
)
RUNTIME_GROUPS = (
    ("Python", r"python|\.cpython-", r""),
    ("C library", r"libc\.so|ld-linux|libm\.so|libpthread", r""),
)
OTHER = "other"


@functools.cache
def _compiled(engine_name: str) -> list[tuple[str, re.Pattern | None, re.Pattern | None]]:
    """The ordered groups for an engine: its function-level groups, the shared ones, its object-level
    catch-alls (a group with no function regex), then the runtime's."""
    engine = engine_named(engine_name)
    own = tuple(engine.instruction_groups) if engine else ()
    table = ([g for g in own if g[2]] + list(SHARED_GROUPS) + [g for g in own if not g[2]] + list(RUNTIME_GROUPS))
    return [(g, re.compile(o) if o else None, re.compile(f) if f else None) for g, o, f in table]


def group_of(obj: str, fn: str, engine: str = "", families: dict | None = None) -> str:
    """The group of one function (its object's file name and its name); a stripped crypto library's function is
    named by the family whose probe ran it (`families`: the result file's meter.function_families)."""
    named = ((families or {}).get(obj) or {}).get(fn)
    if named:
        return named
    rest = fn == "(other)"  # an object's small functions, summed (callgrind.Dump.top): its library's group
    for group, o, f in _compiled(engine):
        if rest and (o is None or f is not None):
            continue
        if (o is None or o.search(obj)) and (f is None or f.search(fn)):
            return group
    return OTHER


def family_of(group: str) -> str | None:
    return group if group in {g for g, _, _ in CRYPTO_FAMILIES} else None


# -- reading the runs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Keys:
    """What the analysis (summary.py) names: the extra counts that make a unit (PER_UNIT: ("queries", "query"), ...),
    the connection open's (workload, operation), the variants of the file by label."""

    per_unit: tuple
    open: tuple[str, str]
    variants: dict


def _unit_count(op: dict, unit: str | None, keys: Keys) -> float | None:
    if unit is None:
        return 1.0
    key = next((k for k, u in keys.per_unit if u == unit), None)
    n = (op.get("extra") or {}).get(key) if key else None
    return float(n) if isinstance(n, (int, float)) and n > 0 else None


def _profiles(doc: dict, workload: str, operation: str, variant: str, unit: str | None, keys: Keys) -> list[dict]:
    """Per measured run: {(object, function): own instructions per unit} of this operation and variant."""
    OPEN = keys.open
    out = []
    for run in doc["runs"]:
        if run.get("warmup") or run["variant_label"] != variant:
            continue
        if (workload, operation) == OPEN:
            prof = run.get("open_profile")
            if prof:
                out.append({(o, f): n for o, f, n in prof.get("functions", [])})
            continue
        if run["workload"] != workload:
            continue
        for op in run.get("operations", []):
            prof = (op.get("extra") or {}).get(PROFILE_KEY)
            n = _unit_count(op, unit, keys)
            if op["operation"] == operation and prof and n:
                out.append({(o, f): c / n for o, f, c in prof.get("functions", [])})
    return out


def _mean(profiles: list[dict]) -> dict:
    total: dict = defaultdict(float)
    for p in profiles:
        for k, v in p.items():
            total[k] += v
    return {k: v / len(profiles) for k, v in total.items()} if profiles else {}


def _unit_of(metric: str) -> str | None:
    return metric[len("instructions_per_"):] if metric.startswith("instructions_per_") else None


def attribution(doc: dict, comps: list[dict], keys: Keys) -> list[dict]:
    """Per metered comparison the verdict rests on: the added instructions by group, largest first."""
    engine = doc["engine"]["name"]
    paths = code_path_gaps(doc)
    families = (doc.get("meter") or {}).get("function_families") or {}
    out = []
    for c in comps:
        unit = _unit_of(c["metric"])
        if not (c["metric"] == METRIC or unit) or "verdict_basis" not in c:
            continue
        base = _profiles(doc, c["workload"], c["operation"], c["baseline"], unit, keys)
        cont = _profiles(doc, c["workload"], c["operation"], c["contender"], unit, keys)
        if not base or not cont:
            continue
        mb, mc = _mean(base), _mean(cont)
        added_total = sum(mc.values()) - sum(mb.values())
        by_group: dict[str, dict] = {}
        for key in set(mb) | set(mc):
            d = mc.get(key, 0.0) - mb.get(key, 0.0)
            g = by_group.setdefault(group_of(key[0], key[1], engine, families), {"added": 0.0, "functions": []})
            g["added"] += d
            if d:
                g["functions"].append([key[0], key[1], d])
        groups = []
        for name, g in sorted(by_group.items(), key=lambda kv: -kv[1]["added"]):
            share = g["added"] / added_total if added_total else None
            if share is None or abs(share) < MIN_SHARE:
                continue
            fns = sorted(g["functions"], key=lambda x: -x[2])[:TOP_FUNCTIONS]
            family = family_of(name)
            groups.append({"group": name, "family": family, "role": role(doc, family, c["operation"], c["workload"]),
                           "added": g["added"], "share": share, "functions": fns,
                           **({"cpu_gap": paths[family]} if family in paths else {})})
        out.append({"workload": c["workload"], "operation": c["operation"], "baseline": c["baseline"],
                    "contender": c["contender"], "metric": c["metric"], "unit": unit or "operation",
                    "baseline_instructions": sum(mb.values()), "added_instructions": added_total,
                    "groups": groups, "runs": [len(base), len(cont)],
                    "method": "mean own instructions of each function (callgrind, inclusive=no) over the contender's "
                              "runs minus the baseline's" + (f", per {unit}" if unit else "")})
    return out


def role(doc: dict, family: str | None, operation: str, workload: str) -> str | None:
    """What the engine uses a crypto family for, in words (Engine.crypto_roles; 'FAMILY@operation' first)."""
    engine = engine_named(doc["engine"]["name"])
    roles = engine.crypto_roles if engine else {}
    if family is None:
        return None
    return roles.get(f"{family}@{workload}") or roles.get(f"{family}@{operation}") or roles.get(family)


# -- per page ------------------------------------------------------------------------------------


def per_page(doc: dict, groups, comps: list[dict], keys: Keys) -> list[dict]:
    """Cold reads: the added instructions per page read (decrypt), and warm rewrites per page written (encrypt),
    with a Welch CI, beside the raw cipher's instructions per page (calibration.raw_cipher_instructions)."""
    raw = (doc.get("calibration") or {}).get("raw_cipher_instructions") or {}
    variants = keys.variants
    out = []
    for c in comps:
        meta = (doc.get("workloads") or {}).get(c["workload"], {})
        contender = variants[c["contender"]]
        if c["metric"] != METRIC:
            continue
        if meta.get("reads_only") and contender.get("cache") == "cold":
            kind, basis = "read", "pages_read"
        elif meta.get("rewrites") and contender.get("cache") == "warm":
            kind, basis = "write", "pages_written"
        else:
            continue
        cont = groups[(c["workload"], c["operation"], c["contender"])]
        base = groups[(c["workload"], c["operation"], c["baseline"])]
        pages = stats.summarize(cont.get(basis, []))
        diff = stats.difference_ci(base.get(METRIC, []), cont.get(METRIC, []))
        if pages is None or pages.mean <= 0 or diff.value is None:
            continue
        page_size = int(contender.get("page_size") or (doc.get("dataset") or {}).get("page_size") or 4096)
        entry = {"workload": c["workload"], "operation": c["operation"], "baseline": c["baseline"],
                 "contender": c["contender"], "kind": kind, "pages": pages.mean, "pages_basis": basis,
                 "page_size": page_size, "added_instructions": diff.value,
                 "per_page": diff.value / pages.mean,
                 "per_page_ci": [x / pages.mean for x in diff.ci] if diff.ci else None,
                 "method": f"(mean instructions {contender.get('cache')} encrypted - the same plain) / mean "
                           f"{basis.replace('_', ' ')}, Welch t 95% CI"}
        ref = raw.get(str(page_size))
        if ref and ref.get("per_page"):
            entry["raw_cipher_per_page"] = ref["per_page"]
            entry["raw_cipher"] = ref.get("cipher")
            entry["times_raw"] = entry["per_page"] / ref["per_page"]
        out.append(entry)
    return out


# -- the CPU-model gap ----------------------------------------------------------------------------


def code_path_gaps(doc: dict) -> dict[str, str]:
    """family -> the sentence that says its code differs natively (meter.code_paths), for each that does."""
    out = {}
    for p in (doc.get("meter") or {}).get("code_paths") or []:
        if p.get("differs"):
            out[p["family"]] = gap_sentence(p)
    return out


def short_name(fn: str) -> str:
    """A stripped function's address without its leading zeros: '0x000000000029fe80' -> '0x29fe80'."""
    return re.sub(r"^0x0+(?=[0-9a-fA-F])", "0x", fn)


def gap_sentence(p: dict) -> str:
    native = ", ".join(short_name(f) for f in p.get("native") or []) or "?"
    under = ", ".join(short_name(f) for f in p.get("valgrind") or []) or "?"
    text = (f"{p['family']} runs other code natively ({native}) than under valgrind ({under}): valgrind's CPU lacks "
            f"{', '.join(p.get('missing') or []) or 'instructions this CPU has'}")
    held, native_speed = p.get("held_mb_per_s"), p.get("native_mb_per_s")
    if held and native_speed:
        text += (f"; natively, held to valgrind's code path (OPENSSL_ia32cap) it runs at {held:,.0f} MB/s against "
                 f"{native_speed:,.0f} MB/s with this CPU's ({native_speed / held:.2f}x)")
    return text


def cpu_gap(doc: dict) -> dict | None:
    m = doc.get("meter") or {}
    if not m:
        return None
    missing = m.get("missing_cpu_features") or []
    differs = [p for p in m.get("code_paths") or [] if p.get("differs")]
    same = [p for p in m.get("code_paths") or [] if not p.get("differs")]
    if m.get("simulated_cpu_features") is None:
        text = "the CPU valgrind simulates could not be read: instruction counts may come from other code than runs natively"
    elif not missing:
        text = "valgrind's simulated CPU has every crypto-relevant instruction this CPU has: the same code runs"
    else:
        text = f"valgrind's simulated CPU lacks {', '.join(missing)}, which this CPU has"
        if differs:
            text += ("; the crypto library takes other code natively for " + ", ".join(p["family"] for p in differs)
                     + ": instruction counts of that code are not this CPU's, and options are not ranked by them")
        if same:
            text += "; the same code runs natively for " + ", ".join(p["family"] for p in same)
        if not m.get("code_paths"):
            text += ("; which code the crypto library took natively was not sampled (" +
                     (m.get("code_paths_error") or "no crypto in the counts") + ")")
    return {"missing": missing, "host": m.get("host_cpu_features"), "simulated": m.get("simulated_cpu_features"),
            "code_paths": m.get("code_paths") or [], "text": text}


def instructions(doc: dict, groups, comps: list[dict], keys: Keys) -> dict | None:
    """The Analysis field: attribution, per-page figures and the CPU-model gap of a metered file; None otherwise."""
    if not is_metered(doc):
        return None
    return {"attribution": attribution(doc, comps, keys), "per_page": per_page(doc, groups, comps, keys),
            "cpu_gap": cpu_gap(doc)}


# -- words ----------------------------------------------------------------------------------------


def _group_words(g: dict) -> str:
    what = g["group"]
    if g.get("role"):
        what = f"{g['role']} ({g['group']})"
    return what


ATTRIBUTED = 0.01  # a row adding less than 1% of its baseline's instructions is not attributed (noise-sized shares)


def attributed(e: dict) -> bool:
    base = e.get("baseline_instructions") or 0
    return bool(e["groups"]) and base > 0 and abs(e["added_instructions"]) >= ATTRIBUTED * base


def lead_sentence(e: dict) -> str | None:
    """'75% of the added instructions are the page HMAC (SHA-512)' for one attribution entry."""
    if not attributed(e) or e["added_instructions"] <= 0:
        return None
    g = e["groups"][0]
    if g["share"] > 1:  # the group adds more than the net change: other work fell (zstd gives up on ciphertext)
        text = (f"{_group_words(g)} adds more instructions than the net change ({g['share']:.0%} of it): "
                "other work fell")
    else:
        text = f"{g['share']:.0%} of the added instructions are {_group_words(g)}"
    if g.get("cpu_gap"):
        text += " (natively other code runs: see the CPU-model gap)"
    return text


def lines(field: dict | None) -> list[str]:
    """The report section: per row, the added instructions and their groups; per page; the CPU-model gap."""
    if not field:
        return []
    out = []
    for e in field.get("attribution") or []:
        per = f" per {e['unit']}" if e["unit"] != "operation" else ""
        head = (f"{e['workload']}/{e['operation']} {e['contender']} vs {e['baseline']}: "
                f"{fmt_count(e['added_instructions'])} instructions added{per} "
                f"({fmt_count(e['baseline_instructions'])} without)")
        if not attributed(e):
            out.append(head + f": under {ATTRIBUTED:.0%} of them, not attributed")
            continue
        parts = []
        for g in e["groups"]:
            fns = ", ".join(f"{short_name(f)} {fmt_count(n)}" for _, f, n in g["functions"])
            parts.append(f"{g['share']:.0%} {_group_words(g)}" + (f" [{fns}]" if fns else "")
                         + (" (natively other code)" if g.get("cpu_gap") else ""))
        out.append(head + (": " + "; ".join(parts) if parts else ""))
    for p in field.get("per_page") or []:
        ci = p.get("per_page_ci")
        text = (f"{p['workload']}/{p['operation']} {p['contender']}: {fmt_count(p['per_page'])} instructions added per "
                f"{p['page_size']}-byte page {'read' if p['kind'] == 'read' else 'written'}"
                + (f" [{fmt_count(ci[0])}, {fmt_count(ci[1])}]" if ci else ""))
        if p.get("raw_cipher_per_page"):
            text += (f"; the raw cipher ({p.get('raw_cipher') or 'the same primitives'}) counted the same way: "
                     f"{fmt_count(p['raw_cipher_per_page'])} per page ({p['times_raw']:.2f}x)")
        out.append(text)
    gap = field.get("cpu_gap")
    if gap:
        out.append(f"CPU-model gap: {gap['text']}")
        for p in gap.get("code_paths") or []:
            if p.get("differs"):
                out.append(f"CPU-model gap: {gap_sentence(p)}")
    return out


def headline_figures(analysis, rows: list[dict]) -> list[dict]:
    """Beside a headline line led by instructions: the added instructions per page, and where they go (each row's
    largest group)."""
    field = getattr(analysis, "instructions", None) or {}
    keys = {(r["workload"], r["operation"], r["contender"]) for r in rows}
    out = []
    for p in field.get("per_page") or []:
        if (p["workload"], p["operation"], p["contender"]) in keys:
            out.append({"name": "instructions_per_page", "workload": p["workload"], "operation": p["operation"],
                        "contender": p["contender"], "value": p["per_page"], "ci": p.get("per_page_ci"),
                        "page_size": p["page_size"], "kind": p["kind"], "raw": p.get("raw_cipher_per_page")})
    found = [e for e in field.get("attribution") or [] if (e["workload"], e["operation"], e["contender"]) in keys]
    for e in found:
        text = lead_sentence(e)
        if text:
            out.append({"name": "instruction_attribution", "workload": e["workload"], "operation": e["operation"],
                        "contender": e["contender"], "text": text,
                        "share": e["groups"][0]["share"], "group": e["groups"][0]["group"]})
    return out


def page_figures_text(figs: list[dict]) -> str:
    def one(f: dict) -> str:
        size = f"{f['page_size'] // 1024} KB" if f["page_size"] % 1024 == 0 else f"{f['page_size']}-byte"
        ci = f" [{fmt_count(f['ci'][0])}, {fmt_count(f['ci'][1])}]" if f.get("ci") else ""
        raw = f" (the raw cipher, counted the same way: {fmt_count(f['raw'])})" if f.get("raw") else ""
        return (f"{fmt_count(f['value'])}{ci} instructions added per {size} page "
                f"{'read' if f['kind'] == 'read' else 'written'}{raw}")
    texts: dict[str, list[str]] = {}
    for f in figs:
        texts.setdefault(one(f), []).append(f"{f['workload']}/{f['operation']}")
    named = len(texts) > 1
    return "; ".join(t + (f" ({', '.join(dict.fromkeys(w))})" if named else "") for t, w in texts.items())


def figures_text(figs: list[dict]) -> str:
    """Each row's lead group once, named by the operations saying it when the line has several."""
    by_text: dict[str, list[str]] = {}
    for f in figs:
        by_text.setdefault(f["text"], [])
        if f["operation"] not in by_text[f["text"]]:
            by_text[f["text"]].append(f["operation"])
    ops = {op for f in figs for op in [f["operation"]]}
    return "; ".join(t + (f" ({', '.join(o)})" if len(ops) > 1 else "") for t, o in by_text.items())


def gap_blocks_ranking(analysis, rows: list[dict]) -> str | None:
    """Why these rows may not be ranked by instructions (a crypto family whose code differs natively), or None."""
    field = getattr(analysis, "instructions", None) or {}
    keys = {(r["workload"], r["operation"], r["contender"]) for r in rows}
    fams = sorted({g["family"] for e in field.get("attribution") or [] if (e["workload"], e["operation"],
                                                                             e["contender"]) in keys
                   for g in e["groups"] if g.get("cpu_gap")})
    if not fams:
        return None
    return (f"not ranked by instructions: {', '.join(fams)} runs other code natively than under valgrind "
            "(the CPU-model gap)")

