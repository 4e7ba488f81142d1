#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (corpus/<target>/) and the files that fuzzed scenarios
may reference (data/), from the repository's scenarios, traces and test data.

Run from anywhere: `python3 crates/sim/fuzz/make_seeds.py`. Deterministic; rewrites only the
seed files it owns (names starting with `seed-`), so inputs that fuzzing added to a corpus and
that were committed on purpose (regressions) stay. Keep the output small (a few hundred KB in
total): the corpora are committed.
"""

import pathlib
import re

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parents[2]
DATA = FUZZ / "data"
CORPUS = FUZZ / "corpus"


def ck(body: str) -> str:
    """NMEA 0183 checksum: XOR of the bytes between `$` and `*`."""
    x = 0
    for b in body.encode():
        x ^= b
    return f"${body}*{x:02X}"


def write(target: str, name: str, text: str) -> None:
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(text.encode())


def nmea_log(n: int, lat0=37.0, lon0=127.0, step_deg=0.0002, date="010524", t0=(12, 0, 0)) -> str:
    """`n` GGA+RMC pairs at 1 Hz heading east along lat0 (positions on the data/ track)."""
    out = []
    h, m, s = t0
    for i in range(n):
        sec = h * 3600 + m * 60 + s + i
        hms = f"{sec // 3600 % 24:02d}{sec // 60 % 60:02d}{sec % 60:02d}.000"
        lon = lon0 + i * step_deg
        lat_s = f"{int(lat0):02d}{(lat0 - int(lat0)) * 60:07.4f}"
        lon_s = f"{int(lon):03d}{(lon - int(lon)) * 60:07.4f}"
        out.append(ck(f"GPGGA,{hms},{lat_s},N,{lon_s},E,1,10,0.9,30.0,M,20.0,M,,"))
        out.append(ck(f"GPRMC,{hms},A,{lat_s},N,{lon_s},E,162.0,90.0,{date},,,A"))
    return "\n".join(out) + "\n"


def shorten(toml: str) -> str:
    """A scenario cut to what a fuzz iteration may run (README: 1 s, rates <= 100 Mbit/s)."""
    toml = re.sub(r"(?m)^duration_s = .*$", "duration_s = 1", toml)
    toml = re.sub(r"(?m)^(rate_mbps|max_mbps) = (\d+)", lambda m: f"{m.group(1)} = {min(int(m.group(2)), 100)}", toml)
    toml = re.sub(r"(?m)^warmup_s = .*$", "warmup_s = 0.2", toml)
    toml = re.sub(r'file = "[^"]*hsr[^"]*"', 'file = "per-second.trace"', toml)
    toml = toml.replace('file = "malformed.trace"', 'file = "malformed.trace"')
    # The scenario target skips text with a `/` in any string (file names stay in data/).
    toml = toml.replace("Mbit/s", "Mbps")
    # Comments are noise for the fuzzer.
    return "\n".join(ln for ln in toml.splitlines() if not ln.lstrip().startswith("#")) + "\n"


def main() -> None:
    DATA.mkdir(exist_ok=True)
    # --- files fuzzed scenarios may name (bare names, resolved against data/) ---
    track = "lat,lon\n37.0,127.0\n37.0,127.2\n"
    hsr = (ROOT / "data/hsr-traces/hsr-1529470904-reno-wlan16-U4.trace").read_bytes().decode()
    per_second = "".join(hsr.splitlines(keepends=True)[:20])
    mahimahi = "".join(f"{t}\n" for t in range(0, 60, 3)) + "60\n"
    table = (ROOT / "scenarios/p0/table.csv").read_text()
    files = {
        "per-second.trace": per_second,
        "mm.trace": mahimahi,
        "malformed.trace": (ROOT / "tests/python/data/invalid/malformed.trace").read_text(),
        "table.csv": table,
        "gps.csv": "time_s,position_m\n" + "".join(f"{i * 0.5},{i * 41.7:.1f}\n" for i in range(20)),
        "track.csv": track,
        "run.nmea": nmea_log(10),
    }
    for name, text in files.items():
        (DATA / name).write_bytes(text.encode())

    # --- scenario ---
    for p in sorted((ROOT / "scenarios").rglob("*.toml")):
        if p.parent.name == "bench" and "2x25" not in p.name and "cubic" not in p.name:
            continue
        write("scenario", f"{p.parent.name}-{p.stem}", shorten(p.read_text()))
    for p in sorted((ROOT / "tests/python/data/invalid").glob("*.toml")):
        write("scenario", f"invalid-{p.stem}", shorten(p.read_text()))
    base = (ROOT / "scenarios/examples/single-cubic.toml").read_text()
    base = shorten(base)
    write(
        "scenario",
        "mahimahi-trace",
        base.replace(
            re.search(r"(?m)^rate_mbps = .*$", base).group(0), 'trace = { format = "mahimahi", file = "mm.trace" }'
        ),
    )
    write(
        "scenario",
        "everything-link",
        """seed = 3
