"""Type stub of the simulator core, the Rust extension built from crates/py (pyo3).

Kept beside the extension so that type checkers see its signatures; each function's
documentation is in crates/py/src/lib.rs.
"""

from collections.abc import Callable, Iterator, Sequence
from os import PathLike
from typing import Any, Optional, Union

_Path = Union[str, PathLike[str]]

__version__: str
GIT_REVISION: str
BUILD_PROFILE: str
BUILD_PGO: str

class ScenarioError(Exception):
    """A scenario, trace or table that fails its checks; `errors` lists every one."""

    errors: list[dict[str, str]]
    file: Optional[str]

class InternalError(Exception):
    """A bug in the simulator (a Rust panic), reported instead of crashing the interpreter."""

class TimeSeries:
    """The long-form time series of one run, read like a read-only dict of column -> list."""

    def __len__(self) -> int: ...
    def __contains__(self, name: str) -> bool: ...
    def __getitem__(self, name: str) -> list[Any]: ...
    def __iter__(self) -> Iterator[str]: ...
    def get(self, name: str, default: Any = None) -> Any: ...
    def keys(self) -> list[str]: ...
    def items(self) -> list[tuple[str, list[Any]]]: ...
    @property
    def height(self) -> int: ...
    def write_parquet(self, path: _Path) -> None: ...

class PhaDController:
    """PHA-D's state machine for a live router (the simulator's own, crates/hst)."""

    def __init__(
        self,
        table_csv: str,
        operators: Sequence[Optional[str]],
        policy: str = "paper",
        lead_ms: float = 0.0,
        gps_period_s: float = 0.1,
        table_file: str = "table",
    ) -> None: ...
    def on_fix(self, now_s: float, pos_m: float, rtt_s: list[float], rx: list[int]) -> list[tuple[int, bool]]: ...
    def on_tick(self, now_s: float, rtt_s: list[float], rx: list[int]) -> list[tuple[int, bool]]: ...

def validate(text: str, file: str = "<string>", base_dir: _Path = ".") -> list[dict[str, str]]: ...
def schema() -> str: ...
def run(
    text: str,
    file: str = "<string>",
    base_dir: _Path = ".",
    seed: Optional[int] = None,
    progress: Optional[Callable[[float], object]] = None,
    allow_partial: bool = False,
    objects: bool = False,
    out_dir: Optional[_Path] = None,
    pcap: bool = False,
    pcap_max_mb: Optional[float] = None,
) -> dict[str, Any]: ...
def canonical_json(value: Any) -> str: ...
def heap_bytes(reset: bool = False) -> tuple[int, int]: ...
def effective_links(text: str, file: str = "<string>", base_dir: _Path = ".", seed: Optional[int] = None) -> str: ...
def plan(text: str, file: str = "<string>", base_dir: _Path = ".", seed: Optional[int] = None) -> str: ...
def scenario_seed(text: str) -> Optional[int]: ...
def names() -> str: ...
def p1_worked_examples() -> str: ...
def learn_handover_table(
    text: str,
    file: str = "<string>",
    base_dir: _Path = ".",
    runs: int = 50,
    first_seed: int = 1,
    margin_m: Optional[float] = None,
    existing: Optional[str] = None,
    min_support: Optional[int] = None,
) -> str: ...
def learn_handover_table_recorded(
    track: str,
    track_file: str,
    runs: list[tuple[str, str, str, str]],
    margin_m: Optional[float] = None,
    max_offset_m: Optional[float] = None,
    max_gap_s: Optional[float] = None,
    existing: Optional[str] = None,
    min_support: Optional[int] = None,
) -> tuple[str, str]: ...
def handover_table_json(csv: str, file: str) -> str: ...
def emulator_main(args: list[str]) -> int: ...
def proxy_main(args: list[str]) -> int: ...
def mptcp_set_backup(endpoint_id: int, backup: bool, netns: Optional[str] = None) -> None: ...
def mptcp_endpoints(netns: Optional[str] = None) -> list[tuple[int, int, str]]: ...
