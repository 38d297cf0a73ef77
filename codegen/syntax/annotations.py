"""Facts one lowering leaves on an AST node for a later one (AutoGraph's `anno` idea).

The facts live in one dict per node under a single attribute, keyed by
`Anno`, so every kind of fact is named in one place and a reader can find
who writes and who reads it.
"""
from __future__ import annotations

import ast
import enum

_FIELD = "_janus_annotations"


class Anno(enum.Enum):
    # A loop that `break` or an early `return` leaves: the flag names its trip must also test
    # (`for` loops only; a `while` gets them in its own test).  Written by break_continue and
    # return_statements, read by loops.
    EXTRA_TESTS = "flags a for loop must also test"
    # An `if` made by a lowering (a flag test), not the user: it has no profile site.  Written
    # by break_continue, read by if_statements.
    GENERATED = "a statement janus made"
    # An `and`/`or` or a comparison chain whose value only an `if`, `while` or conditional
    # expression tests: only its truth matters.  Written by `only_tested` (for expressions and
    # recursion), read by expressions.
    TRUTH_ONLY = "a boolean operator or comparison chain only tested"


def getanno(node, key: Anno, default=None):
    return getattr(node, _FIELD, {}).get(key, default)


def setanno(node, key: Anno, value) -> None:
    annotations = getattr(node, _FIELD, None)
    if annotations is None:
        annotations = {}
        setattr(node, _FIELD, annotations)
    annotations[key] = value


def hasanno(node, key: Anno) -> bool:
    return key in getattr(node, _FIELD, {})


def only_tested(test) -> None:
    """Marks the `and`/`or` operators and comparison chains in `test` (an `if`'s, a `while`'s, a
    conditional expression's) whose value is only tested for truth."""
    if isinstance(test, ast.BoolOp):
        setanno(test, Anno.TRUTH_ONLY, True)
        for value in test.values:
            only_tested(value)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        only_tested(test.operand)
    elif isinstance(test, ast.Compare) and len(test.ops) > 1:
        setanno(test, Anno.TRUTH_ONLY, True)
