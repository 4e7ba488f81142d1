"""``mobipath router proxy`` and ``mobipath proxy serve|keygen``: thin entry points that replace
this process with the ``mobipath-proxy`` binary (crates/proxy), so SIGTERM from systemd or a
shell reaches the proxy itself and its graceful shutdown."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import NoReturn

import typer

from .. import provenance

app = typer.Typer(
    help="The server side of the TCP<->MPTCP proxy pair (mobipath-proxy).", no_args_is_help=True, rich_markup_mode=None
)


def proxy_command() -> list[str]:
    """How to start the proxy: ``$MOBIPATH_PROXY``, else the workspace build of ``mobipath-proxy``
    (release, then debug; not one older than its sources), else ``mobipath-proxy`` on PATH, else the
    copy inside the installed extension (``python -m mobipath.router.proxy_process``), which every
    install has."""
    env = os.environ.get("MOBIPATH_PROXY")
    if env:
        return [env]
    root = provenance.source_tree()
    built = provenance.workspace_build(root, "mobipath-proxy", ("proxy", "hst")) if root is not None else None
    if built:
        return [built]
    found = shutil.which("mobipath-proxy")
    if found:
        return [found]
    from .. import _core

    if hasattr(_core, "proxy_main"):
        return [sys.executable, "-m", "mobipath.router.proxy_process"]
    raise FileNotFoundError(
        "mobipath-proxy not found: build it with `cargo build --release -p mobipath-proxy` or set MOBIPATH_PROXY"
    )


def exec_proxy(args: list[str]) -> NoReturn:
    """Replaces this process with ``mobipath-proxy ARGS...`` (its exit status becomes ours)."""
    try:
        cmd = proxy_command() + args
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(1) from None
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cmd[0], cmd)


#: The config format in brief, for the commands' --help (an installed mobipath has no README of
#: the proxy crate to point to). `mobipath-proxy check-config` names any field it refuses.
CONFIG_HELP = """\b
Config (TOML; one file may hold both sides; every error names the field and its range):
  [router]  server = "IP:PORT" (the server proxy), key_file = PATH or key = "<hex>",
            socks_listen = "IP:PORT" and/or transparent_listen = "IP:PORT" (TPROXY),
            congestion = "cubic", server_congestion = "cubic" (optional)
  [server]  listen = "IP:PORT", key_file = PATH or key = "<hex>",
            [[server.allow]] cidr = "203.0.113.0/24", ports = ["443", "8000-8100"] or ["*"]
            (nothing is relayed unless a rule allows it), slow_start_after_idle = "off" (optional)
  [limits]  max_connections 1..=1000000, buffer_bytes 1024..=16777216, idle_timeout_s 1..=86400,
            connect_timeout_s and handshake_timeout_s 1..=300, shutdown_grace_s 0..=300,
            worker_threads 1..=64 (all optional)
  [metrics] listen = "IP:PORT" (Prometheus text endpoint, optional)
  [pha_d]   gps = "gpsd:HOST:PORT" | "nmea-serial:DEV[@BAUD]" | "nmea-file:PATH" |
            "nmea-udp:IP:PORT" | "replay:CSV", table = CSV, track = CSV,
            subflows = [{ operator = "A", endpoint = 1 }, { operator = "B", endpoint = 2 }],
            policy = "paper" | "queue-aware" | "resend" (more keys: mobipath-proxy check-config
            names any it does not know)
The key: `mobipath proxy keygen`, the same on both sides (mode 600)."""

_CONFIG = typer.Option(..., "--config", "-c", help="TOML config (its format is below).", show_default=False)
_CHECK = typer.Option(
    False, "--check", help="Only validate the config (exit 0 if valid, 2 with the field named if not)."
)


def router_proxy(config: Path = _CONFIG, check: bool = _CHECK) -> None:
    """The router side of the proxy pair: plain TCP from the LAN (SOCKS5 and/or transparent) to one
    MPTCP connection per client connection to the server side. Runs until SIGTERM/SIGINT."""
    exec_proxy(
        ["check-config", "--side", "router", "--config", str(config)] if check else ["router", "--config", str(config)]
    )


@app.command("serve", epilog=CONFIG_HELP)
def serve(config: Path = _CONFIG, check: bool = _CHECK) -> None:
    """The server side of the proxy pair: MPTCP from authenticated routers to plain TCP towards
    allow-listed destinations. Runs until SIGTERM/SIGINT."""
    exec_proxy(
        ["check-config", "--side", "server", "--config", str(config)] if check else ["server", "--config", str(config)]
    )


@app.command("keygen")
def keygen() -> None:
    """Print a new random pre-shared key (64 hex digits) for `key_file` on both sides."""
    exec_proxy(["keygen"])
