"""The Rust module (PyO3) that ``hashfile`` wraps: python/src/."""

from collections.abc import Callable, Iterable
from typing import Any

Key = str | bytes
Cursor = tuple[int, int, int]

def shard_of(key: Key, shards: int) -> int: ...
def history(location: str, options: dict[str, Any] | None = None) -> list[dict[str, Any]]: ...
def rollback(location: str, generation: str | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]: ...
def diff(a: str, b: str, options: dict[str, Any] | None = None, each: Callable[[str], object] | None = None) -> dict[str, Any]: ...
def patch(
    location: str,
    upserts: Iterable[tuple[Key, Any]] | None = None,
    deletes: list[Key] | None = None,
    changes_path: str | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]: ...
def compact(location: str, options: dict[str, Any] | None = None) -> dict[str, Any]: ...
def build(path: str, items: Iterable[tuple[Key, Any]], options: dict[str, Any] | None = None) -> int: ...

def build_from(
    inputs: list[str],
    output: str,
    options: dict[str, Any] | None = None,
    progress: Any = None,
) -> tuple[int, int, tuple[int, int, int] | None]: ...

MAX_SHARDS: int
OPTIONS: dict[str, list[dict[str, Any]]]

def check_build_options(options: dict[str, Any] | None = None) -> None: ...
MAX_MEMO: int
DEFAULT_MAX_VALUE_SIZE: int

class NativeReader:
    """The base of ``hashfile.Reader``: an open store, dataset or URL."""

    def __init__(self, location: str, options: dict[str, Any] | None = None) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def location(self) -> str: ...
    @property
    def remote(self) -> bool: ...
    @property
    def generation(self) -> int:
        """How many times a newer store replaced the one read (``reload``)."""
    @property
    def reload_error(self) -> str | None:
        """Why the last newer store a reload found could not be opened."""
    def __getitem__(self, key: Key) -> Any: ...
    def get(self, key: Key, default: Any = None) -> Any: ...
    def __contains__(self, key: object) -> bool: ...
    def __len__(self) -> int: ...
    def _dig(self, key: Key, path: tuple[Any, ...]) -> tuple[int, Any] | None: ...
    def get_many(self, keys: Iterable[Key]) -> list[Any]:
        """The values of ``keys`` in order (``None`` where absent): one batch
        per store, without the GIL while it waits on a server."""
    def verify(self) -> bool:
        """Checks every checksum; raises on damage."""
    def info(self) -> dict[str, Any]:
        """Entries, sizes, a dataset's generation and shards, the memo's size."""
    def stale(self) -> bool:
        """Whether ``location`` now names another store than the one read."""
    def reopen(self) -> None: ...
    def close(self) -> None:
        """Closes the reader: every later call raises ``ClosedError``."""
    def _chunk(self, cursor: Cursor, max: int, keys_only: bool = False) -> tuple[list[tuple[Key, Any]], Cursor | None]: ...
    def _pinned(self) -> NativeReader: ...

# A dataset written by many tasks (hashfile.spark): python/src/tasks.rs.

def new_generation() -> str:
    """A new generation id for every task of one job."""

class ShardWriter:
    """One shard of a dataset, written by one task."""

    def __init__(
        self,
        location: str,
        generation: str,
        shard: int,
        shard_count: int,
        key_field: str,
        value_field: str,
        options: dict[str, Any] | None = None,
        remote: dict[str, Any] | None = None,
    ) -> None: ...
    def add_json_lines(self, lines: bytes, source: str) -> int: ...
    def add_arrow_records(self, offsets: bytes, data: bytes, first: int, count: int, wide: bool, source: str) -> int: ...
    def __len__(self) -> int: ...
    def finish(self) -> dict[str, Any]:
        """Builds and publishes the shard; returns its report (``file``,
        ``entries``, ``bytes``, ``checksum``)."""

def route_arrow_keys(offsets: bytes, data: bytes, validity: bytes | None, first: int, count: int, wide: bool, partitions: list[int]) -> bytes: ...
def publish_shards(
    location: str,
    generation: str,
    shard_count: int,
    reports: list[dict[str, Any]],
    remote: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]: ...
def discard_generation(location: str, generation: str, remote: dict[str, Any] | None = None) -> None: ...
