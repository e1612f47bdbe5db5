"""Hashfile: immutable key-value stores indexed by a minimal perfect hash.

Open a store (or a dataset of shards, or a URL) in microseconds and look
keys up without parsing anything::

    import hashfile
    hashfile.build("prices.hf", {"sku-1": 10, "sku-2": {"cents": 20}})
    with hashfile.open("prices.hf") as db:
        db["sku-1"]            # 10
        db.get("nope")         # None
        "sku-2" in db          # True

The stores are the Ruby gem's: a store built from Ruby reads the same here,
and the reverse. Values come back as ``str``, ``bytes``, ``int``, ``float``,
``bool``, ``None``, ``list`` and ``dict`` (docs/PYTHON.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, ValuesView
from typing import Any, Union, Unpack

from . import _native, errors
from ._options import (
    BuildFromOptions,
    BuildOptions,
    CompactOptions,
    DiffOptions,
    HistoryOptions,
    OpenOptions,
    PatchOptions,
    RollbackOptions,
)
from .errors import *  # noqa: F401,F403 (the exception classes)

__all__ = [
    "open",
    "build",
    "build_from",
    "shard_of",
    "history",
    "rollback",
    "diff",
    "patch",
    "compact",
    "Reader",
    "Key",
    "DEFAULT_MAX_VALUE_SIZE",
    "OpenOptions",
    "BuildOptions",
    "BuildFromOptions",
    "HistoryOptions",
    "RollbackOptions",
    "DiffOptions",
    "PatchOptions",
    "CompactOptions",
    *errors.__all__,
]

#: The largest value ``open`` reads unless given ``max_value_size`` (256 MiB).
DEFAULT_MAX_VALUE_SIZE: int = _native.DEFAULT_MAX_VALUE_SIZE

Key = str | bytes
PathLike = Union[str, "os.PathLike[str]"]

# Entries read per call while iterating.
_CHUNK = 1024


def open(location: PathLike, **options: Unpack[OpenOptions]) -> Reader:  # noqa: A001
    """Opens a store, a dataset (its directory, or its manifest's path or
    URL), or a remote store (``http://``, ``https://``, ``s3://``).

    ``verify=True``: check every checksum before returning (a dataset: every
    shard against its manifest). ``reload``: at most every this many seconds, look whether a newer store
    (or dataset generation) was published at ``location`` and read it from
    the next lookup on. ``on_change="reopen"``: a remote reader reopens a
    replaced object and looks the key up again. ``memo``: keep up to this
    many decoded values and return the same object for the same key, as a
    ``dict`` does (docs/PYTHON.md, "Hot keys"). ``max_value_size``: the
    largest value read, in bytes, as stored or as a compressed value decodes
    (default ``DEFAULT_MAX_VALUE_SIZE``, 256 MiB); a larger one raises
    ``LimitError`` naming its key. ``remote``: the remote
    options (``headers``, ``timeout``, ``connect_timeout``, ``retries``,
    ``concurrency``, ``cache_size``, ``block_size``, ``prefetch_index``,
    ``http2``, ``s3_endpoint``, ``s3_region``, and ``allow_origins``: the
    places a dataset's manifest may list shards at besides its own, the
    one a local dataset takes too); an unknown one is a ``TypeError``.
    """
    return Reader(os.fspath(location), dict(options) or None)


def build(
    path: PathLike,
    # Mapping is invariant in its key: a dict[str, ...] is no Mapping[Key, ...].
    items: Mapping[str, Any] | Mapping[bytes, Any] | Mapping[Key, Any] | Iterable[tuple[Key, Any]],
    **options: Unpack[BuildOptions],
) -> int:
    """Builds a store at ``path`` from a mapping or (key, value) pairs, and
    publishes it atomically (a reader sees the old store or the new one).
    With ``shards``, builds a dataset of that many shards in the directory
    ``path``. Options: ``on_duplicate`` (``"error"``, ``"first"``,
    ``"last"``, ...), ``keys_per_bucket``, ``load_factor``, ``hash_seed``,
    ``keys_per_part``, ``index`` (``"classic"``, ``"compact"``),
    ``compression`` (``"none"``, ``"zstd"``, ``"zstd:LEVEL"``,
    ``"zstd:LEVEL,LONG_LEVEL"``, ``"auto"``: each value of 32 bytes or more
    stored as a zstd frame of its own, with a dictionary trained on the
    values; ``"zstd"`` is level 3, and 9 for values of 512 bytes or more;
    ``"auto"`` compresses only where a sample says it pays), ``memory`` (bytes, or ``"64M"``, ``"4G"``,
    ``"auto"``: the most the index data may take; a build past it spills
    to temporary files beside the output, into the same bytes). Returns the
    bytes written.
    """
    pairs = items.items() if isinstance(items, Mapping) else items
    return _native.build(os.fspath(path), pairs, dict(options) or None)


def build_from(
    inputs: PathLike | Iterable[PathLike],
    output: PathLike,
    *,
    progress: Callable[[int, int, int | None, str], object] | None = None,
    **options: Unpack[BuildFromOptions],
) -> dict[str, Any]:
    """Builds a store at ``output`` (with ``shards``, a dataset in that
    directory, its shards built in parallel) from data files, streaming
    them in Rust: no Python object per entry. ``inputs`` are paths (``"-"``
    is standard input); the format comes from each file's extension unless
    ``format`` is given (``json``, ``json-pairs``, ``jsonl``, ``csv``,
    ``tsv``, ``msgpack``, ``yaml``, ``lines``).

    Options: the importer's (``format``, ``key_column``, ``value_column``,
    ``header``, ``quote``, ``col_sep``, ``comment``, ``key_field``,
    ``value_field``, ``records_at``; one the input's format would ignore
    is a ``ValueError``) and ``build``'s. ``progress(entries, bytes_read,
    bytes_total, phase)`` is called at most every 0.1 s; an exception from
    it, or Ctrl-C, cancels the build and publishes nothing. Returns
    ``{"entries": ..., "file_bytes": ...}``, with ``"spilled": {"groups":
    ..., "temporary_bytes": ..., "attempts": ...}`` if the index went over
    ``memory`` and was built from temporary files.
    """
    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]
    paths = [os.fspath(i) for i in inputs]
    entries, file_bytes, spilled = _native.build_from(paths, os.fspath(output), dict(options) or None, progress)
    result: dict[str, Any] = {"entries": entries, "file_bytes": file_bytes}
    if spilled is not None:
        groups, temporary_bytes, attempts = spilled
        result["spilled"] = {"groups": groups, "temporary_bytes": temporary_bytes, "attempts": attempts}
    return result


def history(dataset: PathLike, **options: Unpack[HistoryOptions]) -> list[dict[str, Any]]:
    """The publishes a dataset keeps, newest (the current one) first: each a
    dict of ``generation``, ``published_at`` (UTC text), ``entries``,
    ``bytes``, ``shards``, ``tool`` (what published it), ``note``,
    ``rollback`` (whether it made an earlier generation current again),
    ``forced`` (the gate refusal it overrode, or None), ``current``, ``keep``, ``retain_seconds`` and ``sequence``. ``dataset``
    is its directory, its manifest's path or URL, or an ``s3://`` prefix;
    ``options`` are the remote ones of ``open``. ``DatasetError`` if there is
    no dataset there.
    """
    return _native.history(os.fspath(dataset), dict(options) or None)


def rollback(dataset: PathLike, generation: str | None = None, **options: Unpack[RollbackOptions]) -> dict[str, Any]:
    """Makes ``generation`` of a dataset (one its history keeps; without it,
    the newest kept one before the current one) current again: publishes its
    manifest anew, rebuilding nothing, once its shards are checked. Readers
    opened with ``reload`` move to it at their next check; those opened with
    ``generation`` stay. ``note`` is kept in the history; the other options
    are the remote ones of ``open``. Returns a dict of ``generation``,
    ``entries``, ``shards`` and ``sequence``. ``DatasetError`` if the
    generation is not kept, is the current one, or a shard of it is missing
    or not the one its manifest lists.
    """
    return _native.rollback(os.fspath(dataset), generation, dict(options) or None)


def diff(
    a: PathLike,
    b: PathLike | None = None,
    each: Callable[[str], object] | None = None,
    **options: Unpack[DiffOptions],
) -> dict[str, Any]:
    """What changed from ``a`` to ``b`` (two stores, two datasets, or two
    generations of one: ``generation_a``, ``generation_b``; ``b`` left out,
    ``a`` a dataset: its generation published before the current one against
    the current one, or before ``generation_b`` against it), reading each
    side in stored order and looking its keys up in the other, in parallel
    (``threads``), in bounded memory. ``each`` is called with each change as
    one line of JSON, keys removed or changed in ``a``'s order, then keys
    added in ``b``'s::

        {"op":"removed","key":"k1","value":1}
        {"op":"changed","key":"k2","before":"x","after":{"n":2}}
        {"op":"added","key":"k3","value":[3]}

    (``values=False``: the key alone). Returns the summary: a dict of
    ``entries_a``, ``entries_b``, ``added``, ``removed``, ``changed``,
    ``unchanged``, ``type_changed``, ``type_changes`` (``{from, to, keys}``
    each), ``bytes_added``, ``bytes_removed``, ``changed_bytes_before``,
    ``changed_bytes_after`` and ``shards`` (the changes per shard of ``b``).
    The remote options of ``open`` reach both.
    """
    return _native.diff(os.fspath(a), os.fspath(a if b is None else b), dict(options) or None, each)


def patch(
    dataset: PathLike,
    changes: Mapping[str, Any] | Mapping[bytes, Any] | Mapping[Key, Any] | Iterable[tuple[Key, Any]] | PathLike | None = None,
    *,
    delete: Iterable[Key] | None = None,
    **options: Unpack[PatchOptions],
) -> dict[str, Any]:
    """Changes a few keys of a local dataset without rebuilding it:
    publishes a delta generation that reuses every shard file and adds, for
    each shard the changes touch, a small overlay store read before the
    shard (a deleted key is a tombstone there). Readers opened with
    ``reload`` move to it at their next check; ``history``, ``rollback``
    and ``diff`` see it as any other generation::

        hashfile.patch("prices/", {"sku-1": 12.5}, delete=["sku-7"])
        hashfile.patch("prices/", "changes.jsonl")

    ``changes`` is a mapping (or pairs) of keys to put, or the path of a
    JSON Lines file whose lines are ``{"key": K, "value": V}`` or ``{"key":
    K, "delete": true}``; ``delete`` lists keys to delete, with a mapping.
    A key given twice follows ``on_duplicate``; a delete of a key the
    dataset does not hold is a ``ValueError`` unless ``on_missing="ignore"``.
    A shard that would pass ``compact_overlays`` overlays (default 8), or
    whose overlays would hold more than ``compact_fraction`` (0.25) of its
    base's entries, is compacted instead. ``keep``, ``retain``, ``note`` and
    the gates are ``build``'s for a dataset. Returns a dict of
    ``generation``, ``entries``, ``shards``, ``sequence``, ``added``,
    ``changed``, ``unchanged``, ``deleted``, ``ignored``, ``overlays_written``,
    ``shards_compacted``, ``bytes_written`` and ``published`` (False: nothing
    changed, and the current generation stays).
    """
    if isinstance(changes, (str, os.PathLike)):
        if delete is not None:
            raise TypeError('delete is for changes given as a mapping; a changes file deletes a key with a line {"key": K, "delete": true}')
        return _native.patch(os.fspath(dataset), None, None, os.fspath(changes), dict(options) or None)
    if changes is None and delete is None:
        raise TypeError("patch needs changes: a mapping of keys to put, delete=keys, or a changes file")
    pairs = changes.items() if isinstance(changes, Mapping) else changes
    # One key, not the characters of one.
    deletes: list[Key] | None = None if delete is None else [delete] if isinstance(delete, (str, bytes)) else list(delete)
    return _native.patch(os.fspath(dataset), pairs, deletes, None, dict(options) or None)


def compact(dataset: PathLike, **options: Unpack[CompactOptions]) -> dict[str, Any]:
    """Folds every overlay of a local dataset into new shard files, as
    ``patch`` does past ``compact_overlays``, and publishes a generation
    that reads the same; shards are rebuilt one at a time, each streaming.
    Takes ``keep``, ``retain`` and ``note``. Returns what ``patch``
    returns."""
    return _native.compact(os.fspath(dataset), dict(options) or None)


def shard_of(key: Key, shards: int) -> int:
    """The shard (``0 <= shard < shards``) ``key`` goes to in a dataset of
    ``shards``: the same in every language and release."""
    return _native.shard_of(key, shards)


class Reader(_native.NativeReader, Mapping[Key, Any]):
    """An open store or dataset: a read-only ``Mapping`` of its keys (``str``
    for text keys, ``bytes`` for binary ones) to their values. Iteration is
    in stored order (shard by shard for a dataset) and reads one version
    from start to end, whatever a reload swaps in meanwhile.

    ``reader[key]``, ``get``, ``in``, ``len`` and ``get_many`` are the
    native class's own (no Python call in between); ``get_many(keys)``
    returns the values of ``keys`` in order (``None`` where absent), one
    batch per store (remotely, a few round trips for all of them), without
    the GIL while it waits. ``verify()`` checks every checksum (a dataset:
    every shard against its manifest, every key against its shard) and
    raises on damage; ``info()`` gives entries, sizes, a dataset's
    generation and shards, and the memo's size; ``close()`` makes every
    later call raise ``ClosedError``; ``generation`` counts the newer
    stores a reload swapped in, ``reload_error`` says why the last one
    found could not be opened, ``stale()`` whether ``location`` now names
    another store, ``reopen()`` opens what it names now.
    """

    __slots__ = ()

    def __iter__(self) -> Iterator[Key]:
        for key, _ in self._chunks(keys_only=True):
            yield key

    def items(self) -> ItemsView[Key, Any]:
        return _ItemsView(self)

    def values(self) -> ValuesView[Any]:
        return _ValuesView(self)

    def _chunks(self, keys_only: bool = False) -> Iterator[tuple[Key, Any]]:
        pinned = self._pinned()
        cursor: tuple[int, int, int] | None = (0, 0, 0)
        while cursor is not None:
            chunk, cursor = pinned._chunk(cursor, _CHUNK, keys_only)
            yield from chunk

    def dig(self, key: Key, *path: Any, default: Any = None) -> Any:
        """The value at ``path`` inside the value of ``key`` (dict keys and
        list indexes), or ``default`` if any step is missing.

        Keys compare as Ruby's ``Hash#dig`` compares them, so both
        languages answer alike: an ``int`` finds an Integer key (not a
        Float or ``true``), a ``float`` a Float key, a ``bool`` a
        ``true``/``false`` key, a ``str`` a String or Symbol key
        (docs/PYTHON.md, "dig")."""
        found = self._dig(key, path)
        if found is None:
            return default
        taken, value = found
        for step in path[taken:]:
            # A bool is no list index, as in Ruby (where it raises).
            if isinstance(step, bool) and isinstance(value, list):
                return default
            # Only maps and lists are walked into: a str or bytes value is
            # a leaf, as in Ruby (where String#dig raises), not a sequence
            # of characters that an index would pick from.
            if not isinstance(value, (dict, list)):
                return default
            try:
                value = value[step]
            except (KeyError, IndexError, TypeError):
                return default
        return value

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self)} entries"
        return f"<hashfile.Reader {self.location} ({state})>"


class _ItemsView(ItemsView[Key, Any]):
    """``reader.items()``: pairs read in chunks, not a lookup per key."""

    _mapping: Reader  # set by ItemsView.__init__

    def __iter__(self) -> Iterator[tuple[Key, Any]]:
        return self._mapping._chunks()


class _ValuesView(ValuesView[Any]):
    """``reader.values()``: values read in chunks, not a lookup per key."""

    _mapping: Reader  # set by ValuesView.__init__

    def __iter__(self) -> Iterator[Any]:
        return (value for _, value in self._mapping._chunks())
