"""``python -m mobipath.emulate.emu_process ARGS...``: the link emulator (``mobipath-emu``) run from
the Python extension, for installs without the standalone binary (e.g. ``pip install .``)."""

import sys

from .. import _core

if __name__ == "__main__":
    sys.exit(_core.emulator_main(sys.argv[1:]))
