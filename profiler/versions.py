"""Every CPython-version difference the instrumenter depends on, as data.

Opcode names of conditional jumps, calls and loops, and the instruction
sequence of a probe, change between CPython releases.  Keeping them in one
table means supporting a new version is adding one entry here (and running
the transparency tests), and an unknown version fails loudly at the first
instrumentation instead of producing wrong bytecode.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


class UnsupportedPythonVersion(RuntimeError):
    """The running CPython has no entry in ``OPCODES``."""


@dataclass(frozen=True)
class Opcodes:
    """Opcode names for one CPython version."""

    resume: str
    #: conditional jumps that test truth; the tested value is on top of stack
    truth_jumps: frozenset
    #: conditional jumps that test ``is None``
    none_jumps: frozenset
    #: jumps whose target is earlier in the code
    backward_jumps: frozenset
    #: calls whose result is pushed on the stack
    calls: frozenset
    get_iter: str
    for_iter: str
    load_attr: str
    load_method: str
    store_attr: str
    return_value: str
    #: the call sequence: optional keyword names, then the instruction that takes the arguments
    kw_names: str
    precall: str
    #: code flags of functions that are never instrumented (generators, coroutines)
    skip_flags: int
    #: what a method may do and still only read its object: these opcodes, calls only of
    #: builtins loaded by a global load whose argument has ``global_call_bit`` set
    read_only: frozenset = frozenset()
    global_load: str = "LOAD_GLOBAL"
    global_call_bit: int = 1

    def probe(self, recorder, site, peeks: tuple[int, ...], location) -> list:
        """The instructions that call ``recorder(site, *values)``.

        ``peeks`` are stack positions (1 = top, before the probe runs) of the
        values to pass; the stack is left exactly as it was.
        """
        from bytecode import Instr

        instrs = [Instr("PUSH_NULL", location=location),
                  Instr("LOAD_CONST", recorder, location=location),
                  Instr("LOAD_CONST", site, location=location)]
        pushed = 3
        for depth in peeks:
            instrs.append(Instr("COPY", depth + pushed, location=location))
            pushed += 1
        n = 1 + len(peeks)
        instrs += [Instr("PRECALL", n, location=location),
                   Instr("CALL", n, location=location),
                   Instr("POP_TOP", location=location)]
        return instrs


    def method_as_attribute(self, instr) -> list:
        """``LOAD_METHOD name`` as ``LOAD_ATTR name`` under a NULL: the call then finds one
        callable (the bound method) where an interceptor can replace it."""
        from bytecode import Instr

        loc = instr.location
        return [Instr("LOAD_ATTR", instr.arg, location=loc), Instr("PUSH_NULL", location=loc),
                Instr("SWAP", 2, location=loc)]

    def intercept(self, hook, site, nargs: int, location) -> list:
        """Instructions placed before a call of ``nargs`` arguments (before its keyword names):
        the callable under the arguments becomes ``hook(callable, site)``.  The stack holds
        NULL, the callable, then the arguments (every method load is an attribute load)."""
        from bytecode import Instr

        swap = [Instr("SWAP", nargs + 1, location=location)] if nargs else []
        return swap + [Instr("LOAD_CONST", hook, location=location), Instr("PUSH_NULL", location=location),
                       Instr("SWAP", 3, location=location), Instr("LOAD_CONST", site, location=location),
                       Instr("PRECALL", 2, location=location), Instr("CALL", 2, location=location)] + swap


_CO_GENERATOR, _CO_COROUTINE, _CO_ITERABLE_COROUTINE, _CO_ASYNC_GENERATOR = (
    0x20, 0x80, 0x100, 0x200)

OPCODES = {
    (3, 11): Opcodes(
        resume="RESUME",
        truth_jumps=frozenset({
            "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
            "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE",
            "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"}),
        none_jumps=frozenset({
            "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
            "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE"}),
        backward_jumps=frozenset({
            "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE",
            "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE"}),
        calls=frozenset({"CALL", "CALL_FUNCTION_EX"}),
        get_iter="GET_ITER",
        for_iter="FOR_ITER",
        load_attr="LOAD_ATTR",
        load_method="LOAD_METHOD",
        store_attr="STORE_ATTR",
        return_value="RETURN_VALUE",
        kw_names="KW_NAMES",
        precall="PRECALL",
        skip_flags=_CO_GENERATOR | _CO_COROUTINE | _CO_ITERABLE_COROUTINE | _CO_ASYNC_GENERATOR,
        read_only=frozenset({
            "RESUME", "NOP", "CACHE", "LOAD_FAST", "LOAD_CONST", "LOAD_ATTR", "LOAD_GLOBAL", "STORE_FAST",
            "COMPARE_OP", "IS_OP", "CONTAINS_OP", "BINARY_OP", "BINARY_SUBSCR", "UNARY_NOT",
            "UNARY_NEGATIVE", "UNARY_INVERT", "UNARY_POSITIVE", "RETURN_VALUE", "POP_TOP", "COPY", "SWAP",
            "PRECALL", "CALL", "KW_NAMES", "JUMP_FORWARD", "BUILD_TUPLE",
            "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_NONE",
            "POP_JUMP_FORWARD_IF_NOT_NONE", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"}),
    ),
}


def current(version: tuple[int, int] | None = None) -> Opcodes:
    """The table for ``version`` (default: the running interpreter), or
    UnsupportedPythonVersion."""
    version = tuple(version or sys.version_info[:2])
    try:
        return OPCODES[version]
    except KeyError:
        supported = ", ".join(f"{a}.{b}" for a, b in sorted(OPCODES))
        raise UnsupportedPythonVersion(
            f"profiler: Python {version[0]}.{version[1]} is not supported "
            f"(supported: {supported}); add an entry to profiler/versions.py") from None
