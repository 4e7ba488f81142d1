"""A small gpsd client for a train-side (router) PHA-D controller: the train's position along the
track from a running gpsd.

Protocol (gpsd JSON protocol, https://gpsd.gitlab.io/gpsd/gpsd_json.html): connect over TCP
(default 127.0.0.1:2947); gpsd greets with a ``VERSION`` object; the client sends
``?WATCH={"enable":true,"json":true}`` and gpsd then streams one JSON object per line
(``DEVICES``, ``WATCH``, ``TPV``, ``SKY``, ...). Only ``TPV`` (time-position-velocity) reports
matter here; those with ``mode`` >= 2 (2D/3D fix) and ``lat``/``lon`` are fixes. Times are UTC
ISO 8601 strings and become Unix seconds.

Positions along the track use the same projection as the simulator (crates/sim/src/hst/gps.rs):
the track is a ``lat,lon`` CSV polyline; each segment is projected locally (equirectangular, on
a sphere of radius 6 371 008.8 m), the closest segment wins, and fixes farther than
``max_offset_m`` from the track are dropped. Standard library only.

Example::

    track = Track.from_csv("track.csv")
    with GpsdClient() as gps:
        for t, along_m in gps.positions(track):
            controller.on_fix(t, along_m)
"""

from __future__ import annotations

import json
import math
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Union

__all__ = ["GpsdClient", "GpsdError", "Fix", "Track", "EARTH_RADIUS_M", "WATCH_COMMAND", "parse_time"]

EARTH_RADIUS_M = 6_371_008.8
WATCH_COMMAND = b'?WATCH={"enable":true,"json":true}\n'
DEFAULT_PORT = 2947


class GpsdError(Exception):
    """gpsd could not be reached, went silent, closed the connection or sent garbage."""


@dataclass(frozen=True)
class Fix:
    """One TPV fix: UTC Unix seconds, degrees, and what gpsd reported besides (None if absent)."""

    time: float
    lat: float
    lon: float
    mode: int
    speed_mps: Optional[float] = None
    track_deg: Optional[float] = None
    epx_m: Optional[float] = None
    epy_m: Optional[float] = None
    device: Optional[str] = None


def parse_time(s: str) -> float:
    """gpsd's ISO 8601 UTC time (``2024-05-01T12:34:56.250Z``) to Unix seconds."""
    if not isinstance(s, str) or not s:
        raise ValueError(f"not a time: {s!r}")
    text = s[:-1] + "+00:00" if s.endswith("Z") else s
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _num(d: dict[str, Any], k: str) -> Optional[float]:
    v = d.get(k)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def fix_from_tpv(report: dict[str, Any]) -> Optional[Fix]:
    """The fix in a TPV report, or None (no fix yet, mode < 2, or no time/position)."""
    if report.get("class") != "TPV":
        return None
    mode = report.get("mode")
    lat, lon = _num(report, "lat"), _num(report, "lon")
    if not isinstance(mode, int) or mode < 2 or lat is None or lon is None or "time" not in report:
        return None
    if not (-90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0):
        return None
    try:
        t = parse_time(report["time"])
    except (ValueError, TypeError):
        return None
    return Fix(
        t,
        lat,
        lon,
        mode,
        _num(report, "speed"),
        _num(report, "track"),
        _num(report, "epx"),
        _num(report, "epy"),
        report.get("device") if isinstance(report.get("device"), str) else None,
    )


class Track:
    """A track polyline in WGS84 lat/lon; `project` gives metres along it (first point = 0)."""

    def __init__(self, points: list[tuple[float, float]]):
        if len(points) < 2:
            raise ValueError("a track needs at least 2 points")
        self.points = list(points)
        self.cum = [0.0]
        for a, b in zip(self.points, self.points[1:]):
            x, y = self._xy(a, b, math.cos(math.radians((a[0] + b[0]) / 2)))
            self.cum.append(self.cum[-1] + math.hypot(x, y))

    @staticmethod
    def _xy(origin: tuple[float, float], p: tuple[float, float], coslat: float) -> tuple[float, float]:
        k = EARTH_RADIUS_M * math.pi / 180.0
        return (p[1] - origin[1]) * k * coslat, (p[0] - origin[0]) * k

    @classmethod
    def from_csv(cls, path: Union[str, Path]) -> Track:
        """Reads the ``lat,lon`` CSV (header required); ValueError names the file and line."""
        pts: list[tuple[float, float]] = []
        header = False
        for n, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if not header:
                if line.replace(" ", "") != "lat,lon":
                    raise ValueError(f"{path}: line {n}: header: expected `lat,lon`, found `{line}`")
                header = True
                continue
            cols = [c.strip() for c in line.split(",")]
            try:
                lat, lon = float(cols[0]), float(cols[1])
                if len(cols) != 2 or not (abs(lat) <= 90 and abs(lon) <= 180):
                    raise ValueError
            except (ValueError, IndexError):
                raise ValueError(
                    f"{path}: line {n}: expected `lat,lon` in degrees (|lat| <= 90, |lon| <= 180), found `{line}`"
                ) from None
            if pts and pts[-1] == (lat, lon):
                raise ValueError(f"{path}: line {n}: repeats the previous point (zero-length segment)")
            pts.append((lat, lon))
        if len(pts) < 2:
            raise ValueError(f"{path}: a track needs a `lat,lon` header and at least 2 points")
        return cls(pts)

    @property
    def length_m(self) -> float:
        return self.cum[-1]

    def project(self, lat: float, lon: float) -> tuple[float, float]:
        """(metres along the track of the closest point, distance from the track in metres)."""
        best = (0.0, math.inf)
        for i, (a, b) in enumerate(zip(self.points, self.points[1:])):
            c = math.cos(math.radians((a[0] + b[0]) / 2))
            bx, by = self._xy(a, b, c)
            px, py = self._xy(a, (lat, lon), c)
            l2 = bx * bx + by * by
            t = min(1.0, max(0.0, (px * bx + py * by) / l2)) if l2 > 0 else 0.0
            d = math.hypot(px - t * bx, py - t * by)
            if d < best[1]:
                best = (self.cum[i] + t * (self.cum[i + 1] - self.cum[i]), d)
        return best


