"""``python -m mobipath.router.proxy_process ARGS...``: the TCP<->MPTCP proxy (``mobipath-proxy``,
crates/proxy) run from the Python extension, for installs without the standalone binary (e.g.
``pip install .``)."""

import sys

from .. import _core

if __name__ == "__main__":
    sys.exit(_core.proxy_main(sys.argv[1:]))
