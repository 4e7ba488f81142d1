"""What the kernel says about a socket: ``TCP_INFO``, ``MPTCP_INFO``, ``MPTCP_TCPINFO`` and
``MPTCP_SUBFLOW_ADDRS`` (include/uapi/linux/tcp.h and mptcp.h).

Only fields this package uses are decoded; a field beyond what the running kernel returns reads
as 0 (older kernels return shorter structs). ``MPTCP_TCPINFO`` and ``MPTCP_SUBFLOW_ADDRS`` take an
input header (``struct mptcp_subflow_data``), which Python's ``socket.getsockopt`` cannot pass, so
they go through libc's ``getsockopt`` with a prepared buffer.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
from dataclasses import dataclass
from typing import Optional

TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)
SOL_MPTCP = 284
MPTCP_INFO = 1
MPTCP_TCPINFO = 2
MPTCP_SUBFLOW_ADDRS = 3
#: Bytes of struct tcp_info requested (up to tcpi_bytes_received and beyond).
TCP_INFO_LEN = 232
#: struct mptcp_subflow_data: 4 x u32, 8-byte aligned.
SUBFLOW_DATA_LEN = 16
#: struct mptcp_subflow_addrs: two sockaddr_storage unions.
SUBFLOW_ADDRS_LEN = 256
MAX_SUBFLOWS = 16

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class TcpInfo:
    rto_ms: float
    snd_mss: int
    rtt_ms: float
    cwnd: int
    total_retrans: int
    min_rtt_ms: float
    data_segs_out: int
    bytes_sent: int
    bytes_acked: int
    bytes_received: int


def _u32(b: bytes, off: int) -> int:
    return struct.unpack_from("I", b, off)[0] if len(b) >= off + 4 else 0


def _u64(b: bytes, off: int) -> int:
    return struct.unpack_from("Q", b, off)[0] if len(b) >= off + 8 else 0


def parse_tcp_info(b: bytes) -> TcpInfo:
    """Offsets of `struct tcp_info` (include/uapi/linux/tcp.h)."""
    return TcpInfo(
        rto_ms=_u32(b, 8) / 1000.0,
        snd_mss=_u32(b, 16),
        rtt_ms=_u32(b, 68) / 1000.0,
        cwnd=_u32(b, 80),
        total_retrans=_u32(b, 100),
        bytes_acked=_u64(b, 120),
        bytes_received=_u64(b, 128),
        min_rtt_ms=_u32(b, 148) / 1000.0,
        data_segs_out=_u32(b, 156),
        bytes_sent=_u64(b, 200),
    )


def tcp_info(sock: socket.socket) -> TcpInfo:
    return parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCP_INFO_LEN))


@dataclass
class MptcpInfo:
    subflows: int
    flags: int
    write_seq: int
    snd_una: int
    rcv_nxt: int
    retransmits: int
    bytes_retrans: int
    bytes_sent: int
    bytes_received: int
    bytes_acked: int

    @property
    def fallback(self) -> bool:
        """The connection fell back to plain TCP (MPTCP_INFO_FLAG_FALLBACK)."""
        return bool(self.flags & 1)


def mptcp_info(sock: socket.socket) -> Optional[MptcpInfo]:
    """`struct mptcp_info`; None if the socket is not MPTCP (or fell back before the option existed)."""
    try:
        b = sock.getsockopt(SOL_MPTCP, MPTCP_INFO, 96)
    except OSError:
        return None
    return MptcpInfo(
        subflows=b[0] if b else 0,
        flags=_u32(b, 8),
        write_seq=_u64(b, 16),
        snd_una=_u64(b, 24),
        rcv_nxt=_u64(b, 32),
        retransmits=_u32(b, 44),
        bytes_retrans=_u64(b, 48),
        bytes_sent=_u64(b, 56),
        bytes_received=_u64(b, 64),
        bytes_acked=_u64(b, 72),
    )


def _subflow_array(sock: socket.socket, opt: int, elem: int) -> list[bytes]:
    n = SUBFLOW_DATA_LEN + MAX_SUBFLOWS * elem
    buf = ctypes.create_string_buffer(n)
    struct.pack_into("IIII", buf, 0, SUBFLOW_DATA_LEN, 0, 0, elem)
    optlen = ctypes.c_uint32(n)
    if _libc.getsockopt(sock.fileno(), SOL_MPTCP, opt, buf, ctypes.byref(optlen)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"getsockopt(SOL_MPTCP, {opt}): {os.strerror(e)}")
    raw = buf.raw[: optlen.value]
    _, num, size_kernel, size_user = struct.unpack_from("IIII", raw, 0)
    step = size_user or elem
    out = []
    for i in range(min(num, MAX_SUBFLOWS)):
        off = SUBFLOW_DATA_LEN + i * step
        if off + min(step, elem) > len(raw):
            break
        out.append(raw[off : off + step])
    return out


def _sockaddr_in(b: bytes) -> tuple[str, int]:
    family = struct.unpack_from("H", b, 0)[0]
    if family != socket.AF_INET:
        return ("", 0)
    port = struct.unpack_from("!H", b, 2)[0]
    return (socket.inet_ntoa(b[4:8]), port)


@dataclass
class Subflow:
    local: tuple[str, int]
    remote: tuple[str, int]
    info: TcpInfo


def mptcp_subflows(sock: socket.socket) -> list[Subflow]:
    """Every subflow's addresses and `tcp_info` (both arrays come from the same walk of the
    connection's subflow list; if it changed in between, the shorter length wins)."""
    infos = _subflow_array(sock, MPTCP_TCPINFO, TCP_INFO_LEN)
    addrs = _subflow_array(sock, MPTCP_SUBFLOW_ADDRS, SUBFLOW_ADDRS_LEN)
    return [
        Subflow(local=_sockaddr_in(a[:128]), remote=_sockaddr_in(a[128:]), info=parse_tcp_info(i))
        for i, a in zip(infos, addrs)
    ]
