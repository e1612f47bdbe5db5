"""The keyword options of ``open``, ``build``, ``build_from``, ``history``,
``rollback``, ``diff``, ``patch`` and ``compact``, as
TypedDicts for type checkers: generated from the runtime's table of options
(``_native.OPTIONS``, crates/hashfile-runtime/src/options/table.rs) by
python/tests/test_options_table.py (``WRITE_OPTIONS_STUB=1``). Do not edit.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "BuildFromOptions",
    "BuildOptions",
    "CompactOptions",
    "DiffOptions",
    "HistoryOptions",
    "OpenOptions",
    "PatchOptions",
    "RollbackOptions",
]


class OpenOptions(TypedDict, total=False):
    """The options of ``open``."""

    verify: bool | None
    """check every checksum at open (default: False)"""
    reload: float | None
    """look for a newer store (or dataset generation) at most every this many seconds"""
    on_change: str | None
    """"raise" or "reopen": what a remote reader does when its object is replaced (default: 'raise')"""
    memo: int | None
    """keep up to this many decoded values, and return the same object for a key again (default: 0)"""
    max_value_size: int | None
    """the largest value read, in bytes, as stored or decoded (default: 268435456)"""
    generation: str | None
    """read this generation of a dataset, one its history keeps, and never another"""
    headers: dict[str, str] | None
    """HTTP headers sent with every request to the location's own place"""
    timeout: float | None
    """the longest a request may take, in seconds (default: 30.0)"""
    connect_timeout: float | None
    """the longest a new connection may take, in seconds (default: 5.0)"""
    retries: int | None
    """retries of a request that failed on the way (default: 3)"""
    concurrency: int | None
    """requests in flight at once (default: 8)"""
    cache_size: int | None
    """bytes of blocks kept (default: 33554432)"""
    block_size: int | None
    """bytes per block fetched (default: 16384)"""
    prefetch_index: bool | None
    """read the whole index at open: one request per lookup (default: False)"""
    http2: bool | None
    """speak HTTP/2 to an http:// server without negotiating (default: False)"""
    s3_endpoint: str | None
    """an S3 endpoint other than AWS's"""
    s3_region: str | None
    """the S3 region"""
    allow_origins: list[str] | None
    """places a dataset's manifest may list shards at besides its own (default: [])"""


class BuildOptions(TypedDict, total=False):
    """The options of ``build``."""

    on_duplicate: str | None
    """what a key given twice does: error, first, last, merge (default: 'error')"""
    index: str | None
    """the index layout: classic or compact (default: 'classic')"""
    compression: str | None
    """none, zstd, zstd:LEVEL, zstd:LEVEL,LONG_LEVEL or auto (default: 'none')"""
    memory: int | str | None
    """the most the index data may take (bytes, "64M", "auto"); past it a build spills to temporary files (default: 'auto')"""
    keys_per_bucket: float | None
    """average keys per bucket of the perfect hash (default: 3.5)"""
    load_factor: float | None
    """keys per slot (default: 0.99)"""
    dense_key_fraction: float | None
    """the fraction of keys in the dense buckets (default: 0.5)"""
    dense_bucket_fraction: float | None
    """the fraction of buckets that are dense (default: 0.2)"""
    hash_seed: int | None
    """the hash's first seed (default: 0)"""
    seed_block_len: int | None
    """seeds per block (default: 128)"""
    keys_per_part: int | None
    """keys per part of the index (default: 131072)"""
    shards: int | None
    """build a dataset of this many shards in the directory given"""
    keep: int | None
    """a dataset's publishes kept: the current one and those a rollback can go to (default: 3)"""
    retain: float | None
    """the least time a replaced generation of a dataset stays, for readers that opened it, in seconds (default: 900.0)"""
    note: str | None
    """why or from what a dataset is published (or rolled back), kept in its history"""
    max_entry_change: float | None
    """refuse to publish a dataset whose entry count differs from the current one's by more than this fraction (0.1: 10%)"""
    max_type_change: float | None
    """refuse to publish a dataset in which more than this fraction of the current keys changed value type"""
    refuse_empty: bool | None
    """refuse to publish a dataset of no entries (default: False)"""
    force: bool | None
    """publish a dataset even if a gate refuses it; its history records what was overridden (default: False)"""


class BuildFromOptions(BuildOptions, total=False):
    """The options of ``build_from``."""

    format: str | None
    """the input format (else from each file's extension)"""
    key_column: int | str | None
    """CSV/TSV: the key's column (a header name, or a 0-based index) (default: 0)"""
    value_column: int | str | None
    """CSV/TSV: the value's column, or "*" for the whole row (default: 1)"""
    header: bool | None
    """CSV/TSV: the first row names the columns (default: True)"""
    quote: bool | None
    """CSV/TSV: fields may be quoted (default: True)"""
    col_sep: str | None
    """CSV/TSV: the separator"""
    comment: str | None
    """CSV/TSV: lines starting with this are skipped"""
    key_field: str | None
    """JSON records: the key's field (default: 'key')"""
    value_field: str | None
    """JSON records: the value's field (default: 'value')"""
    records_at: str | None
    """JSON: the path to the records inside the document"""
    threads: int | None
    """threads the build (or diff) runs on (at most 4 per core, at least 16)"""


