"""Exceptions raised by hashfile, one class per kind of failure, as the Ruby
gem's (``Hashfile::FormatError``, ...), with the same messages.

Bad arguments raise the built-in ``ValueError`` and ``TypeError``; a file
that cannot be opened raises ``OSError`` (``FileNotFoundError``, ...).
"""

from __future__ import annotations

from typing import Any


class Error(Exception):
    """Every hashfile error. Extra facts (``path``, ``key``, ...) are
    attributes, ``None`` when not known."""

    def __init__(self, message: str, **facts: Any) -> None:
        super().__init__(message)
        self.message = message
        for name, value in facts.items():
            setattr(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Facts an error of this kind may carry but this one does not.
        if name in ("path", "url", "status", "key", "others", "section", "input", "line", "column", "owner", "gate"):
            return None
        raise AttributeError(name)


class FormatError(Error):
    """Not a valid store: damaged, truncated, or not a store at all."""


class UnsupportedError(FormatError):
    """A store of a newer format version, or using a feature this release
    does not read."""


class DatasetError(FormatError):
    """A dataset's manifest or shard is wrong: the message names the file."""


class ChecksumError(FormatError):
    """A section's bytes do not match its checksum (``verify``)."""


class StaleError(Error):
    """The store changed under the reader (a remote object replaced, a local
    file truncated)."""


class RemoteError(Error):
    """A remote store could not be read; ``url`` and ``status`` say where
    and what the server answered."""


class RemoteNotFoundError(RemoteError):
    pass


class RemoteAccessError(RemoteError):
    pass


class RemoteTimeoutError(RemoteError):
    pass


class RemoteConnectionError(RemoteError):
    pass


class RemoteServerError(RemoteError):
    pass


class RemoteProtocolError(RemoteError):
    pass


class DuplicateKeyError(Error):
    """A key occurs twice in a build; ``key`` is its bytes."""


class PublishRefusedError(Error):
    """A publish gate (``max_entry_change``, ``max_type_change``,
    ``refuse_empty``) refused a dataset's new generation; ``gate`` names it,
    the message has the numbers. The current generation stays, and nothing
    of the new one is left; ``force=True`` publishes it anyway."""


class ParseError(Error):
    """An input file is not valid in its format."""


class LimitError(Error):
    """Something is larger than the format allows."""


class ClosedError(Error):
    """The reader was closed."""


class UnsafeLinkError(Error):
    """A build would write through a symbolic link another user owns."""


# Written out, not computed, so that a type checker sees what
# ``from hashfile.errors import *`` (and so ``hashfile``) exports;
# tests/test_docs.py checks it names every class here.
__all__ = [
    "Error",
    "FormatError",
    "UnsupportedError",
    "DatasetError",
    "PublishRefusedError",
    "ChecksumError",
    "StaleError",
    "RemoteError",
    "RemoteNotFoundError",
    "RemoteAccessError",
    "RemoteTimeoutError",
    "RemoteConnectionError",
    "RemoteServerError",
    "RemoteProtocolError",
    "DuplicateKeyError",
    "ParseError",
    "LimitError",
    "ClosedError",
    "UnsafeLinkError",
]