duration_s = 1
[output]
bin_ms = 50
warmup_s = 0.1
[[nodes]]
name = "client"
[[nodes]]
name = "server"
[[links]]
name = "l"
delay_ms = 10
rate_schedule = [ { at_s = 0, rate_mbps = 10 }, { at_s = 0.5, rate_mbps = 0 }, { at_s = 0.6, rate_mbps = 20 } ]
queue_bytes = 30000
loss = { model = "gilbert-elliott", p_good = 0.001, p_bad = 0.3, start = "bad", good = { sojourn = "exponential", mean_s = 0.2 }, bad = { sojourn = "uniform", min_s = 0.01, max_s = 0.05 } }
reorder = { p = 0.05, extra_delay_ms = 7 }
outages = [ { start_s = 0.2, duration_s = 0.05, queued = "drop" }, { start_s = 0.4, duration_s = 0.05, forwarding = { delay_ms = 10, loss = 0.1, queued_loss = 0.5 } } ]
[links.reverse]
rate_mbps = 5
delay_ms = 3
queue_packets = 20
loss = { model = "bernoulli", p = 0.01 }
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "bbr"
start_s = 0.05
stop_s = 0.9
traffic = { kind = "cbr", rate_mbps = 4 }
tcp = { mss_bytes = 1000, initial_cwnd = 4, sack = false, min_rto_ms = 100, initial_rto_ms = 500, rto_style = "rfc6298", slow_start_after_idle = false }
receiver = { rcv_buf_bytes = 100000, delayed_ack = true, delack_ms = 20, read_pauses = [ { start_s = 0.3, duration_s = 0.1 } ] }
""",
    )
    write(
        "scenario",
        "everything-mptcp",
        """duration_s = 1
[[links]]
name = "a"
rate_mbps = 8
delay_ms = 5
[[links]]
name = "b"
rate_mbps = 2
delay_ms = 40
queue_packets = 30
[[paths]]
name = "pa"
links = ["a"]
[[paths]]
name = "pb"
links = ["b"]
[[flows]]
name = "m"
paths = ["pa", "pb"]
cc = "olia"
scheduler = { name = "roundrobin", num_segments = 3, cwnd_limited = false }
traffic = { kind = "file", bytes = 300000 }
mptcp = { rcv_buf_packets = 64, receiver_recovery = true, backup = [false, true], join_delay_ms = 20, mp_prio = [ { at_s = 0.5, subflow = 1, backup = false } ] }
[[flows]]
name = "m2"
paths = ["pb", "pa"]
cc = "balia"
scheduler = { name = "peekaboo", alpha = 2, epsilon = 0.1 }
traffic = { kind = "bulk" }
[[flows]]
name = "m3"
paths = ["pa", "pb"]
cc = "wvegas"
scheduler = { name = "delay-predictive", rcvbuf_optimisation = false }
traffic = { kind = "bulk" }
[[flows]]
name = "m4"
paths = ["pa", "pb"]
cc = "vegas"
scheduler = { name = "ecf", delta_floor_ms = 0 }
traffic = { kind = "bulk" }
""",
    )
    write(
        "scenario",
        "hst-gps-trace",
        """duration_s = 1
[[links]]
name = "a"
rate_mbps = 20
delay_ms = 20
[[links]]
name = "b"
rate_mbps = 20
delay_ms = 20
[[paths]]
name = "pa"
links = ["a"]
[[paths]]
name = "pb"
links = ["b"]
[[flows]]
name = "m"
paths = ["pa", "pb"]
cc = "lia"
scheduler = "pha(blest)"
traffic = { kind = "bulk" }
mptcp = { pha_d = { policy = "queue-aware", lead_ms = 50 } }
[hst]
links = ["a", "b"]
table = "table.csv"
train = { start_m = 600, speed_kmh = 300 }
radio = { capacity = { mode = "sinr", max_mbps = 50, period_ms = 100 } }
handover = { source_buffer = "forward", interruption_ms = 60 }
[hst.gps_trace]
file = "run.nmea"
track = "track.csv"
max_offset_m = 80
""",
    )
    write(
        "scenario",
        "hst-position-trace",
        """duration_s = 1
