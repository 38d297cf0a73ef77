"""Errors raised while converting or staging a function.

Three families, as in DESIGN.md: a *conversion* error means janus cannot
lower the Python source (the function runs imperatively); a *staging* error
means the builder failed while TensorFlow traced it; *speculation failed* is
what an in-graph guard raises at run time.  Every error carries a stable
kind, the user's file:line, an explanation and a hint, so the report, the log
and an exception message print the same facts.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Reason:
    """Why something stays imperative or fell back: stable kind + where + why."""

    kind: str            # e.g. "generator", "attribute-write", "guard-failed:branch"
    where: str           # "file.py:12", or "" when it has no source line
    explanation: str
    hint: str = ""

    def __str__(self) -> str:
        text = f"[{self.kind}] {self.where}: {self.explanation}" if self.where else f"[{self.kind}] {self.explanation}"
        return f"{text} (hint: {self.hint})" if self.hint else text


class JanusError(Exception):
    """Base of every error janus raises itself."""

    def __init__(self, reason: Reason):
        super().__init__(str(reason))
        self.reason = reason


class ConversionError(JanusError):
    """The source uses a construct janus does not lower; run imperatively."""


class StagingError(JanusError):
    """The builder could not be traced into a graph for these inputs."""


def where(filename: str, lineno: int | None) -> str:
    return f"{filename}:{lineno}" if lineno else filename


def unsupported(kind: str, filename: str, node, explanation: str, hint: str = "") -> ConversionError:
    return ConversionError(Reason(kind, where(filename, getattr(node, "lineno", None)), explanation, hint))
