"""`python -m encbench`: the same as the `encbench` command."""

from .cli import entry

entry()
