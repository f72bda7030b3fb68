"""`python -m encbench.cli`: the same as the `encbench` command."""

from . import entry

if __name__ == "__main__":
    entry()
