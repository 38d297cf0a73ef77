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

# Default hints by kind (the part before ":"), used when the raiser gave none, so
# every report line, log line and error message ends in something the user can do.
HINTS = {
    "generator": "return a list instead of yielding",
    "coroutine": "speculate the synchronous function the coroutine calls",
    "try-except": "move the try/except out of the speculated function",
    "class-def": "define the class at module level",
    "import": "import at module level",
    "state-write": "return the new value instead of storing it, or keep the write outside the speculated function",
    "match": "rewrite the match statement as if/elif",
    "no-source": "define the function in a file, not in an interactive prompt or exec()",
    "staging": "run the function without janus to see the full error; janus runs this call imperatively",
    "undefined-result": "assign the returned variable on every path",
    "guard-failed": "janus relaxed this assumption; if it keeps failing the value is data-dependent",
    "keeps-failing": "see the fallbacks above; the function now runs eagerly",
    "keeps-recompiling": "pass values that vary between calls as tensors",
    "python-value-of-tensor": "it runs in Python between graph segments; kept in TensorFlow ops (tf.cond, "
                              "tf.where) or moved out of the function, the rest is one graph",
    "held-number": "nothing to do: a number the graph holds per node or frame was used where Python needs its "
                   "value; Python runs that code, as eager does",
    "python-arithmetic": "nothing to do: Python raised or computed beyond int64 here, as eager does",
    "python-int": "nothing to do: a Python number here left what the graph computes exactly (an int past its "
                  "fixed width, a zero divisor), or a frame took the side of an `if` that raises; Python "
                  "computed or raised it, as eager does",
    "raise": "nothing to do: the call took the side of an `if` that raises; Python ran it and raised, as eager "
             "does, and the graph stays for the calls that do not",
    "guard-mismatch": "a list or dict passed twice, or passed and also read as a global, runs in Python; pass it once",
    "no-return": "nothing to do: the call reached no return statement and gave None, as eager does",
    "graph-error": "the call was re-run eagerly; janus.explain(fn, *args) shows the graph it built",
    "python-in-graph": "the Python a graph calls runs once per call; an op failing after it raises the graph's error, as tf.function does",
    "xla": "drop jit_compile=True, or keep the op XLA lacks out of the function",
    "closure-cells": "pass the value to the nested function as an argument, or return the new value from it",
    "frame-introspection": "pass the values explicitly instead of reading the frame with locals(), eval() or exec()",
    "iterator-result": "make a list of it (list(...)) before it leaves",
    "function-result": "return the values it would use (or pass the function in) instead of a function made inside",
    "outer-trace": "call the function eagerly (outside tf.function, Keras graph mode or an export) to speculate",
}


@dataclasses.dataclass(frozen=True)
class Reason:
    """Why something stays imperative or fell back: stable kind + where + why."""

    kind: str            # e.g. "generator", "attribute-write", "guard-failed:branch"
    where: str           # "file.py:12", or "" when it has no source line
    explanation: str
    hint: str = ""

    def __post_init__(self):
        if not self.hint:
            object.__setattr__(self, "hint", HINTS.get(self.kind.split(":")[0], ""))

    def to_dict(self) -> dict:
        return {"kind": self.kind, "where": self.where, "explanation": self.explanation, "hint": self.hint}

    def __str__(self) -> str:
        text = f"[{self.kind}] {self.where}: {self.explanation}" if self.where else f"[{self.kind}] {self.explanation}"
        return f"{text} (hint: {self.hint})" if self.hint else text


class JanusError(Exception):
    """Base of every error janus raises itself."""

    def __init__(self, reason: Reason):
        super().__init__(str(reason))
        self._reason = reason
        # The user's file:line is in the message; the janus and TensorFlow frames that led
        # here stay on __context__/__cause__ for debugging but are not printed first.
        self.__suppress_context__ = True

    @property
    def reason(self) -> Reason:
        """Why; where a library re-raised this error as a new one of its type with its own text
        (Keras's layer call does, `type(e)(message)`), the reason of the error it caught."""
        if isinstance(self._reason, Reason):
            return self._reason
        exc, seen = self.__context__ or self.__cause__, set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            if isinstance(exc, JanusError) and isinstance(exc._reason, Reason):
                return exc._reason
            exc = exc.__context__ or exc.__cause__
        return Reason("staging", "", str(self._reason))


class ConversionError(JanusError):
    """The source uses a construct janus does not lower; run imperatively."""


class StagingError(JanusError):
    """The builder could not be traced into a graph for these inputs."""


class NeedsPythonValue(StagingError):
    """Python code needs a tensor's value while tracing (`float(t)`, `t.numpy()`): no graph of
    this function can do that, so it runs imperatively."""


class ReplicaSync(StagingError):
    """The function runs on a replica thread of `tf.distribute` and synchronises the replicas:
    TensorFlow builds that only in a graph around the whole `strategy.run`, so it runs
    imperatively."""


class JoinBroken(StagingError):
    """Calls joined into one machine before a loop were not independent of the loop's body (it wrote
    a variable or state after them), or a comprehension's element built once for all items did
    more than compute tensors: rebuild without that join (or that batching)."""

    def __init__(self, key, explanation="the loop writes state its joined recursive calls may read",
                 hint="the calls run one machine each"):
        super().__init__(Reason("join", key[1], explanation, hint))
        self.key = key


def where(filename: str, lineno: int | None) -> str:
    return f"{filename}:{lineno}" if lineno else filename


def unsupported(kind: str, filename: str, node, explanation: str, hint: str = "") -> ConversionError:
    return ConversionError(Reason(kind, where(filename, getattr(node, "lineno", None)), explanation, hint))


class NeedsTree(StagingError):
    """A recursive function got a Python tree: rebuild with that argument flattened to tables."""

    def __init__(self, path: str, where_: str, methods=()):
        super().__init__(Reason("tree-argument", where_, f"{path} is a tree; it is fed as tables"))
        self.path = path
        self.methods = tuple(methods)       # zero-argument node methods the recursion calls
