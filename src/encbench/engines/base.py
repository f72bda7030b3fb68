"""The engine adapter interface. The runner talks to engines only through this."""

from __future__ import annotations

from pathlib import Path

from ..vocab.session import PrepareContext, Session, Table
from ..vocab.variants import Variant, VariantKey
from ..errors import UsageError
from ..host import cpugap

__all__ = ["Engine", "PrepareContext", "Session", "Table"]


class Engine:
    name: str = ""
    description: str = ""
    variant_keys: tuple[VariantKey, ...] = ()
    axis: str = "encryption"  # the setting whose cost is measured
    axis_baseline: str = "off"
    workloads: tuple[str, ...] = ()  # each served by session_class (workloads/capabilities.py checks it)
    session_class: type[Session] = Session  # what open_session returns: its methods say which workloads it can serve
    default_workloads: tuple[str, ...] | None = None  # what `run` measures without --workload (None: all)
    # `run --quick` (issue 30): the one or two workloads, and the variant filters, that answer the engine's own
    # question (run until their verdicts resolve or the budget is spent: lab/precision.Sequential); () = the defaults
    quick_workloads: tuple[str, ...] = ()
    quick_variants: tuple[str, ...] = ()
    options: tuple[str, ...] = ()  # engine options it accepts (dsn, keep, allow_reconfigure)
    table_columns: tuple[str, ...] | None = None  # report.COLUMNS names; None: the at-rest default
    metric_words: dict[str, str] = {}  # verdict wording, e.g. {"cpu_s": "server CPU"}
    label: str = ""  # its name in prose (reports)
    # what opening a connection (the "(open)" figure) includes, in the engine's own words (the summary's remark)
    open_includes: str = "the connection's whole set-up included"
    # does opening a connection do the at-rest encryption's own work (SQLCipher derives the page key per open; a
    # PostgreSQL backend starts by reading its catalogs through the encrypted filesystem)? False: the at-rest summary
    # has no "opening a connection" line (its table row and its note stay): not a question of that lab
    open_at_rest: bool = True
    # the encrypted setup a bill of each side prices on this engine (side -> the held-out check's setup name:
    # bench/estimate_heldout.py, analysis/heldout.py); a side absent here has no held-out check
    heldout_setups: dict = {}
    at_rest_names: dict[str, str] = {}  # encryption value -> the option's name across engines (encbench atrest)
    # encryption values whose per-page CPU is set beside the calibration's raw cipher (the engine's own cipher)
    raw_cipher_values: tuple[str, ...] = ("on",)
    # encryption value -> why its crypto CPU is in no measured process (no per-page cost is derived for it);
    # none today: gocryptfs's daemon is in the server side's CPU, fscrypt's kernel workers in kworker_cpu_s
    uncounted_crypto: dict[str, str] = {}
    # encryption values decrypted in kernel worker threads (fscrypt): their per-page cost adds the kworkers
    # probe's kworker_cpu_s to the server's cpu_s, on both sides (analysis/summary.py)
    kernel_worker_crypto: tuple[str, ...] = ()
    selftest_workloads: tuple[str, ...] = ()  # `encbench selftest`'s reduced suite (none: the first default workload)
    # `encbench advise` (issue 24): the settings that change encryption's price (analysis/advise.Knob), and the
    # sweeps that measure them (lab/advise.Sweep; advise_sweeps(quick, options))
    knobs: tuple = ()
    # --meter instructions (lab/meter.py): "worker" when the engine runs in the worker process (counted there),
    # "server" when its private server can run under callgrind (prepare starts it so, given ctx.meter), "" never;
    # the workloads whose every instruction that matters is counted, and why the others are not (one line)
    metered: str = ""
    metered_workloads: tuple[str, ...] = ()
    meter_refusal: str = ""
    # the instructions' attribution (analysis/instrattr.py): (group, regex on the object, regex on the function) of
    # the engine's own code, tried before the shared groups; what its crypto does, by family, in words
    instruction_groups: tuple[tuple[str, str, str], ...] = ()
    crypto_roles: dict[str, str] = {}
    # perf sample categories of its own code (profiling/profiler.py): (category, regex on the shared object, regex
    # on the symbol or ""); in_process: its code is a Python extension, classified before Python's own objects
    profile_categories: tuple[tuple[str, str, str], ...] = ()
    profile_in_process: bool = False
    # a server engine: how its addresses are written and what its TLS looks like
    dsn_schemes: tuple[str, ...] = ()  # URL schemes of its DSNs and tls-scan targets, the usual one first
    default_port: int | None = None
    wire_protocol: str = ""  # tls-scan's name for its protocol (stored in scan files); empty: no tls-scan
    direct_tls_alpn: str | None = None  # an ALPN name to try TLS without the protocol's preamble (tls-scan)
    tls_view: str = ""  # where the server shows a connection's TLS (the analysis notes)

    def owns_dsn(self, dsn: str) -> bool:
        """Is this one of the engine's DSNs (by its scheme)?"""
        return dsn.split(":", 1)[0].lower() in self.dsn_schemes

    def check_dsn(self, dsn: str, what: str = "--dsn") -> None:
        """--dsn read before anything runs: a one-line BadValueError for one the engine cannot use (a host or
        port it cannot read, port 0); connecting is left to the run."""

    def client_offers(self, tls: str) -> bool:
        """tls-scan --measure: can the measuring client offer this tls= variant's suite at all? (A scan offers
        every suite; the client library may keep some below its security level.) True: try it."""
        return True

    def tls_preamble(self, sock, label: str) -> None:
        """tls-scan: what the protocol says on a fresh socket before the TLS handshake starts."""
        raise NotImplementedError

    def start_scan_server(self, settings: dict):
        """tls-scan --engine: a private server with TLS on (`.port`, `.stop()`)."""
        raise UsageError(f"engine {self.name} has no server to scan")

    # `encbench calibrate`: --variant filters of the oltp runs the bill's read and write costs are fitted over (a
    # read-only and a write-heavy script, two memory shares, encrypted and plain); empty: no calibration
    calibration_variants: tuple[str, ...] = ()
    # the bill's terms (analysis/bill.TERM_KINDS) that never apply to this engine, each with why (absent from its
    # bill and its calibration, not zero); those calibrate's designed mixes do not fit, each with the run that would
    # measure it (analysis/calibration.py)
    calibration_absent: dict[str, str] = {}
    calibration_not_fitted: dict[str, str] = {}
    # the --variant filters of calibrate's in-transit mixes (connect, bulk, roundtrip, storm); empty: no in-transit side
    calibration_transit_variants: tuple[str, ...] = ()

    def live_rates_reader(self, dsn: str):
        """estimate --live: a vocab.live.LiveSampler of every bill term's counter on this engine's server."""
        raise UsageError(f"engine {self.name} has no live server to sample: give its rates with --rate")

    def tables(self) -> tuple[Table, ...]:
        return (Table("", self.axis, self.axis_baseline, None, self.table_columns, dict(self.metric_words)),)

    def plan_keys(self, keys: tuple[VariantKey, ...], filters: dict[str, list[str]], workloads: list[str],
                  options: dict) -> tuple[VariantKey, ...]:
        """At plan time, before anything is made: the variant keys this run varies, given the --variant filters,
        the workloads and the engine options (an engine may narrow a key for one of its workloads, or drop one
        its options make meaningless), or a one-line error for filters that cannot go together. By default the
        keys as declared."""
        return keys

    def run_tables(self, variants: dict[str, list[Variant]]) -> tuple[Table, ...]:
        """The report tables of a run, given each workload's planned variants (a workload measured on either of
        two axes belongs to the table of the axis its variants vary). By default `tables()`."""
        return self.tables()

    def check_available(self) -> None:
        """Raise EngineUnavailableError with a hint on how to install what is missing."""

    def check_variants(self, variants: list[Variant]) -> None:
        """At plan time, before anything is made: raise BadValueError (one line, what to use instead) for a
        combination of values the engine cannot run, each value being valid on its own."""

    def versions(self) -> dict[str, str]:
        return {}

    def prepare(self, ctx: PrepareContext) -> dict:
        """Generate or reuse data; return a JSON-serializable setup passed to every worker."""
        raise NotImplementedError

    def raw_cipher_key(self, variant: dict, page_size: int) -> str:
        """The calibration's raw_cipher entry for a variant's pages (the page size; an engine with more than one
        page cipher, e.g. SQLCipher's page HMAC, tells them apart)."""
        return str(page_size)

    def advise_sweeps(self, quick: bool, options: dict) -> list:
        """The runs `encbench advise` makes on this engine (lab/advise.Sweep), each varying one knob; none here."""
        return []

    def advise_notes(self, quick: bool, options: dict) -> list[str]:
        """One line per knob `encbench advise` does not measure here, and why (e.g. "not available in <version>",
        a startup option a --dsn server cannot change); none here."""
        return []

    def calibrate(self, setup: dict) -> dict:
        """In-process reference figures (raw cipher speed, ...)."""
        return {}

    def apply_variant(self, setup: dict, variant: Variant, workload: str = "") -> dict:
        """In the runner, before a run: server-side settings for this variant (e.g. a reload)."""
        return {}

    def crypto_probes(self, setup: dict) -> dict[str, dict]:
        """--meter instructions (host/cpugap): per crypto family its variants use, a program exercising it through
        the engine's own crypto library ({"argv", "library": regex on its object}); default: the system OpenSSL's
        `openssl speed`, which a server engine links."""
        return cpugap.openssl_speed_probes()

    def cleanup(self, setup: dict) -> None:
        """Always called once after the runs (error and Ctrl-C included): stop servers, drop objects."""

    def failure_detail(self, setup: dict, keep_dir: Path) -> list[dict]:
        """After a failed run, before cleanup: each private server that died, its log kept in keep_dir and its
        last lines, redacted ({"server": ..., "server_log": path, "server_log_tail": [...]}); [] when none."""
        return []

    def open_session(self, setup: dict, variant: Variant, *, mutable: bool, scratch_dir: Path) -> Session:
        raise NotImplementedError

    def leak_check(self, options: dict, workdir: Path):
        """Plant a canary in the encrypted objects, force it to disk, scan the files: a LeakReport."""
        raise UsageError(f"engine {self.name} has no leak-check yet")
