"""The gpsd client against a fake gpsd (a real TCP socket speaking the JSON protocol), and the
track projection it shares with the simulator."""

from __future__ import annotations

import json
import math
import socket
import threading
from typing import Optional

import pytest
from mobipath.gpsd import EARTH_RADIUS_M, WATCH_COMMAND, GpsdClient, GpsdError, Track, fix_from_tpv, parse_time

T0 = "2024-05-01T12:00:00.000Z"


class FakeGpsd:
    """Listens on 127.0.0.1:<free port>; per connection greets with VERSION, waits for the client's
    command line, records it, then sends `script` (bytes chunks) and closes, or stays silent."""

    def __init__(self, script: list[bytes], greet: Optional[bytes] = None, hang: bool = False):
        self.script, self.hang = script, hang
        self.greet = (
            greet
            if greet is not None
            else json.dumps({"class": "VERSION", "release": "3.25", "proto_major": 3, "proto_minor": 15}).encode()
            + b"\n"
        )
        self.received: list[bytes] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.sendall(self.greet)
            buf = b""
            conn.settimeout(5)
            try:
                while b"\n" not in buf:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    buf += chunk
            except socket.timeout:
                pass
            self.received.append(buf)
            for chunk in self.script:
                conn.sendall(chunk)
            if self.hang:
                self.done.wait(5)
        self.sock.close()


def tpv(t: str, lat: float, lon: float, mode: int = 3, **kw) -> bytes:
    d = {"class": "TPV", "device": "/dev/ttyUSB0", "mode": mode, "time": t, "lat": lat, "lon": lon, **kw}
    return json.dumps(d).encode() + b"\n"


def test_client_sends_watch_and_yields_tpv_fixes():
    lines = (
        json.dumps({"class": "DEVICES", "devices": [{"path": "/dev/ttyUSB0"}]}).encode()
        + b"\n"
        + json.dumps({"class": "WATCH", "enable": True, "json": True}).encode()
        + b"\n"
        + tpv("2024-05-01T12:00:00.000Z", 0, 0, mode=1)  # no fix yet
        + json.dumps({"class": "SKY", "satellites": []}).encode()
        + b"\n"
        + b"not json\n"
        + tpv("2024-05-01T12:00:00.100Z", 37.0, 127.0, speed=83.3, track=90.0, epx=3.1, epy=4.2)
        + tpv("2024-05-01T12:00:00.200Z", 37.0, 127.001)
    )
    # Split mid-object: the client must reassemble lines across reads.
    fake = FakeGpsd([lines[:57], lines[57:200], lines[200:]])
    with GpsdClient(port=fake.port, timeout=5) as gps:
        assert gps.version["class"] == "VERSION"
        it = gps.fixes()
        a, b = next(it), next(it)
    assert fake.received == [WATCH_COMMAND]
    assert (a.lat, a.lon, a.mode, a.speed_mps, a.track_deg, a.epx_m, a.epy_m) == (37.0, 127.0, 3, 83.3, 90.0, 3.1, 4.2)
    assert a.time == pytest.approx(parse_time(T0) + 0.1, abs=1e-6)
    assert b.time - a.time == pytest.approx(0.1, abs=1e-6)  # Unix seconds as float: ~0.2 µs resolution
    assert gps.skipped_lines == 1


def test_positions_along_the_track_and_off_track_fixes_are_dropped():
    k = EARTH_RADIUS_M * math.pi / 180
    dlon = 100 / (k * math.cos(math.radians(37.0)))  # 100 m east
    script = [
        tpv("2024-05-01T12:00:01Z", 37.0, 127.0 + dlon),
        tpv("2024-05-01T12:00:02Z", 37.01, 127.0),
        tpv("2024-05-01T12:00:03Z", 37.0, 127.0 + 2 * dlon),
    ]
    fake = FakeGpsd([b"".join(script)])
    track = Track([(37.0, 127.0), (37.0, 127.1)])
    with GpsdClient(port=fake.port) as gps:
        it = gps.positions(track, max_offset_m=50)
        (t1, s1), (t3, s3) = next(it), next(it)
    assert s1 == pytest.approx(100, abs=0.01) and s3 == pytest.approx(200, abs=0.01)
    assert t3 - t1 == pytest.approx(2.0)  # the fix 1.1 km north was dropped


def test_silence_closure_and_refusal_raise_gpsd_error():
    fake = FakeGpsd([], hang=True)
    silent = "no report from gpsd within 0.3 s"
    with GpsdClient(port=fake.port, timeout=0.3) as gps, pytest.raises(GpsdError, match=silent):
        next(gps.fixes())
    fake.done.set()
    fake = FakeGpsd([tpv(T0, 37.0, 127.0)])
    with GpsdClient(port=fake.port) as gps:
        it = gps.fixes()
        next(it)
        with pytest.raises(GpsdError, match="closed the connection"):
            next(it)
    fake = FakeGpsd([], greet=b'{"class":"TPV"}\n')
    with pytest.raises(GpsdError, match="did not greet with VERSION"):
        GpsdClient(port=fake.port).connect()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(GpsdError, match="cannot connect"):
        GpsdClient(port=port, timeout=1).connect()
    with pytest.raises(ValueError, match="port"):
        GpsdClient(port=0)


def test_tpv_parsing_rules():
    assert fix_from_tpv({"class": "TPV", "mode": 2, "time": T0, "lat": 1.0, "lon": 2.0}).mode == 2
    for bad in [
        {"class": "TPV", "mode": 3, "lat": 1.0, "lon": 2.0},  # no time
        {"class": "TPV", "mode": 3, "time": T0, "lat": 91.0, "lon": 2.0},
        {"class": "TPV", "mode": 3, "time": "yesterday", "lat": 1.0, "lon": 2.0},
        {"class": "TPV", "mode": 0, "time": T0, "lat": 1.0, "lon": 2.0},
        {"class": "SKY", "mode": 3, "time": T0, "lat": 1.0, "lon": 2.0},
    ]:
        assert fix_from_tpv(bad) is None, bad
    assert parse_time("2024-05-01T12:34:56.25Z") == 1714566896.25


def test_track_csv_errors_name_the_line(tmp_path):
    p = tmp_path / "track.csv"
    p.write_text("lat,lon\n37.0,127.0\n95,127.1\n")
    with pytest.raises(ValueError, match=r"track.csv: line 3"):
        Track.from_csv(p)
    p.write_text("lat,lon\n37.0,127.0\n37.0,127.1\n")
    assert Track.from_csv(p).length_m == pytest.approx(
        0.1 * EARTH_RADIUS_M * math.pi / 180 * math.cos(math.radians(37.0))
    )