class GpsdClient:
    """A gpsd JSON-protocol client. Use as a context manager, then iterate `fixes()` or
    `positions(track)`. `timeout` (s) bounds connecting and the wait for each report: a silent
    gpsd raises GpsdError instead of hanging the controller."""

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, timeout: float = 5.0):
        if not (0 < port < 65536):
            raise ValueError(f"port = {port}: must be in [1, 65535]")
        if not (timeout > 0):
            raise ValueError(f"timeout = {timeout}: must be > 0 seconds")
        self.host, self.port, self.timeout = host, port, timeout
        self.version: Optional[dict[str, Any]] = None
        self.skipped_lines = 0
        self._sock: Optional[socket.socket] = None
        self._buf = b""

    # -- connection -------------------------------------------------------------------------
    def connect(self) -> GpsdClient:
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as e:
            raise GpsdError(f"cannot connect to gpsd at {self.host}:{self.port}: {e}") from None
        self._sock.settimeout(self.timeout)
        banner = self.read_report()
        if banner.get("class") != "VERSION":
            raise GpsdError(f"gpsd at {self.host}:{self.port} did not greet with VERSION (got {banner.get('class')!r})")
        self.version = banner
        try:
            self._sock.sendall(WATCH_COMMAND)
        except OSError as e:
            raise GpsdError(f"cannot send ?WATCH to gpsd: {e}") from None
        return self

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def __enter__(self) -> GpsdClient:
        return self.connect()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------
    def _line(self) -> bytes:
        if self._sock is None:
            raise GpsdError("not connected (use `with GpsdClient() as gps:` or call connect())")
        while b"\n" not in self._buf:
            try:
                chunk = self._sock.recv(65536)
            except socket.timeout:
                raise GpsdError(f"no report from gpsd within {self.timeout:g} s") from None
            except OSError as e:
                raise GpsdError(f"reading from gpsd failed: {e}") from None
            if not chunk:
                raise GpsdError("gpsd closed the connection")
            self._buf += chunk
            if len(self._buf) > 1 << 20:
                raise GpsdError("gpsd sent more than 1 MiB without a newline")
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def read_report(self) -> dict[str, Any]:
        """The next JSON object gpsd sends (lines that are not JSON objects are counted in
        `skipped_lines` and skipped)."""
        while True:
            line = self._line().strip()
            if not line:
                continue
            try:
                obj = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                self.skipped_lines += 1
                continue
            if isinstance(obj, dict):
                return obj
            self.skipped_lines += 1

    def reports(self) -> Iterator[dict[str, Any]]:
        while True:
            yield self.read_report()

    def fixes(self) -> Iterator[Fix]:
        """TPV fixes (mode >= 2 with a position), in the order gpsd sends them."""
        for r in self.reports():
            f = fix_from_tpv(r)
            if f is not None:
                yield f

    def positions(self, track: Track, max_offset_m: float = 50.0) -> Iterator[tuple[float, float]]:
        """(UTC seconds, metres along `track`) per fix; fixes farther than `max_offset_m` from
        the track (stations, tunnels, multipath) are skipped."""
        for f in self.fixes():
            along, off = track.project(f.lat, f.lon)
            if off <= max_offset_m:
                yield f.time, along

    def track_positions(
        self, track: Track, max_offset_m: float = 50.0
    ) -> Iterator[tuple[float, float, Optional[float]]]:
        """(UTC seconds, metres along `track`, None) per fix on the track, and (time, metres,
        offset in metres) for a fix farther than `max_offset_m` from it, so a consumer that must
        fail safe (PHA-D on a router) sees an untrustworthy position instead of silence."""
        for f in self.fixes():
            along, off = track.project(f.lat, f.lon)
            yield f.time, along, (None if off <= max_offset_m else off)