[[links]]
name = "a"
rate_mbps = 20
delay_ms = 20
[[paths]]
name = "pa"
links = ["a"]
[[flows]]
name = "m"
paths = ["pa"]
cc = "cubic"
scheduler = "oracle(linux-default)"
traffic = { kind = "bulk" }
[[flows]]
name = "m2"
paths = ["pa"]
cc = "reno"
scheduler = "block(redundant)"
traffic = { kind = "bulk" }
[hst]
links = ["a"]
radio = { operators = [ { name = "X", offset_m = 0 } ] }
handover = { model = "signalling", signalling = { rrc = "radio", rlc_buffer_bytes = 4096, rach_failure = 0.5 } }
[hst.gps_trace]
file = "gps.csv"
""",
    )

    # --- traces ---
    write("trace_mahimahi", "basic", mahimahi)
    write("trace_mahimahi", "crlf-bom-blank", "\ufeff0\r\n5\r\n\r\n5\r\n12\r\n")
    write("trace_mahimahi", "bad-lines", "1\n2\nabc\n-3\n7.5\n99999999999999999999999\n")
    write("trace_mbps_per_second", "hsr-head", per_second)
    write("trace_mbps_per_second", "gaps", "1 1.0\n2 2.0\n5 3.0\n")
    write("trace_mbps_per_second", "bad-lines", files["malformed.trace"] + "0 1\n1 -2\n1 NaN\n2000000000 1\n")

    # --- handover table, NMEA, track, position trace, handover log ---
    write("handover_table", "p0", table)
    write("handover_table", "bad", "operator,start_m,end_m,count\nA,10,5,1\nA,x,5,1\nA,1,5\n,1,5,1\nA,1,5,0\n")
    write("nmea", "generated", nmea_log(5))
    write(
        "nmea",
        "gpsd-doc",
        "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\n"
        "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A\n"
        "$GPGSV,2,1,08,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,45*75\n",
    )
    write(
        "nmea",
        "midnight-no-date",
        ck("GNGGA,235959.50,3700.0000,S,12700.0000,W,2,10,0.9,30.0,M,20.0,M,,")
        + "\n"
        + ck("GNGGA,000000.50,3700.0010,S,12700.0010,W,2,10,0.9,30.0,M,20.0,M,,")
        + "\n"
        + ck("GPRMC,000001.00,V,,,,,,,010100,,,N")
        + "\n# comment\n$PGRME,15.0,M,45.0,M,25.0,M*1D\n",
    )
    write("track_csv", "two-points", track)
    write("track_csv", "polyline", "# a curve\nlat, lon\n37.0,127.0\n37.01,127.05\n-89.9,-179.9\n90,180\n")
    write("gps_trace", "basic", files["gps.csv"])
    write("gps_trace", "bad", "time_s,position_m\n0,1\n0.1,x\n-1,5\n0.05,2\n")
    write(
        "handover_log",
        "unix-and-iso",
        "operator,start,end\nA,1714566896.25,1714566896.30\n"
        "B,2024-05-01T12:34:56.25Z,2024-05-01T12:34:56.31+00:00\nB,2024-05-01 12:35:00,2024-05-01T12:35:00.05\n",
    )
    write("handover_log", "bad", "operator,start,end\n,1,2\nA,2,1\nA,2024-02-30T00:00:00Z,x\nA,1,2,3\n")
    # learn_recorded: track, NMEA log, handover log separated by lines `%%`.
    t0 = 1714564800  # 2024-05-01T12:00:00Z, the first fix of nmea_log()
    write(
        "learn_recorded",
        "basic",
        track
        + "%%\n"
        + nmea_log(10)
        + "%%\n"
        + f"operator,start,end\nA,{t0 + 2.2},{t0 + 2.3}\nB,2024-05-01T12:00:05Z,2024-05-01T12:00:05.1Z\n",
    )


if __name__ == "__main__":
    main()
