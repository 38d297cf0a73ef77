"""Fault injection for tests: make a chosen assumption fail inside the graph.

`janus.testing.force_failure(kind="BRANCH")` (or `id=3`) sets `FORCED`; while
it is set, janus builds fresh graphs whose matching in-graph guards always
fail, so tests can prove that a failure at any guard leaves no partial state.
"""
from __future__ import annotations

FORCED: dict = {"kind": None, "id": None, "active": False}


def active() -> bool:
    return FORCED["active"]


def matches(assumption) -> bool:
    if not FORCED["active"]:
        return False
    kind, ident = FORCED["kind"], FORCED["id"]
    return (kind is None or assumption.kind.name == kind) and (ident is None or assumption.id == ident)
