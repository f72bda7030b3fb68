"""TLS: the `tls` variant values and the client config that forces a suite (variants.py), OpenSSL controls
Python's ssl lacks (sslctl.py), and `encbench tls-scan`: the scan (scan.py), baseline files and drift
(baseline.py), `--measure` (measure.py)."""
