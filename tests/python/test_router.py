"""`mobipath router pha-d`: the live PHA-D controller of a train router — flag parsing, the
simulator's controller driven by positions, the CLI against a fake gpsd, and the backup flag of a
real kernel MPTCP endpoint (root only)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import run_cli
from mobipath import _core
from mobipath.gpsd import EARTH_RADIUS_M
from mobipath.router.phad import (
    EndpointActuator,
    PhaDRouter,
    RecordingActuator,
    RouterError,
    SubflowSpec,
    parse_subflow,
)
from test_gpsd import FakeGpsd, tpv

TABLE = "# mobipath handover table v1\noperator,start_m,end_m,count\nA,5000,5400,3\nB,9000,9300,2\n"
SPEED = 83.33  # m/s, 300 km/h


def test_subflow_flags_are_parsed_and_bad_ones_named():
    assert parse_subflow("A=1:wwan0") == SubflowSpec("A", 1, "wwan0")
    assert parse_subflow(" KT=12 ") == SubflowSpec("KT", 12, None)
    for bad in ["A", "A=x", "=1", "A=1:", "A=0", "A=256", "A=1:name-longer-than-15"]:
        with pytest.raises(RouterError, match="--subflow"):
            parse_subflow(bad)


def test_controller_rejects_bad_input_with_the_field_named():
    with pytest.raises(ValueError, match="policy = eager"):
        _core.PhaDController(TABLE, ["A"], "eager")
    with pytest.raises(ValueError, match="lead_ms"):
        _core.PhaDController(TABLE, ["A"], "queue-aware", -1.0)
    with pytest.raises(ValueError, match="gps_period_s"):
        _core.PhaDController(TABLE, ["A"], "paper", 0.0, 0.0)
    with pytest.raises(_core.ScenarioError, match="t.csv: line 3"):
        _core.PhaDController("operator,start_m,end_m,count\nA,1,2,3\nA,oops,2,1\n", ["A"], table_file="t.csv")
    c = _core.PhaDController(TABLE, ["A", None])
    with pytest.raises(ValueError, match="one value per subflow"):
        c.on_fix(0.0, 0.0, [0.1], [0])
    c.on_fix(1.0, 0.0, [0.1, 0.1], [0, 0])
    with pytest.raises(ValueError, match="back in time"):
        c.on_fix(0.5, 0.0, [0.1, 0.1], [0, 0])
    with pytest.raises(ValueError, match="pos_m"):
        c.on_fix(2.0, math.nan, [0.1, 0.1], [0, 0])
    with pytest.raises(RouterError, match="table.csv: line 3"):
        PhaDRouter(
            "operator,start_m,end_m,count\nA,1,2,3\nA,1,x,1\n",
            [SubflowSpec("A", 1)],
            RecordingActuator(),
            table_file="table.csv",
        )
    with pytest.raises(RouterError, match="resend needs"):
        PhaDRouter(TABLE, [SubflowSpec("A", 1)], RecordingActuator(), policy="resend")
    with pytest.raises(RouterError, match="endpoint ids must differ"):
        PhaDRouter(TABLE, [SubflowSpec("A", 1), SubflowSpec("B", 1)], RecordingActuator())


def ride(router: PhaDRouter, until_m: float, period_s: float = 0.1):
    n = int(until_m / SPEED / period_s)
    for i in range(n):
        router.on_fix(1000.0 + i * period_s, i * period_s * SPEED)


def test_backup_goes_on_one_rtt_before_the_range_and_off_before_its_end():
    act = RecordingActuator()
    log = []
    r = PhaDRouter(TABLE, [SubflowSpec("A", 1), SubflowSpec("B", 2)], act, gps_period_s=0.1, rtt_s=0.2, log=log.append)
    ride(r, 10_000.0)
    # A's range [5000, 5400] then B's [9000, 9300], each once: B=1 then B=0 on its own endpoint.
    assert list(act.calls) == [(1, True), (1, False), (2, True), (2, False)]
    assert log == list(r.events) and [e["operator"] for e in log] == ["A", "A", "B", "B"]
    on, off = log[0], log[1]
    # B=1 at the first fix where the time to the range is within RTT + three GPS periods (0.5 s):
    # between 0.4 and 0.5 s ahead with 10 Hz fixes, so always at least one RTT.
    lead_s = (5000 - on["pos_m"]) / SPEED
    assert 0.4 - 1e-6 < lead_s <= 0.5 + 1e-6, lead_s
    # B=0 at most one RTT before the range ends, and not after it.
    assert 0 < (5400 - off["pos_m"]) / SPEED <= 0.2 + 1e-6
    json.dumps(log)  # JSON-ready


def test_queue_aware_policy_leads_by_the_extra_time():
    act = RecordingActuator()
    r = PhaDRouter(TABLE, [SubflowSpec("A", 1)], act, policy="queue-aware", lead_ms=500, gps_period_s=0.1, rtt_s=0.2)
    ride(r, 6000.0)
    lead_s = (5000 - r.events[0]["pos_m"]) / SPEED  # threshold 0.2 + 0.3 + 0.5 s
    assert 0.9 - 1e-6 < lead_s <= 1.0 + 1e-6, lead_s


def test_resend_policy_repeats_b0_until_data_arrives_on_the_subflow():
    act = RecordingActuator()
    rx = {"n": 0}
    r = PhaDRouter(
        TABLE,
        [SubflowSpec("A", 1, "wwan0")],
        act,
        policy="resend",
        gps_period_s=0.1,
        rtt_s=0.2,
        rx_packets=lambda s: rx["n"],
    )
    ride(r, 5600.0)  # past the range: B=0 went out and nothing has arrived since
    offs = [c for c in act.calls if c == (1, False)]
    assert act.calls[0] == (1, True) and len(offs) >= 3
    before = act.count
    rx["n"] = 10  # data flows again: no more B=0
    for i in range(20):
        r.on_fix(2000.0 + i * 0.1, 6000 + i * 8.3)
    assert act.count == before


def test_router_keeps_counts_and_the_last_events_only():
    """`mobipath router pha-d` runs for days: the router and the dry-run recorder keep the last few
    events and calls and count them all; every event still reaches `log` (stdout)."""
    table = "operator,start_m,end_m,count\n" + "".join(f"A,{1000 + 500 * k},{1100 + 500 * k},1\n" for k in range(30))
    act, log = RecordingActuator(keep=3), []
    r = PhaDRouter(table, [SubflowSpec("A", 1)], act, gps_period_s=0.1, rtt_s=0.1, log=log.append, keep_events=4)
    ride(r, 16_000.0)
    assert [e["backup"] for e in log] == [True, False] * 30  # each range once, in order
    assert r.applied == 60 and list(r.events) == log[-4:]
    assert act.count == 60 and list(act.calls) == [(1, False), (1, True), (1, False)]
    # The defaults (what the CLI uses) are bounded too.
    assert RecordingActuator().calls.maxlen == 1000
    assert PhaDRouter(TABLE, [SubflowSpec("A", 1)], RecordingActuator()).events.maxlen == 1000


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_ticks_between_1hz_fixes_send_b0_before_the_range_ends():
    """At fixes only, a 1 Hz receiver makes B=0 late (the first fix within one RTT of the end can
    be after it); ticks every 50 ms from the extrapolated position send it on time."""

    def ride_1hz(ticks: bool):
        clock, act = FakeClock(), RecordingActuator()
        r = PhaDRouter(TABLE, [SubflowSpec("A", 1)], act, gps_period_s=1.0, rtt_s=0.15, clock=clock)
        for ms in range(0, 80_000, 50):
            clock.now = ms / 1e3
            if ms % 1000 == 0:
                r.on_fix(500.0 + ms / 1e3, 100.0 + SPEED * ms / 1e3)  # fix times on another clock
            elif ticks:
                r.on_tick()
        return list(r.events)

    end_t = 500.0 + (5400 - 100.0) / SPEED  # when the train leaves A's range
    late = ride_1hz(False)
    assert [(e["backup"], e["at"]) for e in late] == [(True, "fix"), (False, "fix")]
    assert late[1]["t"] > end_t
    on_time = ride_1hz(True)
    assert [e["backup"] for e in on_time] == [True, False]
    assert on_time[1]["at"] == "tick" and end_t - 0.15 - 0.05 - 1e-6 <= on_time[1]["t"] < end_t
    # B=1 still at least one RTT ahead of the range.
    assert on_time[0]["t"] <= 500.0 + (5000 - 100.0) / SPEED - 0.15


def test_run_reads_fixes_in_a_thread_ticks_meanwhile_and_reraises_source_errors():
    ticks = []

    class Counting(PhaDRouter):
        def on_tick(self):
            ticks.append(1)
            return super().on_tick()

    def slow_fixes():
        import time

        for i in range(4):
            yield 100.0 + i, 10.0 + i * SPEED
            time.sleep(0.05)
        raise OSError("gpsd went away")

    r = Counting(TABLE, [SubflowSpec("A", 1)], RecordingActuator(), gps_period_s=1.0)
    with pytest.raises(OSError, match="gpsd went away"):
        r.run(slow_fixes(), tick_s=0.01)
    assert len(ticks) >= 5
    r2 = PhaDRouter(TABLE, [SubflowSpec("A", 1)], RecordingActuator(), gps_period_s=1.0)
    assert r2.run(slow_fixes(), max_fixes=2, tick_s=0.01) == 2


def _track(tmp_path):
    """A straight track north along lon 127 from lat 37.0: metres along = R·Δφ."""
    p = tmp_path / "track.csv"
    p.write_text("lat,lon\n37.0,127.0\n37.2,127.0\n")
    return p


def _lat_at(m: float) -> float:
    return 37.0 + math.degrees(m / EARTH_RADIUS_M)


def test_cli_dry_run_against_a_fake_gpsd(tmp_path):
    track = _track(tmp_path)
    table = tmp_path / "table.csv"
    table.write_text("# mobipath handover table v1\noperator,start_m,end_m,count\nA,2000,2400,1\n")
    # 1 Hz fixes along the track at 300 km/h, plus one far off it (ignored).
    lines = [tpv(f"2024-05-01T12:00:{i:02d}.000Z", _lat_at(i * SPEED), 127.0) for i in range(40)]
    lines.insert(5, tpv("2024-05-01T12:00:05.500Z", 37.05, 127.5))
    fake = FakeGpsd(lines)
    r = run_cli(
        [
            "router",
            "pha-d",
            "--table",
            table,
            "--track",
            track,
            "--subflow",
            "A=3",
            "--subflow",
            "B=4",
            "--gpsd",
            f"127.0.0.1:{fake.port}",
            "--dry-run",
            "--max-fixes",
            "40",
            "--rtt-ms",
            "150",
            "--tick-ms",
            "0",
        ],
        timeout=60,
    )  # decisions at fixes only: the fake sends them all at once
    assert r.returncode == 0, r.stderr
    lines_out = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    events = [e for e in lines_out if "failsafe" not in e]
    assert [(e["endpoint_id"], e["backup"]) for e in events] == [(3, True), (3, False)]
    # Fail-safe restores: at start, at the fix off the track, at exit.
    safe = [e["reason"] for e in lines_out if e.get("failsafe") == "restored"]
    assert safe[0] == "start" and "off the track" in safe[1] and safe[-1] == "exit", safe
    # With 1 Hz GPS the threshold is one RTT plus three periods (3.15 s): B=1 at the first fix
    # within it, 2.15-3.15 s before the range.
    assert 2.15 < (2000 - events[0]["pos_m"]) / SPEED <= 3.15 + 1e-6
    # B=0 at the first fix within one RTT of the range's end: at fixes only, with 1 Hz fixes,
    # that can be up to one fix period after the end (ticks between fixes fix that: see above).
    assert 2400 - 0.15 * SPEED - 1e-6 <= events[1]["pos_m"] < 2400 + SPEED
    assert "40 fixes, 2 MP_PRIO" in r.stderr
    assert b"?WATCH" in fake.received[0]


def test_cli_names_bad_flags(tmp_path):
    track = _track(tmp_path)
    table = tmp_path / "t.csv"
    table.write_text(TABLE)
    base = ["router", "pha-d", "--table", table, "--track", track, "--dry-run"]
    for extra, needle in [
        (["--subflow", "A"], "--subflow"),
        (["--subflow", "A=1", "--policy", "x"], "--policy"),
        (["--subflow", "A=1", "--gpsd", "nohost"], "--gpsd"),
        (["--subflow", "A=1", "--rtt-ms", "0"], "--rtt-ms"),
        (["--subflow", "A=1", "--rtt-from", "ftp://x"], "--rtt-from"),
    ]:
        r = run_cli(base + extra, timeout=30)
        assert r.returncode != 0 and needle in (r.stderr + r.stdout), (extra, r.stderr)
        assert "Traceback" not in r.stderr


def _kernel_mptcp() -> str:
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` unavailable"
    try:
        if Path("/proc/sys/net/mptcp/enabled").read_text().strip() != "1":
            return "MPTCP disabled"
    except OSError:
        return "no MPTCP"
    return ""


@pytest.mark.skipif(bool(_kernel_mptcp()), reason=_kernel_mptcp() or "ok")
def test_endpoint_backup_flag_on_the_real_kernel():
    ns = f"mp-router-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "-n", ns, "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True)
        subprocess.run(["ip", "-n", ns, "addr", "add", "10.250.0.1/24", "dev", "d0"], check=True)
        subprocess.run(["ip", "-n", ns, "mptcp", "endpoint", "add", "10.250.0.1", "id", "7", "subflow"], check=True)
        act = EndpointActuator(ns)
        assert "backup" not in act.flags()[7]
        act.set_backup(7, True)
        assert "backup" in act.flags()[7]
        act.set_backup(7, False)
        assert "backup" not in act.flags()[7]
        with pytest.raises(RouterError, match="ip -n .* mptcp endpoint change id 9"):
            act.set_backup(9, True)  # no such endpoint: the kernel's refusal is reported
    finally:
        subprocess.run(["ip", "netns", "del", ns])


# ---------------------------------------------------------------------------------------------
# Fail-safe: every endpoint regular on any error, stale input or exit (router/README.md).


def _ride(start_m: float, n: int, t0: int = 0):
    """1 Hz fixes along the test track from `start_m`."""
    return [
        tpv(f"2024-05-01T12:{(t0 + i) // 60:02d}:{(t0 + i) % 60:02d}.000Z", _lat_at(start_m + i * SPEED), 127.0)
        for i in range(n)
    ]


def _pha_d(tmp_path, port, *extra):
    track = _track(tmp_path)
    table = tmp_path / "table.csv"
    table.write_text("# mobipath handover table v1\noperator,start_m,end_m,count\nA,2000,2400,1\n")
    return [
        "router",
        "pha-d",
        "--table",
        table,
        "--track",
        track,
        "--subflow",
        "A=3",
        "--subflow",
        "B=4",
        "--gpsd",
        f"127.0.0.1:{port}",
        "--dry-run",
        "--rtt-ms",
        "150",
        "--tick-ms",
        "50",
        *extra,
    ]


def _lines(out: str):
    return [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]


def _backup_then_restored(lines, reason_part):
    """B=1 on endpoint 3 was set, and a later restore (for `reason_part`) put every endpoint regular."""
    i = next(
        k for k, e in enumerate(lines) if e.get("endpoint_id") == 3 and e.get("backup") is True and "failsafe" not in e
    )
    later = [e for e in lines[i + 1 :] if e.get("failsafe") == "restored"]
    assert later and reason_part in later[0]["reason"], lines
    assert later[0]["endpoint_ids"] == [3, 4] and later[0]["backup"] is False and "errors" not in later[0]
    return later


def test_failsafe_when_gpsd_goes_away(tmp_path):
    # Fixes up to just inside the lead of the range (B=1 set), then gpsd closes the connection.
    fake = FakeGpsd(_ride(1600, 6))
    r = run_cli(_pha_d(tmp_path, fake.port, "--max-retries", "0", "--retry-s", "0.1"), timeout=60)
    assert r.returncode == 1 and "every endpoint is regular" in r.stderr, r.stderr
    later = _backup_then_restored(_lines(r.stdout), "gpsd")
    assert later[-1]["reason"] == "gave up on gpsd"


def test_failsafe_when_fixes_stop(tmp_path):
    fake = FakeGpsd(_ride(1600, 6), hang=True)  # connected, then silent
    r = run_cli(_pha_d(tmp_path, fake.port, "--stale-s", "0.5", "--max-retries", "0"), timeout=60)
    fake.done.set()
    _backup_then_restored(_lines(r.stdout), "no usable GPS fix for 0.5 s")


def test_failsafe_on_garbage_from_gpsd(tmp_path):
    fake = FakeGpsd(_ride(1600, 6) + [b"\x00\xffnot json at all\n", b'{"class": "TPV", "lat": "x"}\n'] * 50, hang=True)
    r = run_cli(_pha_d(tmp_path, fake.port, "--stale-s", "0.5", "--max-retries", "0"), timeout=60)
    fake.done.set()
    _backup_then_restored(_lines(r.stdout), "no usable GPS fix")
    assert "Traceback" not in r.stderr


def test_failsafe_when_the_position_jumps_off_the_track(tmp_path):
    jump = tpv("2024-05-01T12:00:06.000Z", 37.05, 127.5)  # kilometres east of the line
    fake = FakeGpsd(_ride(1600, 6) + [jump], hang=True)
    r = run_cli(_pha_d(tmp_path, fake.port, "--stale-s", "0.5", "--max-retries", "0"), timeout=60)
    fake.done.set()
    _backup_then_restored(_lines(r.stdout), "off the track")


def test_failsafe_on_sigterm(tmp_path):
    import signal
    import time

    fake = FakeGpsd(_ride(1600, 6), hang=True)
    from conftest import cli_env, mobipath_command

    proc = subprocess.Popen(
        [*mobipath_command(), *map(str, _pha_d(tmp_path, fake.port, "--stale-s", "30"))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(None),
    )
    try:
        out = ""
        deadline = time.monotonic() + 30
        while '"backup": true' not in out and time.monotonic() < deadline:
            out += proc.stdout.readline()
        assert '"backup": true' in out, out
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
        fake.done.set()
    later = _backup_then_restored(_lines(out + rest), "signal SIGTERM")
    assert later[-1]["reason"] == "signal SIGTERM", later


def test_failsafe_actuator_never_leaves_no_regular_path_and_rate_limits():
    from mobipath.router.phad import FailSafeActuator

    now = [0.0]
    log = []
    rec = RecordingActuator()
    a = FailSafeActuator(rec, [1, 2], min_interval_s=1.0, clock=lambda: now[0], log=log.append)
    assert a.set_backup(1, True) is True
    assert a.set_backup(2, True) is False and "no regular path" in log[-1]["why"]  # 1 is backup already
    assert a.set_backup(1, False) is True
    now[0] = 0.5
    assert a.set_backup(1, True) is False and "rate limit" in log[-1]["why"]  # 0.5 s after the last change
    now[0] = 1.6
    assert a.set_backup(1, True) is True
    assert list(rec.calls) == [(1, True), (1, False), (1, True)]
    # A failing actuator: the B=1 fails, every endpoint is set regular (as far as possible).

    class Broken(RecordingActuator):
        def set_backup(self, eid, backup):
            if backup:
                raise RouterError("ip: netlink error")
            super().set_backup(eid, backup)

    b = Broken()
    f = FailSafeActuator(b, [1, 2], log=log.append)
    assert f.set_backup(2, True) is False
    assert list(b.calls) == [(1, False), (2, False)] and "failed" in log[-1]["reason"]
    # One endpoint only: B=1 would leave none regular.
    assert FailSafeActuator(RecordingActuator(), [7], log=log.append).set_backup(7, True) is False


@pytest.mark.skipif(bool(_kernel_mptcp()), reason=_kernel_mptcp() or "ok")
def test_netlink_actuator_on_the_real_kernel():
    """The default actuator sets the flag over netlink from this process (no `ip` child): the
    change shows in `ip mptcp endpoint show`, fullmesh is kept, a missing id is reported."""
    from mobipath.router.phad import NetlinkActuator, default_actuator

    ns = f"mp-router-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "-n", ns, "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True)
        subprocess.run(["ip", "-n", ns, "addr", "add", "10.250.0.1/24", "dev", "d0"], check=True)
        subprocess.run(
            ["ip", "-n", ns, "mptcp", "endpoint", "add", "10.250.0.1", "id", "7", "subflow", "fullmesh"], check=True
        )
        act = default_actuator(ns)
        assert isinstance(act, NetlinkActuator)
        assert act.flags()[7] == ["subflow", "fullmesh"]
        act.set_backup(7, True)
        show = subprocess.run(["ip", "-n", ns, "mptcp", "endpoint", "show"], capture_output=True, text=True).stdout
        assert "backup" in show.split() and "fullmesh" in show.split(), show
        act.set_backup(7, False)
        show = subprocess.run(["ip", "-n", ns, "mptcp", "endpoint", "show"], capture_output=True, text=True).stdout
        assert "backup" not in show.split(), show
        with pytest.raises(RouterError, match="netlink: .*id 9"):
            act.set_backup(9, True)
        assert "backup" not in EndpointActuator(ns).flags()[7]
    finally:
        subprocess.run(["ip", "netns", "del", ns])


METRICS = """# TYPE mobipath_proxy_subflow_rtt_seconds gauge
mobipath_proxy_subflow_rtt_seconds{side="router",conn="1",peer="127.0.0.1:5",dest="a:1",subflow="0",local="10.1.0.1:4000",remote="10.1.0.2:7000"} 0.031
mobipath_proxy_subflow_rtt_seconds{side="router",conn="2",peer="127.0.0.1:6",dest="a:1",subflow="0",local="10.1.0.1:4001",remote="10.1.0.2:7000"} 0.052
mobipath_proxy_subflow_rtt_seconds{side="router",conn="2",peer="127.0.0.1:6",dest="a:1",subflow="1",local="10.2.0.1:4002",remote="10.2.0.2:7000"} 0.2
mobipath_proxy_subflow_rtt_seconds{side="router",conn="3",peer="127.0.0.1:7",dest="a:1",subflow="0",local="[fd00::1]:4003",remote="[fd00::2]:7000"} 0
mobipath_proxy_subflow_cwnd_segments{side="router",conn="1",local="10.3.0.1:1"} 10
"""


def test_proxy_rtt_is_the_largest_per_endpoint_address():
    from mobipath.router.phad import ProxyRtt, parse_subflow_rtts

    assert parse_subflow_rtts(METRICS) == {"10.1.0.1": 0.052, "10.2.0.1": 0.2}
    src = ProxyRtt("http://x", {1: "10.1.0.1", 2: "10.2.0.1", 3: "10.3.0.1"}, [1, 2, 3], fetch=lambda url: METRICS)
    assert src() == [0.052, 0.2, None]

    def down(url):
        raise OSError("connection refused")

    src = ProxyRtt("http://x", {1: "10.1.0.1"}, [1], fetch=down)
    assert src() == [None] and src.failures == 1


def test_phad_router_leads_by_the_measured_rtt():
    """The controller gets the measured RTT per subflow (the given one where none is measured),
    read at each fix and kept for the ticks between fixes."""
    seen = []

    class Ctl:
        def on_fix(self, now, pos, rtt, rx):
            seen.append(("fix", list(rtt)))
            return []

        def on_tick(self, now, rtt, rx):
            seen.append(("tick", list(rtt)))
            return []

    specs = [SubflowSpec("A", 1, None), SubflowSpec("B", 2, None)]
    values = iter([[0.25, None], [None, 0.04]])
    t = [0.0]
    r = PhaDRouter(TABLE, specs, RecordingActuator(), rtt_s=0.1, clock=lambda: t[0], rtt_source=lambda: next(values))
    r.ctl = Ctl()
    r.on_fix(0.0, 10.0)
    t[0] = 0.05
    r.on_tick()
    r.on_fix(0.1, 12.0)
    assert seen == [("fix", [0.25, 0.1]), ("tick", [0.25, 0.1]), ("fix", [0.1, 0.04])]


def test_modem_and_error_text_reach_the_terminal_escaped():
    """ModemManager's error text (which may carry what a modem or the network said) and any
    error message a command prints are one line without raw control characters."""
    from mobipath.router.mmdbus import _DBusError, _explain
    from mobipath.runcmd import describe_failure
    from mobipath.text import escape_controls

    forged = "bad\nmobipath: forged line\x1b[31m\u202e"
    shown = _explain("A", "/org/freedesktop/ModemManager1/Modem/0", _DBusError("org.x.Error.Failed", forged))
    prefix = "modem A (/org/freedesktop/ModemManager1/Modem/0): org.x.Error.Failed: "
    assert shown == prefix + "bad\\nmobipath: forged line\\x1b[31m\\u202e"
    lines, code = describe_failure(RuntimeError(forged))
    assert code == 1 and all("\n" not in ln and "\x1b" not in ln for ln in lines), lines
    assert escape_controls("zürich.example") == "zürich.example"
