"""Live cell-id logger: each modem's serving cell read from ModemManager over D-Bus, written as
the cell-id log ``time,operator,cell`` that ``mobipath router handover-log --cells`` turns into a
handover log (``holog.py``).

ModemManager's API (``org.freedesktop.ModemManager1``, ModemManager 1.x D-Bus reference):

- a modem is the object ``/org/freedesktop/ModemManager1/Modem/N`` (``mmcli -L`` lists them);
- ``org.freedesktop.ModemManager1.Modem.Location``: property ``Enabled`` (bit mask of
  ``MMModemLocationSource``; ``MM_MODEM_LOCATION_SOURCE_3GPP_LAC_CI`` = 1), property
  ``SignalsLocation``, method ``Setup(u sources, b signal_location)`` and method
  ``GetLocation() -> a{uv}``, whose entry for source 1 is the string ``"MCC,MNC,LAC,CI,TAC"``
  (LAC, CI and TAC in hexadecimal).

If the 3GPP source is off, the logger turns it on once with ``Setup`` (what
``mmcli --location-enable-3gpp`` does), keeping the other enabled sources and the signalling
setting, and prints that it did. It then polls ``GetLocation`` every ``interval`` seconds (polling
rather than waiting for property-change signals: it needs no signalling setup, and its period is
what bounds each handover's logged span). An observation without a cell id (no service, CI 0)
is written with an empty cell; a failed poll writes nothing and is reported once per modem until a
poll succeeds again. Rows are flushed as they are written, so a killed logger loses at most the
row being written.

Needs the ``dbus-fast`` package (``pip install 'mobipath[router]'``).
"""

from __future__ import annotations

import asyncio
import re
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Callable, Optional, TextIO

from ..errors import ConfigError, ScenarioError

__all__ = ["MM_BUS_NAME", "parse_modem_specs", "cell_from_3gpp", "record"]

MM_BUS_NAME = "org.freedesktop.ModemManager1"
LOCATION_IFACE = "org.freedesktop.ModemManager1.Modem.Location"
SOURCE_3GPP_LAC_CI = 1
_OPERATOR = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")


def parse_modem_specs(specs: Sequence[str]) -> list[tuple[str, str]]:
    """``OPERATOR=MODEM`` (MODEM: ModemManager's index, or the modem's object path) → (operator,
    object path). Errors name the option and the expected form."""
    out: list[tuple[str, str]] = []
    errs: list[ConfigError] = []
    for spec in specs:
        op, sep, modem = spec.partition("=")
        if not sep or not _OPERATOR.match(op) or not modem:
            errs.append(
                ConfigError(
                    "--modem",
                    spec,
                    "expected OPERATOR=MODEM, e.g. A=0 (ModemManager's modem index) or "
                    "A=/org/freedesktop/ModemManager1/Modem/0",
                )
            )
            continue
        if modem.isdigit():
            path = f"/org/freedesktop/ModemManager1/Modem/{int(modem)}"
        elif re.match(r"^/org/freedesktop/ModemManager1/Modem/\d+$", modem):
            path = modem
        else:
            errs.append(
                ConfigError(
                    "--modem", spec, "MODEM must be an index (0, 1, ...) or /org/freedesktop/ModemManager1/Modem/N"
                )
            )
            continue
        if any(o == op for o, _ in out):
            errs.append(ConfigError("--modem", spec, f"operator {op} given twice"))
            continue
        out.append((op, path))
    if not out and not errs:
        errs.append(ConfigError("--modem", "", "give at least one --modem OPERATOR=MODEM"))
    if errs:
        raise ScenarioError(errs)
    return out


def cell_from_3gpp(value: str) -> Optional[str]:
    """The cell id (hex, upper case, as mmcli prints it) from ModemManager's 3GPP location
    string ``MCC,MNC,LAC,CI[,TAC]``; None when there is none (no service: CI empty or 0)."""
    parts = [p.strip() for p in str(value).split(",")]
    if len(parts) < 4:
        return None
    ci = parts[3]
    if not re.match(r"^[0-9A-Fa-f]{1,16}$", ci) or int(ci, 16) == 0:
        return None
    return ci.upper()


class _Bus:
    """The few ModemManager calls the logger makes, over one dbus-fast connection."""

    def __init__(self, bus) -> None:
        self.bus = bus

    async def call(self, path: str, interface: str, member: str, signature: str = "", body: Optional[list] = None):
        from dbus_fast import Message, MessageType

        reply = await self.bus.call(
            Message(
                destination=MM_BUS_NAME,
                path=path,
                interface=interface,
                member=member,
                signature=signature,
                body=body or [],
            )
        )
        if reply.message_type == MessageType.ERROR:
            raise _DBusError(reply.error_name or "error", " ".join(str(b) for b in reply.body))
        return reply.body

    async def prop(self, path: str, name: str):
        (v,) = await self.call(path, "org.freedesktop.DBus.Properties", "Get", "ss", [LOCATION_IFACE, name])
        return v.value


