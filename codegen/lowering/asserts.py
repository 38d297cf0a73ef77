"""Lowers `assert test, msg` to `if test: pass / else: raise AssertionError(msg)`.

Eager evaluates `bool(test)`, so an assert on a tensor passes or raises by its
value.  As an `if` it is what `if not ok: raise ...` already is: the profile's
branch site for the test is the same one (its conditional jump is at the
test's span), a graph checks the test and the message is built only where
eager builds it, in Python after a failed check.  Under `python -O` eager
drops asserts, and so does this lowering.
"""
from __future__ import annotations

import ast
import sys

from codegen.lowering.base import Lowering


class Asserts(Lowering):
    """An `assert` becomes an `if` whose `else` raises.

    Example::

        def f(x):
            assert x > 0, f"{x} is not positive"
            return x

    lowers to::

        def f(x):
            if x > 0:
                pass
            else:
                raise AssertionError(f"{x} is not positive")
            return x
    """

    def visit_Assert(self, node):
        if sys.flags.optimize:
            return ast.copy_location(ast.Pass(), node)
        error = ast.Name("AssertionError", ast.Load())
        if node.msg is not None:
            error = ast.Call(error, [node.msg], [])
        failure = ast.Raise(exc=error, cause=None)
        lowered = ast.If(test=node.test, body=[ast.Pass()], orelse=[failure])
        for made in (lowered, failure, error, *lowered.body):
            ast.copy_location(made, node)
        if isinstance(error, ast.Call):
            ast.copy_location(error.func, node)
        return lowered


transform = Asserts.transform
