"""`python -m mobipath` is the same as the `mobipath` command."""

from .runcmd import entry

entry()
