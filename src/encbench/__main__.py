"""`python -m encbench`: the same as the `encbench` command."""

from .cli import entry

if __name__ == "__main__":
    entry()
