"""encbench.profiling.flame: perf script parsing, folding, shares, SVG flame graphs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from encbench.profiling import flame
from encbench.profiling.flame import Frame, Sample

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

SAMPLE_FILE = TESTS / "data" / "perf-script-sample.txt"
SVG_NS = "{http://www.w3.org/2000/svg}"

# Hand-written perf script text covering the header variants.
HAND = (
    # pid/tid, [cpu], period, event with modifiers
    "mariadbd  1234/1240  [001] 12345.678901:     1010101 cpu-clock:pppH: \n"
    "\t    7f1c2a3b4c5d sha256_block_data_order_avx2+0x1a (/usr/lib/x86_64-linux-gnu/libcrypto.so.3)\n"
    "\t    7f1c2a3b0000 EVP_DigestUpdate+0x2f (/usr/lib/x86_64-linux-gnu/libcrypto.so.3)\n"
    "\t    55d0c0ffee00 my_sha256+0x10 (/usr/sbin/mariadbd)\n"
    "\t    55d0c0ff0000 main+0x99 (/usr/sbin/mariadbd)\n"
    "\n"
    # pid only, no cpu, period
    "postgres 4321 12345.700000:    250000 cpu-clock: \n"
    "\tffffffff81000e46 asm_sysvec_reschedule_ipi+0x16 ([kernel.kallsyms])\n"
    "\t    7f00000000aa [unknown] ([unknown])\n"
    "\n"
    # comm with a space, pid/tid, no cpu, no period
    "Thread pool 77/78 12345.800000: cpu-clock: \n"
    "\t    7f0000001111 pthread_mutex_lock+0x5 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\t    55d0c0ff1111 do_work+0x3 (/usr/sbin/app)\n"
    "\n"
    # right-aligned comm (perf pads to 16 when there is no callchain), [cpu], no stack
    "         swapper     0 [003] 12345.900000:    1000 cpu-clock: \n"
    "\n"
)


@pytest.fixture(scope="module")
def real() -> list[Sample]:
    return flame.parse_perf_script(SAMPLE_FILE.read_text())


@pytest.fixture(scope="module")
def hand() -> list[Sample]:
    return flame.parse_perf_script(HAND)


# --- parse_perf_script -------------------------------------------------------------------

def test_header_with_tid_cpu_and_period(hand):
    s = hand[0]
    assert (s.comm, s.pid, s.tid, s.period) == ("mariadbd", 1234, 1240, 1010101)


def test_header_without_tid_or_cpu(hand):
    s = hand[1]
    assert (s.comm, s.pid, s.tid, s.period) == ("postgres", 4321, 4321, 250000)


def test_header_comm_with_space_and_no_period(hand):
    s = hand[2]
    assert (s.comm, s.pid, s.tid, s.period) == ("Thread pool", 77, 78, 1)


def test_padded_comm_and_no_stack_gives_unknown_frame(hand):
    s = hand[3]
    assert (s.comm, s.pid, s.tid, s.period) == ("swapper", 0, 0, 1000)
    assert s.frames == [Frame("[unknown]", "[unknown]")]


def test_frames_are_root_first_and_offsets_dropped(hand):
    assert len(hand) == 4
    assert hand[0].frames == [
        Frame("main", "/usr/sbin/mariadbd"),
        Frame("my_sha256", "/usr/sbin/mariadbd"),
        Frame("EVP_DigestUpdate", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"),
        Frame("sha256_block_data_order_avx2", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"),
    ]
    assert hand[1].frames == [
        Frame("[unknown]", "[unknown]"),
        Frame("asm_sysvec_reschedule_ipi", "[kernel.kallsyms]"),
    ]


def test_odd_symbols_and_dsos():
    text = (
        "app 1 1.000001: 5 cpu-clock: \n"
        "\t  400100 std::vector<int>::push_back(int const&)+0x1f (/opt/app (deleted))\n"
        "\t  400000 clock_gettime@@GLIBC_2.17+0x19 (/usr/lib/libc.so.6)\n"
        "\t  400200 a;b+0xff ([vdso])\n"
        "\n"
    )
    (s,) = flame.parse_perf_script(text)
    assert s.frames == [
        Frame("a;b", "[vdso]"),
        Frame("clock_gettime@@GLIBC_2.17", "/usr/lib/libc.so.6"),
        Frame("std::vector<int>::push_back(int const&)", "/opt/app (deleted)"),
    ]
    assert flame.fold([s]) == {
        "app;a:b;clock_gettime@@GLIBC_2.17;std::vector<int>::push_back(int const&)": 5
    }


def test_sample_without_trailing_blank_line_and_back_to_back_headers():
    text = (
        "a 1 1.0: 2 cpu-clock: \n"
        "b 2 2.0: 3 cpu-clock: \n"
        "\t 10 f+0x1 (/x)"
    )
    a, b = flame.parse_perf_script(text)
    assert a.frames == [Frame("[unknown]", "[unknown]")] and a.period == 2
    assert b.frames == [Frame("f", "/x")] and b.period == 3


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n\n",
        "hello world\nthis is not perf output\n",
        "\t 7f00 foo+0x1 (/lib)\n\n",  # stack line without a header
        "# ========\n# captured on: x\n",
        "\x00\xff\ufffd garbage ((( ]]] 12:34 \t\t\n",
        "python3 abc/def [x] nan: cpu-clock:\n",
    ],
)
def test_garbage_gives_empty_list(text):
    assert flame.parse_perf_script(text) == []


def test_garbage_lines_inside_a_sample_are_skipped():
    text = "app 9 3.5: 7 cpu-clock: \n\tnot a frame\n\t 7f main+0x1 (/app)\n  ???\n\n"
    (s,) = flame.parse_perf_script(text)
    assert s.frames == [Frame("main", "/app")]


def test_real_recording_parses(real):
    assert len(real) == 150
    assert all(s.comm == "python3" and s.pid == s.tid == 21459 for s in real)
    assert all(s.period == 2004008 for s in real)
    frames = [f for s in real for f in s.frames]
    assert not any(re.search(r"\+0x[0-9a-f]+$", f.sym) for f in frames)
    assert any(f.dso == "[kernel.kallsyms]" for f in frames)
    # perf prints leaf first; the first stack line of the file is the leaf of sample 0
    assert real[0].frames[-1] == Frame(
        "_PyLong_NumBits", "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"
    )


# --- fold --------------------------------------------------------------------------------

def test_fold_sums_weights_and_drops_comm_on_request():
    samples = [
        Sample("p", 1, 1, [Frame("main", "x"), Frame("f", "x")], 3),
        Sample("p", 1, 2, [Frame("main", "x"), Frame("f", "x")], 2),
        Sample("q", 5, 5, [Frame("main", "x")]),
    ]
    assert flame.fold(samples) == {"p;main;f": 5, "q;main": 1}
    assert flame.fold(samples, with_comm=False) == {"main;f": 5, "main": 1}


def test_fold_dso_for_unknown(hand):
    folded = flame.fold(hand, dso_for_unknown=True)
    assert folded["postgres;[unknown];asm_sysvec_reschedule_ipi"] == 250000
    s = Sample("p", 1, 1, [Frame("[unknown]", "/usr/lib/libcrypto.so.3")])
    assert flame.fold([s], dso_for_unknown=True) == {"p;[libcrypto.so.3]": 1}
    assert flame.fold([s]) == {"p;[unknown]": 1}


def test_fold_real_total_matches(real):
    folded = flame.fold(real)
    assert sum(folded.values()) == 150 * 2004008
    assert all(k.startswith("python3;") for k in folded)


# --- shares ------------------------------------------------------------------------------

def test_self_shares_hand(hand):
    total = 1010101 + 250000 + 1 + 1000
    by_sym = flame.self_shares(hand, by="sym")
    assert by_sym[0] == ("sha256_block_data_order_avx2", pytest.approx(1010101 / total))
    assert sum(v for _, v in by_sym) == pytest.approx(1.0)
    by_dso = dict(flame.self_shares(hand, by="dso", top=2))
    assert list(by_dso) == ["/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "[kernel.kallsyms]"]


def test_self_shares_real(real):
    for by in ("sym", "dso"):
        shares = flame.self_shares(real, by=by)
        assert 0 < len(shares) <= 15
        assert sum(v for _, v in shares) <= 1.0 + 1e-9
        assert [v for _, v in shares] == sorted((v for _, v in shares), reverse=True)
    # independent count: the first stack line of each block is the leaf
    leaf_dsos: dict[str, int] = {}
    for block in SAMPLE_FILE.read_text().split("\n\n"):
        lines = [ln for ln in block.splitlines() if ln.startswith("\t")]
        if lines:
            dso = lines[0].rsplit("(", 1)[1].rstrip(")")
            leaf_dsos[dso] = leaf_dsos.get(dso, 0) + 1
    top_dso = max(leaf_dsos, key=leaf_dsos.get)
    name, share = flame.self_shares(real, by="dso")[0]
    assert name == top_dso
    assert share == pytest.approx(leaf_dsos[top_dso] / 150)


def test_inclusive_share(hand):
    total = 1010101 + 250000 + 1 + 1000
    assert flame.inclusive_share(hand, "libcrypto", by="dso") == pytest.approx(1010101 / total)
    assert flame.inclusive_share(hand, r"^main$") == pytest.approx(1010101 / total)
    assert flame.inclusive_share(hand, "no-such-thing") == 0.0


def test_empty_and_bad_by():
    assert flame.self_shares([]) == []
    assert flame.inclusive_share([], "x") == 0.0
    with pytest.raises(ValueError):
        flame.self_shares([], by="comm")


def test_summarize_hand(hand):
    total = 1010101 + 250000 + 1 + 1000
    s = flame.summarize(hand)
    assert s["samples"] == total
    assert s["top_functions"][0][0] == "sha256_block_data_order_avx2"
    assert s["top_objects"][0][0].endswith("libcrypto.so.3")
    assert s["libcrypto_share"] == pytest.approx(1010101 / total)
    assert s["libcrypto_self_share"] == pytest.approx(1010101 / total)
    assert s["lock_share"] == pytest.approx(1 / total)


def test_summarize_real_hashlib_recording_spends_time_in_libcrypto(real):
    s = flame.summarize(real)
    assert s["samples"] == 150 * 2004008
    assert 0 < s["libcrypto_self_share"] <= s["libcrypto_share"] <= 1
    assert s["lock_share"] == 0.0
    assert any("libcrypto" in name for name, _ in s["top_objects"])


# --- SVG ---------------------------------------------------------------------------------

def _visible_frames(folded: dict[str, int], width: int) -> int:
    """Frames (plus the 'all' root) at least 0.1% of the image width wide."""
    prefixes: dict[tuple[str, ...], int] = {(): 0}
    for stack, n in folded.items():
        parts = tuple(stack.split(";"))
        prefixes[()] += n
        for i in range(1, len(parts) + 1):
            prefixes[parts[:i]] = prefixes.get(parts[:i], 0) + n
    total = prefixes[()]
    plot = width - 2 * flame.X_PAD
    return sum(1 for n in prefixes.values() if n / total * plot >= 0.001 * width)


def _rects(svg: str) -> list[ET.Element]:
    return list(ET.fromstring(svg).iter(f"{SVG_NS}rect"))


def test_svg_hand_is_valid_and_omits_tiny_frames():
    folded = {"a;b;c": 600_000, "a;d": 399_999, "a;tiny<&>": 1, 'e"q': 0}
    svg = flame.flamegraph_svg(folded, "My <title> & more", width=1000)
    root = ET.fromstring(svg)
    assert root.find(f"{SVG_NS}title").text == "My <title> & more"
    rects = _rects(svg)
    # all, a, b, c, d -- 'tiny' is 1e-6 of the width, 'e"q' has no weight
    assert len(rects) == 5
    titles = [g.find(f"{SVG_NS}title").text for g in root.iter(f"{SVG_NS}g")]
    assert "b (600,000 samples, 60.00%)" in titles
    assert not any("tiny" in t for t in titles)
    widths = {t.split(" ")[0]: float(g.find(f"{SVG_NS}rect").get("width"))
              for t, g in zip(titles, root.iter(f"{SVG_NS}g"))}
    assert widths["b"] / widths["d"] == pytest.approx(600_000 / 399_999, rel=1e-2)
    # root at the bottom: 'all' is the lowest row
    ys = {t.split(" ")[0]: float(g.find(f"{SVG_NS}rect").get("y"))
          for t, g in zip(titles, root.iter(f"{SVG_NS}g"))}
    assert ys["all"] > ys["a"] > ys["b"] > ys["c"]
    assert ys["a"] - ys["b"] == 16


def test_svg_is_deterministic_and_warm():
    folded = {"x;y": 3, "x;z": 1}
    assert flame.flamegraph_svg(folded, "t") == flame.flamegraph_svg(dict(folded), "t")
    for rect in _rects(flame.flamegraph_svg(folded, "t")):
        r, g, b = map(int, re.findall(r"\d+", rect.get("fill")))
        assert r >= 205 and b <= 55


def test_svg_labels_truncated():
    long = "f" * 300
    svg = flame.flamegraph_svg({f"a;{long}": 1, "b": 9}, "t", width=600)
    texts = [t.text for t in ET.fromstring(svg).iter(f"{SVG_NS}text")]
    assert long not in texts
    assert any(t and t.startswith("fff") and t.endswith("..") for t in texts)


def test_svg_real_recording(real):
    folded = flame.fold(real)
    svg = flame.flamegraph_svg(folded, "hashlib sha256", width=1200)
    assert "hashlib sha256" in svg
    assert len(_rects(svg)) == _visible_frames(folded, 1200)


def test_svg_empty_is_still_valid():
    root = ET.fromstring(flame.flamegraph_svg({}, "nothing"))
    assert root.find(f"{SVG_NS}title").text == "nothing"
    assert not list(root.iter(f"{SVG_NS}rect"))


def test_header_line_frame_without_callchain():
    text = (
        "         python3  5/6 [000] 1.000001:      10 cpu-clock: \t 7f01 sha256_update+0x4 (/lib/libcrypto.so.3)\n"
        "sched 7 [001] 2.0: sched:sched_switch: prev_comm=a prev_pid=7 (x)\n"
        "\n"
    )
    a, b = flame.parse_perf_script(text)
    assert (a.comm, a.pid, a.tid, a.period) == ("python3", 5, 6, 10)
    assert a.frames == [Frame("sha256_update", "/lib/libcrypto.so.3")]
    assert b.frames == [Frame("[unknown]", "[unknown]")]
