"""`mobipath router cell-log`: the live cell-id logger against a stand-in ModemManager on a
private D-Bus daemon (tests/python/fakes/fake_modemmanager.py), then `handover-log` on its output.
Needs `dbus-daemon` (Debian: dbus-daemon / dbus) and the dbus-fast package; skips without them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli

pytest.importorskip("dbus_fast")
needs_dbus = pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="dbus-daemon not installed")
FAKE = Path(__file__).parent / "fakes" / "fake_modemmanager.py"


@pytest.fixture
def private_bus(tmp_path):
    sock = tmp_path / "bus"
    conf = tmp_path / "bus.conf"
    conf.write_text(f"""<busconfig><type>session</type><listen>unix:path={sock}</listen>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>""")
    daemon = subprocess.Popen(
        ["dbus-daemon", "--config-file", str(conf), "--nofork", "--print-address"], stdout=subprocess.PIPE, text=True
    )
    address = daemon.stdout.readline().strip()
    started = []

    def modemmanager(*specs):
        p = subprocess.Popen([sys.executable, str(FAKE), address, *specs], stdout=subprocess.PIPE, text=True)
        started.append(p)
        assert p.stdout.readline().strip() == "ready"
        return p

    yield address, modemmanager
    for p in started:
        p.kill()
        p.wait(5)
    daemon.kill()
    daemon.wait(5)


@needs_dbus
def test_cells_logged_live_become_the_right_handovers(private_bus, tmp_path):
    address, modemmanager = private_bus
    # Modem 0 (operator A): cell 1F at start, no service from 0.8 s, cell 2E from 1.2 s.
    # Modem 1 (operator B): cell 5 throughout.
    launched = time.time()
    mm = modemmanager("0:0/1F;0.8/0;1.2/2E", "1:0/5")
    ready = time.time()
    cells = tmp_path / "cells.csv"
    r = run_cli(
        [
            "router",
            "cell-log",
            "--bus",
            address,
            "--modem",
            "A=0",
            "--modem",
            "B=/org/freedesktop/ModemManager1/Modem/1",
            "--interval",
            "0.1",
            "--seconds",
            "2",
            "-o",
            str(cells),
        ]
    )
    assert r.returncode == 0, r.stderr
    assert "turned it on" in r.stderr  # the 3GPP source was off on both modems
    rows = [line.split(",") for line in cells.read_text().splitlines()[1:]]
    assert cells.read_text().startswith("time,operator,cell\n")
    a = [(float(t), c) for t, op, c in rows if op == "A"]
    b = [c for _, op, c in rows if op == "B"]
    assert len(a) >= 10 and set(b) == {"5"}
    seen = [c for _, c in a]
    phases = [c for i, c in enumerate(seen) if i == 0 or c != seen[i - 1]]
    assert phases == ["1F", "", "2E"], seen  # no service (empty cell) between the two cells
    out = tmp_path / "handovers.csv"
    r = run_cli(["router", "handover-log", "--cells", str(cells), "-o", str(out)])
    assert r.returncode == 0, r.stderr
    ho = [line.split(",") for line in out.read_text().splitlines()[1:]]
    assert [h[0] for h in ho] == ["A"], ho  # one handover, on A; B never changed cell
    from mobipath.router.holog import parse_time

    start, end = parse_time(ho[0][1]), parse_time(ho[0][2])
    # The span runs from the last poll in 1F to the first in 2E, so it contains the change of
    # serving cell (0.8 to 1.2 s after the stand-in started, which was between `launched` and
    # `ready`), and is longer than it by about a poll interval (0.1 s) each side.
    assert start <= ready + 0.8 and end >= launched + 1.2, (start - launched, end - launched)
    assert end - start < 0.4 + 0.4, (start, end)
    mm.kill()


@needs_dbus
def test_setup_errors_name_the_modem(private_bus, tmp_path):
    address, modemmanager = private_bus
    out = tmp_path / "cells.csv"
    r = run_cli(["router", "cell-log", "--bus", address, "--modem", "A=0", "--seconds", "1", "-o", str(out)])
    assert r.returncode == 1 and "ModemManager is not running" in r.stderr, r.stderr
    modemmanager("0:0/1F")
    r = run_cli(
        ["router", "cell-log", "--bus", address, "--modem", "A=0", "--modem", "B=3", "--seconds", "1", "-o", str(out)]
    )
    assert r.returncode == 1 and "modem B" in r.stderr and "Modem/3" in r.stderr, r.stderr
    r = run_cli(["router", "cell-log", "--bus", address, "--modem", "A", "--seconds", "1", "-o", str(out)])
    assert r.returncode == 2 and "OPERATOR=MODEM" in r.stderr, r.stderr
    r = run_cli(
        [
            "router",
            "cell-log",
            "--bus",
            "unix:path=/nonexistent/bus",
            "--modem",
            "A=0",
            "--seconds",
            "1",
            "-o",
            str(out),
        ]
    )
    assert r.returncode == 1 and "cannot connect" in r.stderr, r.stderr


def test_the_3gpp_location_string_gives_the_cell_id():
    from mobipath.router.mmdbus import cell_from_3gpp

    assert cell_from_3gpp("262,01,1A2B,00ABCDEF,3C4D") == "00ABCDEF"
    assert cell_from_3gpp("262,01,1a2b,abc") == "ABC"
    assert cell_from_3gpp("262,01,1A2B,0,3C4D") is None
    assert cell_from_3gpp("262,01,1A2B,,3C4D") is None
    assert cell_from_3gpp("garbage") is None
