"""Packet captures read by Wireshark's dissectors (tshark): `mobipath run --pcap` (docs/pcap.md).

Each test reads the files with tshark, the way a user opens them, and checks them against the
run's summary: no malformed packet, no expert error, no bad checksum; MPTCP options where RFC 8684
puts them; every data segment mapped to its data sequence number; packets per file equal to the
summary's `packets_delivered`; TCP retransmissions tshark flags equal to the sender's count.
Skipped where tshark is not installed (.ci/run installs it, so CI runs them); the bad-input tests
need no tshark.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(
    TSHARK is None or shutil.which("mergecap") is None or shutil.which("editcap") is None,
    reason="tshark (Wireshark) is not installed; .ci/run installs it with apt-get",
)

HANDSHAKE = "mobipath: handshake added by the capture"

# MPTCP over two paths: a lossy one with a short queue (wire and queue drops, reinjections), one
# with an outage (a handover-like gap) and MP_PRIO marking its subflow backup, then regular.
MPTCP = """
name = "pcap-mptcp"
duration_s = 4
seed = 3
[[links]]
name = "wifi"
rate_mbps = 20
delay_ms = 10
queue_packets = 20
loss = { model = "bernoulli", p = 0.01 }
[[links]]
name = "lte"
rate_mbps = 10
delay_ms = 25
queue_packets = 60
outages = [{ start_s = 2.0, duration_s = 0.3 }]
[[paths]]
name = "a"
links = ["wifi"]
[[paths]]
name = "b"
links = ["lte"]
[[flows]]
name = "m"
paths = ["a", "b"]
cc = "lia"
scheduler = "minrtt"
traffic = { kind = "bulk" }
mptcp = { mp_prio = [{ at_s = 1.0, subflow = 1, backup = true }, { at_s = 1.5, subflow = 1, backup = false }] }
"""

# Single-path TCP over a link that loses packets on the wire (and never on its queue), so the
# far end's capture shifted back by the link's delay and merged with the drops is the sender's
# side of the link, in order.
TCP = """
name = "pcap-tcp"
duration_s = 6
seed = 2
[[links]]
name = "lossy"
rate_mbps = 20
delay_ms = 20
queue_packets = 2000
loss = { model = "bernoulli", p = 0.02 }
[[paths]]
name = "p"
links = ["lossy"]
[[flows]]
name = "t"
path = "p"
cc = "cubic"
start_s = 0.1
traffic = { kind = "bulk" }
"""


def run(tmp: Path, text: str, *flags: str) -> tuple[dict, Path]:
    scenario = tmp / "s.toml"
    scenario.write_text(text)
    out = tmp / "out"
    r = subprocess.run(
        [sys.executable, "-m", "mobipath", "run", str(scenario), "--out", str(out), "--json", "--pcap", *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), out / "pcap"


def tshark(path: Path, *args: str) -> list[str]:
    r = subprocess.run(
        [TSHARK, "-n", "-r", str(path), "-o", "mptcp.analyze_mappings:TRUE", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def fields(path: Path, flt: str, *names: str) -> list[list[str]]:
    args = ["-T", "fields", "-E", "separator=|"] + [x for n in names for x in ("-e", n)]
    if flt:
        args = ["-Y", flt, *args]
    return [line.split("|") for line in tshark(path, *args)]


@pytest.fixture(scope="module")
def mptcp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    return run(tmp_path_factory.mktemp("pcap-mptcp"), MPTCP)


@needs_tshark
def test_every_file_reads_cleanly_with_checksums_verified(mptcp_run: tuple[dict, Path]) -> None:
    summary, pcap = mptcp_run
    files = sorted(pcap.glob("*.pcapng"))
    assert {f.name for f in files} >= {f"{n}.pcapng" for n in summary["links"]}
    for f in files:
        checks = ["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"]
        bad = tshark(f, *checks, "-Y", "_ws.malformed || tcp.checksum.status == 0 || ip.checksum.status == 0")
        assert bad == [], f"{f.name}: {bad[:3]}"
        # The checks did run: ACKs (whole within the snap length) have checksums tshark verified
        # as good; data segments are cut at 128 bytes, so theirs cannot be checked.
        good = tshark(f, *checks, "-Y", "tcp.checksum.status == 1 && ip.checksum.status == 1")
        if f.name.endswith(".reverse.pcapng"):
            assert len(good) == len(tshark(f)), f"{f.name}: not every checksum verified"
        small = tshark(f, "-Y", "frame.cap_len == frame.len")
        assert len(good) == len(small), f"{f.name}: a whole packet whose checksums were not verified"
        errors = tshark(f, *checks, "-q", "-z", "expert,error")
        assert not any(line.startswith("Errors") for line in errors), f"{f.name}: {errors}"


@needs_tshark
def test_mptcp_options_where_rfc_8684_puts_them(mptcp_run: tuple[dict, Path]) -> None:
    summary, pcap = mptcp_run
    # The first subflow's SYN carries MP_CAPABLE (subtype 0), the joined one's MP_JOIN
    # (subtype 1) with the token tshark derives from the receiver's key.
    syn = fields(pcap / "wifi.forward.pcapng", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "tcp.options.mptcp.subtype")
    assert syn == [["0"]]
    join = fields(
        pcap / "lte.forward.pcapng",
        "tcp.flags.syn == 1 && tcp.flags.ack == 0",
        "tcp.options.mptcp.subtype",
        "tcp.options.mptcp.recvtok",
    )
    assert [j[0] for j in join] == ["1"]
    synack = fields(pcap / "wifi.reverse.pcapng", "tcp.flags.syn == 1 && tcp.flags.ack == 1", "mptcp.expected_token")
    assert int(join[0][1]) == int(synack[0][0]), "MP_JOIN names the receiver's token"
    # Every data segment carries a DSS mapping (subtype 2).
    for link in ("wifi", "lte"):
        data = fields(pcap / f"{link}.forward.pcapng", "tcp.len > 0", "tcp.options.mptcp.subtype", "mptcp.dss.dsn")
        assert data and all("2" in d[0].split(",") and d[1] for d in data), link
    # MP_PRIO (subtype 5) on the receiver's ACKs of subflow 1: B = 1, then B = 0, as sent.
    prio = fields(pcap / "lte.reverse.pcapng", "tcp.options.mptcp.subtype == 5", "tcp.options.mptcp.backup.flag")
    sent = summary["flows"]["m"]["mp_prio_sent"]
    assert sent == 2 and [p[0] for p in prio] == ["1", "0"]


@needs_tshark
def test_mapping_analysis_maps_every_data_segment_to_its_dsn(mptcp_run: tuple[dict, Path], tmp_path: Path) -> None:
    _, pcap = mptcp_run
    merged = tmp_path / "data.pcapng"
    subprocess.run(
        ["mergecap", "-w", str(merged), str(pcap / "wifi.forward.pcapng"), str(pcap / "lte.forward.pcapng")],
        check=True,
    )
    rows = fields(merged, "tcp.len > 0", "mptcp.stream", "mptcp.related_mapping", "mptcp.dsn", "tcp.len")
    assert len(rows) > 1000
    assert {r[0] for r in rows} == {"0"}, "both subflows belong to one MPTCP connection"
    assert all(r[1] for r in rows), "a data segment without a mapping"
    # Relative DSNs start at 1 and stay within the bytes sent (reinjections repeat some).
    dsns = [int(r[2]) for r in rows]
    assert min(dsns) == 1
    assert max(int(r[2]) + int(r[3]) for r in rows) <= sum(int(r[3]) for r in rows) + 1
    missing = tshark(merged, "-Y", "mptcp.dss.missing_mapping")
    assert missing == []


@needs_tshark
def test_packets_per_file_equal_the_summary(mptcp_run: tuple[dict, Path]) -> None:
    summary, pcap = mptcp_run
    for name, link in summary["links"].items():
        comments = fields(pcap / f"{name}.pcapng", "", "frame.comment")
        simulated = [c for c in comments if not c[0].startswith(HANDSHAKE)]
        assert len(simulated) == link["packets_delivered"], name
        drops = pcap / f"{name}.drops.pcapng"
        if link["drops"]:
            causes = fields(drops, "", "frame.comment")
            assert len(causes) == link["drops"], name
            assert all(c[0].startswith("dropped: ") for c in causes)
        else:
            assert not drops.exists()
    # The outage's start is announced on the lte link's first packet after it.
    notes = fields(pcap / "lte.forward.pcapng", 'frame.comment contains "outage"', "frame.time_epoch")
    assert len(notes) == 1 and float(notes[0][0]) >= 2.0


@needs_tshark
def test_tcp_retransmissions_tshark_flags_agree_with_the_sender(tmp_path: Path) -> None:
    summary, pcap = run(tmp_path, TCP)
    sent = summary["flows"]["t"]["segments_retransmitted"]
    link = summary["links"]["lossy.forward"]
    assert sent > 10 and link["drops_queue"] == 0 and link["drops_loss"] > 10
    # The sender's side of the link: the far end's packets 20 ms earlier (the delay), with the
    # packets lost on the wire at the time they left.
    shifted = tmp_path / "shifted.pcapng"
    subprocess.run(["editcap", "-t", "-0.020", str(pcap / "lossy.forward.pcapng"), str(shifted)], check=True)
    sender_side = tmp_path / "sender.pcapng"
    subprocess.run(
        ["mergecap", "-w", str(sender_side), str(shifted), str(pcap / "lossy.forward.drops.pcapng")], check=True
    )
    flagged = tshark(sender_side, "-Y", "tcp.analysis.retransmission || tcp.analysis.out_of_order")
    assert len(flagged) == sent
    # At the far end, the retransmissions that arrived fill the holes the losses left.
    far = tshark(pcap / "lossy.forward.pcapng", "-Y", "tcp.analysis.retransmission || tcp.analysis.out_of_order")
    assert 0 < len(far) <= sent


def test_bad_capture_input_is_refused_before_the_run(tmp_path: Path) -> None:
    def fails(text: str, *flags: str, out: Path | None = None) -> str:
        scenario = tmp_path / "bad.toml"
        scenario.write_text(text)
        target = out if out is not None else tmp_path / "out"
        r = subprocess.run(
            [sys.executable, "-m", "mobipath", "run", str(scenario), "--out", str(target), *flags],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 1, r.stdout + r.stderr
        assert not (target / "summary.json").exists(), "no run after a refused capture"
        return r.stderr

    unknown = TCP.replace('name = "pcap-tcp"', 'name = "pcap-tcp"\n[output]\npcap = ["lossy", "wlan0"]')
    err = fails(unknown)
    assert "output.pcap[1]" in err and "wlan0" in err and "unknown link" in err
    assert "--pcap-max-mb" in fails(TCP, "--pcap", "--pcap-max-mb", "0")
    zero = TCP.replace('name = "pcap-tcp"', 'name = "pcap-tcp"\n[output]\npcap = true\npcap_max_mb = 0')
    assert "output.pcap_max_mb" in fails(zero)
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "pcap").write_text("a file where the capture directory must go")
    assert "cannot write the capture there" in fails(TCP, "--pcap", out=blocked)
