"""A stand-in for ModemManager on a private D-Bus: one modem per argument `N:CELLS`, whose
Location interface serves the 3GPP location of a cell that changes on a schedule.

CELLS is `SECONDS/CI;SECONDS/CI;...`: the serving cell from that many seconds after start (CI in
hex, 0 = no service). The 3GPP source starts disabled, as on a fresh modem; Setup records what it
was asked. Prints "ready" once the name is owned. Used by tests/python/test_cell_log.py only.
"""

import asyncio
import sys
import time

from dbus_fast import Variant
from dbus_fast.aio import MessageBus
from dbus_fast.service import PropertyAccess, ServiceInterface, dbus_property, method


class Location(ServiceInterface):
    def __init__(self, schedule):
        super().__init__("org.freedesktop.ModemManager1.Modem.Location")
        self.schedule = schedule
        self.start = time.monotonic()
        self.enabled = 0
        self.signals = False

    @dbus_property(access=PropertyAccess.READ)
    def Enabled(self) -> "u":
        return self.enabled

    @dbus_property(access=PropertyAccess.READ)
    def SignalsLocation(self) -> "b":
        return self.signals

    @method()
    def Setup(self, sources: "u", signal_location: "b"):
        self.enabled = sources
        self.signals = signal_location
        print(f"setup {sources} {signal_location}", flush=True)

    @method()
    def GetLocation(self) -> "a{uv}":
        t = time.monotonic() - self.start
        ci = "0"
        for at, c in self.schedule:
            if t >= at:
                ci = c
        if not self.enabled & 1:
            return {}
        return {1: Variant("s", f"262,01,1A2B,{ci},3C4D")}


async def main(address, specs):
    bus = await MessageBus(bus_address=address).connect()
    for spec in specs:
        n, _, cells = spec.partition(":")
        schedule = [(float(a), c) for a, c in (x.split("/") for x in cells.split(";"))]
        bus.export(f"/org/freedesktop/ModemManager1/Modem/{n}", Location(schedule))
    await bus.request_name("org.freedesktop.ModemManager1")
    print("ready", flush=True)
    await asyncio.Event().wait()


asyncio.run(main(sys.argv[1], sys.argv[2:]))
