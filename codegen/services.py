"""The compiler services the `jn` operators reach upward for, in one place.

Operators run while TensorFlow traces a builder; inlining a user function
needs the compiler (`codegen.compiler.convert`) and a call into a recursive
cycle needs the machine (`codegen.recursion`), both of which are built on
the operators.  Instead of importing upward, the operators call these
services through `BuildContext.compiler`; the graph room hands them over
when it starts a build.
"""
from __future__ import annotations

from codegen import compiler
from codegen.errors import Reason
from codegen.recursion import cycles, dispatch, machine


class Services:
    """Implements `codegen.operators.context.Compiler`."""

    def convert(self, fn) -> compiler.ConvertedFunction:
        return compiler.convert(fn)

    def wants_machine(self, fn, args) -> bool:
        return cycles.wants_machine(fn, args)

    def run_machine(self, fn, calls: list, kind=None) -> list | None:
        return machine.run_many(cycles.chosen(fn), fn, calls, kind)

    def dispatcher(self, name: str, by_class: dict):
        return dispatch.dispatcher(name, by_class)

    def refused(self, fn) -> Reason | None:
        return cycles.REFUSED.get(fn)


SERVICES = Services()
