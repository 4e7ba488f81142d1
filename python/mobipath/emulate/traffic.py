"""The bulk transfer on real sockets, and what is measured while it runs.

TCP: the sender (side a) connects to the receiver (side b) with the scenario's congestion control
set on the socket. MPTCP: the receiver (side b, the client with the endpoints) connects to the
sender (side a, listener) with ``IPPROTO_MPTCP``. The congestion control is set with
``TCP_CONGESTION`` on both sockets (a namespace's default cannot be set to a restricted one such
as cubic from outside the initial namespace); an MPTCP socket applies it to every subflow.

Every bin (the scenario's ``output.bin_ms``) the main thread samples the kernel: ``TCP_INFO`` of
the TCP sender; for MPTCP ``MPTCP_INFO`` of the connection and ``MPTCP_TCPINFO`` +
``MPTCP_SUBFLOW_ADDRS`` on both ends, mapping each subflow to its path by address. Goodput is
counted by the receiving application per bin, as the simulator defines it (metrics.md): in-order
bytes delivered to the application.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .kernel_info import IPPROTO_MPTCP, TCP_CONGESTION, MptcpInfo, Subflow, mptcp_info, mptcp_subflows, tcp_info
from .netns import EmulateError
from .plan import Plan
from .topology import Topology

PORT = 5001


@dataclass
class Measured:
    """One run's measurements, in the simulator's vocabulary."""

    flow: dict[str, Any]
    #: flow-level series, one value per bin
    series: dict[str, list[Optional[float]]]
    #: per path index: series of that path's subflow
    subflow_series: dict[int, dict[str, list[Optional[float]]]] = field(default_factory=dict)
    #: MP_PRIO changes actually made: {"t_s", "subflow", "backup"}
    mp_prio_events: list[dict[str, Any]] = field(default_factory=list)


def _wait_until(t: float) -> None:
    while True:
        d = t - time.monotonic()
        if d <= 0:
            return
        time.sleep(min(d, 0.05))


def bulk(topo: Topology, p: Plan, on_tick: Optional[Callable[[float], None]] = None) -> Measured:
    """Runs the bulk transfer of plan `p` over `topo` (already built); returns the measurements."""
    mptcp = p.protocol == "mptcp"
    n_bins = max(1, int(round(p.duration_s / p.bin_s)))
    rx_bins = [0] * n_bins
    proto = IPPROTO_MPTCP if mptcp else 0
    errors: list[BaseException] = []
    stop = threading.Event()
    holder: dict[str, socket.socket] = {}
    connected = threading.Event()

    # Listening end: the receiver for TCP, the sender for MPTCP.
    listen_side = "a" if mptcp else "b"
    with topo.netns(listen_side):
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((topo.addr(listen_side), PORT))
    lst.listen(1)
    lst.settimeout(10.0)
    with topo.netns("b" if mptcp else "a"):
        active = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    if mptcp:
        active.bind((topo.addr("b"), 0))
    # Set on both ends' sockets (an MPTCP socket passes it to every subflow, joins included;
    # the accepted socket inherits the listener's); the sender's is checked once connected.
    for sock in (lst, active):
        sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, p.cc.encode())
    t0 = time.monotonic()
    topo.start_clock()

    def receive(conn: socket.socket) -> None:
        conn.settimeout(0.5)
        buf = bytearray(1 << 18)
        while True:
            try:
                n = conn.recv_into(buf)
            except socket.timeout:
                if stop.is_set():
                    break
                continue
            if n == 0:
                break
            k = int((time.monotonic() - t0) / p.bin_s)
            if 0 <= k < n_bins:
                rx_bins[k] += n

    def send(conn: socket.socket) -> None:
        conn.settimeout(0.2)
        chunk = b"\0" * (1 << 16)
        stop_at = p.stop_s if p.stop_s is not None else p.duration_s
        while not stop.is_set() and time.monotonic() - t0 < stop_at:
            try:
                conn.send(chunk)
            except socket.timeout:
                continue

    def passive() -> None:
        try:
            conn, _ = lst.accept()
            holder["passive"] = conn
            connected.set()
            (send if mptcp else receive)(conn)
        except BaseException as e:
            if not stop.is_set():
                errors.append(e)

    def active_side() -> None:
        try:
            delay = p.start_s - (time.monotonic() - t0)
            if delay > 0:
                time.sleep(delay)
            active.settimeout(10.0)
            active.connect((topo.addr(listen_side), PORT))
            (receive if mptcp else send)(active)
        except BaseException as e:
            if not stop.is_set():  # errors after the end (shutdown under a send) are expected
                errors.append(e)

    threads = [threading.Thread(target=passive, daemon=True), threading.Thread(target=active_side, daemon=True)]
    for t in threads:
        t.start()

    def check_cc(sock: socket.socket) -> None:
        got = sock.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
        if got != p.cc:
            raise EmulateError(f"could not set congestion control {p.cc} (the sender's socket has {got})")

    def sender_sock() -> Optional[socket.socket]:
        return holder.get("passive") if mptcp else active

    def receiver_sock() -> Optional[socket.socket]:
        return active if mptcp else holder.get("passive")

    series: dict[str, list[Optional[float]]] = {"cwnd_segments": [], "srtt_ms": [], "rto_ms": [], "throughput_mbps": []}
    sub_series: dict[int, dict[str, list[Optional[float]]]] = (
        {
            k: {"goodput_mbps": [], "throughput_mbps": [], "cwnd_segments": [], "srtt_ms": []}
            for k in range(len(p.paths))
        }
        if mptcp
        else {}
    )
    sub_last_sent: dict[int, int] = {}
    sub_last_rcvd: dict[int, int] = {}
    sub_final: dict[int, dict[str, Any]] = {}
    sub_warm: dict[int, tuple[int, int]] = {}  # (bytes sent, bytes received) at the end of the warm-up
    rtts: list[float] = []
    last_sent = 0
    warm_sent: Optional[int] = None
    warm_rx: Optional[int] = None
    prio = list(p.mp_prio)
    cc_checked = False
    prio_done: list[dict[str, Any]] = []
    final_tcp = None
    final_mp: Optional[MptcpInfo] = None

    def by_path(subs: list[Subflow], which: str) -> dict[int, Subflow]:
        out: dict[int, Subflow] = {}
        for s in subs:
            k = topo.path_of_addr((s.remote if which == "remote" else s.local)[0])
            if k is not None:
                out[k] = s
        return out

    for k in range(n_bins):
        bin_end = t0 + (k + 1) * p.bin_s
        while prio and t0 + float(prio[0]["at_s"]) < bin_end:
            e = prio.pop(0)
            _wait_until(t0 + float(e["at_s"]))
            topo.set_backup(int(e["subflow"]), bool(e["backup"]))
            prio_done.append(
                {"t_s": round(time.monotonic() - t0, 6), "subflow": int(e["subflow"]), "backup": bool(e["backup"])}
            )
        _wait_until(bin_end)
        if errors:
            break
        if on_tick is not None:
            on_tick((k + 1) * p.bin_s)
        s = sender_sock()
        if s is not None and not cc_checked:
            check_cc(s)
            cc_checked = True
        if s is None:
            for key in series:
                series[key].append(None)
            for ss in sub_series.values():
                for key in ss:
                    ss[key].append(None)
            continue
        if mptcp:
            mi = mptcp_info(s)
            sent_now = mi.bytes_sent if mi else 0
            final_mp = mi
            snd_subs = by_path(mptcp_subflows(s), "remote")
            r = receiver_sock()
            rcv_subs = by_path(mptcp_subflows(r), "local") if r is not None else {}
            for j, ss in sub_series.items():
                a = snd_subs.get(j)
                b = rcv_subs.get(j)
                if a is not None:
                    ss["throughput_mbps"].append((a.info.bytes_sent - sub_last_sent.get(j, 0)) * 8 / p.bin_s / 1e6)
                    ss["cwnd_segments"].append(float(a.info.cwnd))
                    ss["srtt_ms"].append(a.info.rtt_ms)
                    sub_last_sent[j] = a.info.bytes_sent
                    fin = sub_final.setdefault(j, {"rtts": []})
                    fin["snd"] = a.info
                    if (k + 1) * p.bin_s > p.warmup_s and a.info.rtt_ms > 0:
                        fin["rtts"].append(a.info.rtt_ms)
                else:
                    for key in ("throughput_mbps", "cwnd_segments", "srtt_ms"):
                        ss[key].append(None)
                if b is not None:
                    ss["goodput_mbps"].append((b.info.bytes_received - sub_last_rcvd.get(j, 0)) * 8 / p.bin_s / 1e6)
                    sub_last_rcvd[j] = b.info.bytes_received
                    sub_final.setdefault(j, {"rtts": []})["rcv"] = b.info
                else:
                    ss["goodput_mbps"].append(None)
            cw = [x.info.cwnd for x in snd_subs.values()]
            rt = [x.info.rtt_ms for x in snd_subs.values() if x.info.rtt_ms > 0]
            series["cwnd_segments"].append(float(sum(cw)) if cw else None)
            series["srtt_ms"].append(min(rt) if rt else None)
            series["rto_ms"].append(None)
        else:
            info = tcp_info(s)
            final_tcp = info
            sent_now = info.bytes_sent
            series["cwnd_segments"].append(float(info.cwnd))
            series["srtt_ms"].append(info.rtt_ms)
            series["rto_ms"].append(info.rto_ms)
            if (k + 1) * p.bin_s > p.warmup_s and info.rtt_ms > 0:
                rtts.append(info.rtt_ms)
        series["throughput_mbps"].append((sent_now - last_sent) * 8 / p.bin_s / 1e6)
        last_sent = sent_now
        if warm_sent is None and (k + 1) * p.bin_s >= p.warmup_s - 1e-9:
            # Counters at the end of the warm-up (or zero if there is none).
            warm_sent = sent_now if p.warmup_s > 0 else 0
            warm_rx = sum(rx_bins[: k + 1]) if p.warmup_s > 0 else 0
            if p.warmup_s > 0:
                sub_warm.update({j: (sub_last_sent.get(j, 0), sub_last_rcvd.get(j, 0)) for j in sub_series})
    stop.set()
    for open_sock in (active, holder.get("passive")):
        if open_sock is not None:
            with contextlib.suppress(OSError):
                open_sock.shutdown(socket.SHUT_RDWR)
    for t in threads:
        t.join(2.0)
    for open_sock in (active, holder.get("passive"), lst):
        if open_sock is not None:
            open_sock.close()
    if errors:
        err = errors[0]
        raise EmulateError(f"the transfer failed: {type(err).__name__}: {err}")
    if not connected.is_set():
        raise EmulateError("the connection was never established")

    delivered = sum(rx_bins)
    window = max(p.duration_s - max(p.warmup_s, p.start_s), 1e-9)
    mbps = lambda b: round(b * 8 / window / 1e6, 6)  # noqa: E731
    flow: dict[str, Any] = {
        "protocol": p.protocol,
        "cc": p.cc,
        "goodput_mbps": mbps(delivered - (warm_rx or 0)),
        "bytes_delivered": delivered,
        "fct_s": None,
    }
    if mptcp:
        sent = final_mp.bytes_sent if final_mp else 0
        subs_out = []
        seg_out = seg_retx = 0
        for j in range(len(p.paths)):
            last = sub_final.get(j)
            snd = last.get("snd") if last else None
            rcv = last.get("rcv") if last else None
            seg_out += snd.data_segs_out if snd else 0
            seg_retx += snd.total_retrans if snd else 0
            rt = last["rtts"] if last else []
            w_sent, w_rcvd = sub_warm.get(j, (0, 0))
            subs_out.append(
                {
                    "path": p.paths[j]["name"],
                    "established": snd is not None,
                    "goodput_mbps": mbps(rcv.bytes_received - w_rcvd) if rcv else 0.0,
                    "throughput_mbps": mbps(snd.bytes_sent - w_sent) if snd else 0.0,
                    "bytes_delivered": rcv.bytes_received if rcv else 0,
                    "segments_sent": snd.data_segs_out if snd else 0,
                    "segments_retransmitted": snd.total_retrans if snd else 0,
                    "mean_rtt_ms": round(sum(rt) / len(rt), 6) if rt else None,
                }
            )
        flow.update(
            {
                "scheduler": "linux-default",
                "throughput_mbps": mbps(sent - (warm_sent or 0)),
                "bytes_sent": sent,
                "segments_sent": seg_out,
                "segments_retransmitted": seg_retx,
                "retransmission_ratio": round(seg_retx / seg_out, 6) if seg_out else 0.0,
                "fallback_to_tcp": bool(final_mp.fallback) if final_mp else None,
                "subflows": subs_out,
            }
        )
    else:
        assert final_tcp is not None or errors
        f = final_tcp
        flow.update(
            {
                "throughput_mbps": mbps((f.bytes_sent if f else 0) - (warm_sent or 0)),
                "bytes_sent": f.bytes_sent if f else 0,
                "segments_sent": f.data_segs_out if f else 0,
                "segments_retransmitted": f.total_retrans if f else 0,
                "retransmission_ratio": round(f.total_retrans / f.data_segs_out, 6) if f and f.data_segs_out else 0.0,
                "mean_rtt_ms": round(sum(rtts) / len(rtts), 6) if rtts else None,
                "min_rtt_ms": round(f.min_rtt_ms, 6) if f and f.min_rtt_ms > 0 else None,
                "final_cwnd_segments": f.cwnd if f else None,
            }
        )
    series["goodput_mbps"] = [b * 8 / p.bin_s / 1e6 for b in rx_bins]
    return Measured(flow=flow, series=series, subflow_series=sub_series, mp_prio_events=prio_done)