class _DBusError(Exception):
    def __init__(self, name: str, text: str) -> None:
        super().__init__(f"{name}: {text}".strip(": "))
        self.name = name


def _explain(op: str, path: str, e: _DBusError) -> str:
    if e.name in ("org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"):
        return (
            "ModemManager is not running on this bus "
            "(is the ModemManager service started? `mmcli -L` should list the modems)"
        )
    if e.name in (
        "org.freedesktop.DBus.Error.UnknownObject",
        "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownMethod",
    ):
        return f"modem {op}: no modem at {path} with a Location interface (`mmcli -L` lists the modems)"
    # ModemManager's error text may carry what the modem or the network said: never raw.
    from ..text import escape_controls

    return escape_controls(f"modem {op} ({path}): {e}")


async def _connect(bus_address: Optional[str]):
    try:
        from dbus_fast import BusType
        from dbus_fast.aio import MessageBus
    except ImportError:
        raise ScenarioError(
            [
                ConfigError(
                    "dbus-fast",
                    "",
                    "the D-Bus client is not installed: pip install 'mobipath[router]' (or pip install dbus-fast)",
                )
            ]
        ) from None
    try:
        if bus_address:
            return await MessageBus(bus_address=bus_address).connect()
        return await MessageBus(bus_type=BusType.SYSTEM).connect()
    except Exception as e:  # noqa: BLE001 - any connection failure is reported the same way
        where = bus_address or "the system bus"
        raise ScenarioError(
            [ConfigError("--bus", bus_address or "system", f"cannot connect to {where}: {e}")]
        ) from None


async def record(
    modems: Sequence[tuple[str, str]],
    out: TextIO,
    interval_s: float,
    seconds: Optional[float],
    bus_address: Optional[str] = None,
    clock: Callable[[], float] = time.time,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
    stop: Optional[asyncio.Event] = None,
) -> int:
    """Polls every modem's serving cell until ``seconds`` have passed or ``stop`` is set; writes one
    ``time,operator,cell`` row per successful poll to ``out`` (header included if ``out`` is at its
    start). Returns the number of rows written. Setup errors (no ModemManager, no such modem) raise
    ScenarioError naming the modem."""
    bus = await _connect(bus_address)
    mm = _Bus(bus)
    try:
        for op, path in modems:
            try:
                enabled = int(await mm.prop(path, "Enabled"))
                if not enabled & SOURCE_3GPP_LAC_CI:
                    signals = bool(await mm.prop(path, "SignalsLocation"))
                    await mm.call(path, LOCATION_IFACE, "Setup", "ub", [enabled | SOURCE_3GPP_LAC_CI, signals])
                    log(f"modem {op}: 3GPP location (cell id) was off; turned it on (as mmcli --location-enable-3gpp)")
            except _DBusError as e:
                raise ScenarioError([ConfigError("--modem", f"{op}={path}", _explain(op, path, e))]) from None
        if out.tell() == 0:
            out.write("time,operator,cell\n")
        rows = 0
        failing = {op: False for op, _ in modems}
        start = time.monotonic()
        stop = stop or asyncio.Event()
        while True:
            for op, path in modems:
                try:
                    (locs,) = await mm.call(path, LOCATION_IFACE, "GetLocation")
                except _DBusError as e:
                    if not failing[op]:
                        log(f"warning: {_explain(op, path, e)}; nothing logged for {op} until a poll succeeds")
                    failing[op] = True
                    continue
                if failing[op]:
                    log(f"modem {op}: polling again")
                failing[op] = False
                v = locs.get(SOURCE_3GPP_LAC_CI)
                cell = cell_from_3gpp(v.value) if v is not None else None
                out.write(f"{clock():.3f},{op},{cell or ''}\n")
                out.flush()
                rows += 1
            elapsed = time.monotonic() - start
            if seconds is not None and elapsed >= seconds:
                return rows
            wait = interval_s if seconds is None else min(interval_s, max(0.0, seconds - elapsed))
            try:
                await asyncio.wait_for(stop.wait(), timeout=wait)
                return rows
            except asyncio.TimeoutError:
                pass
    finally:
        bus.disconnect()


def run(
    modem_specs: Sequence[str],
    out_path: Path,
    interval_s: float,
    seconds: Optional[float],
    bus_address: Optional[str],
    append: bool,
) -> int:
    """The CLI's entry: records until ``seconds`` or SIGINT/SIGTERM (both end it cleanly)."""
    modems = parse_modem_specs(modem_specs)
    out_path.parent.mkdir(parents=True, exist_ok=True)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        with out_path.open("a" if append else "w", encoding="utf-8") as fh:
            return await record(modems, fh, interval_s, seconds, bus_address, stop=stop)

    return asyncio.run(main())
