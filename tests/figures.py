"""Figures that tests gather for RELIABILITY.md, published once the whole run has passed.

A test module registers a publisher with :func:`at_end`; the ``pytest_sessionfinish``
hook in conftest.py calls each one after a green run. A publisher decides itself
whether its module ran in full (a run of a few selected tests publishes nothing).
"""

from __future__ import annotations

from collections.abc import Callable

_publishers: list[Callable[[], None]] = []


def at_end(publish: Callable[[], None]) -> Callable[[], None]:
    """Call ``publish`` when the test session ends green (a decorator)."""
    _publishers.append(publish)
    return publish


def publish_all() -> None:
    for publish in _publishers:
        publish()
