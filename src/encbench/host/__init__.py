"""The machine under the measurements: CPU, kernel and library facts (environment.py), the OS page cache
(oscache.py), and the raw cipher speed through the engine's own libcrypto (rawcipher.py)."""
