"""`python -m mobipath` is the same as the `mobipath` command."""
from .cli import main

main()