class HistoryOptions(TypedDict, total=False):
    """The options of ``history``."""

    headers: dict[str, str] | None
    """HTTP headers sent with every request to the location's own place"""
    timeout: float | None
    """the longest a request may take, in seconds (default: 30.0)"""
    connect_timeout: float | None
    """the longest a new connection may take, in seconds (default: 5.0)"""
    retries: int | None
    """retries of a request that failed on the way (default: 3)"""
    concurrency: int | None
    """requests in flight at once (default: 8)"""
    cache_size: int | None
    """bytes of blocks kept (default: 33554432)"""
    block_size: int | None
    """bytes per block fetched (default: 16384)"""
    prefetch_index: bool | None
    """read the whole index at open: one request per lookup (default: False)"""
    http2: bool | None
    """speak HTTP/2 to an http:// server without negotiating (default: False)"""
    s3_endpoint: str | None
    """an S3 endpoint other than AWS's"""
    s3_region: str | None
    """the S3 region"""
    allow_origins: list[str] | None
    """places a dataset's manifest may list shards at besides its own (default: [])"""


class RollbackOptions(TypedDict, total=False):
    """The options of ``rollback``."""

    headers: dict[str, str] | None
    """HTTP headers sent with every request to the location's own place"""
    timeout: float | None
    """the longest a request may take, in seconds (default: 30.0)"""
    connect_timeout: float | None
    """the longest a new connection may take, in seconds (default: 5.0)"""
    retries: int | None
    """retries of a request that failed on the way (default: 3)"""
    concurrency: int | None
    """requests in flight at once (default: 8)"""
    cache_size: int | None
    """bytes of blocks kept (default: 33554432)"""
    block_size: int | None
    """bytes per block fetched (default: 16384)"""
    prefetch_index: bool | None
    """read the whole index at open: one request per lookup (default: False)"""
    http2: bool | None
    """speak HTTP/2 to an http:// server without negotiating (default: False)"""
    s3_endpoint: str | None
    """an S3 endpoint other than AWS's"""
    s3_region: str | None
    """the S3 region"""
    allow_origins: list[str] | None
    """places a dataset's manifest may list shards at besides its own (default: [])"""
    note: str | None
    """why or from what a dataset is published (or rolled back), kept in its history"""


class DiffOptions(TypedDict, total=False):
    """The options of ``diff``."""

    headers: dict[str, str] | None
    """HTTP headers sent with every request to the location's own place"""
    timeout: float | None
    """the longest a request may take, in seconds (default: 30.0)"""
    connect_timeout: float | None
    """the longest a new connection may take, in seconds (default: 5.0)"""
    retries: int | None
    """retries of a request that failed on the way (default: 3)"""
    concurrency: int | None
    """requests in flight at once (default: 8)"""
    cache_size: int | None
    """bytes of blocks kept (default: 33554432)"""
    block_size: int | None
    """bytes per block fetched (default: 16384)"""
    prefetch_index: bool | None
    """read the whole index at open: one request per lookup (default: False)"""
    http2: bool | None
    """speak HTTP/2 to an http:// server without negotiating (default: False)"""
    s3_endpoint: str | None
    """an S3 endpoint other than AWS's"""
    s3_region: str | None
    """the S3 region"""
    allow_origins: list[str] | None
    """places a dataset's manifest may list shards at besides its own (default: [])"""
    threads: int | None
    """threads the build (or diff) runs on (at most 4 per core, at least 16)"""
    generation_a: str | None
    """the generation of the first dataset to compare (else its current one)"""
    generation_b: str | None
    """the generation of the second dataset to compare (else its current one)"""
    values: bool | None
    """each change's line carries the values, not the key alone (default: True)"""


class PatchOptions(TypedDict, total=False):
    """The options of ``patch``."""

    on_duplicate: str | None
    """what a key given twice does: error, first, last, merge (default: 'error')"""
    keep: int | None
    """a dataset's publishes kept: the current one and those a rollback can go to (default: 3)"""
    retain: float | None
    """the least time a replaced generation of a dataset stays, for readers that opened it, in seconds (default: 900.0)"""
    note: str | None
    """why or from what a dataset is published (or rolled back), kept in its history"""
    max_entry_change: float | None
    """refuse to publish a dataset whose entry count differs from the current one's by more than this fraction (0.1: 10%)"""
    max_type_change: float | None
    """refuse to publish a dataset in which more than this fraction of the current keys changed value type"""
    refuse_empty: bool | None
    """refuse to publish a dataset of no entries (default: False)"""
    force: bool | None
    """publish a dataset even if a gate refuses it; its history records what was overridden (default: False)"""
    on_missing: str | None
    """what a delete of a key the dataset does not hold does: error or ignore (default: 'error')"""
    compact_overlays: int | None
    """compact a shard instead of giving it more overlays than this (default: 8)"""
    compact_fraction: float | None
    """compact a shard whose overlays would hold more records than this fraction of its base's (default: 0.25)"""


class CompactOptions(TypedDict, total=False):
    """The options of ``compact``."""

    keep: int | None
    """a dataset's publishes kept: the current one and those a rollback can go to (default: 3)"""
    retain: float | None
    """the least time a replaced generation of a dataset stays, for readers that opened it, in seconds (default: 900.0)"""
    note: str | None
    """why or from what a dataset is published (or rolled back), kept in its history"""
