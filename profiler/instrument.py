"""Inserts probes into a code object with the ``bytecode`` library.

Probes are calls to ``profiler.recorders`` functions placed around the
instructions whose behaviour we want to know (see ``SiteKind``); each probe
copies the stack values it reports (``COPY``) so the stack, and with it the
program, is unchanged.  Probe instructions take the location of the
instruction they watch, so ``co_positions()`` of the instrumented code still
maps every user instruction -- in particular every CALL -- to its original
span.  ``bytecode`` recomputes jumps, stack size and the exception table.
"""

from __future__ import annotations

import dis
import types

from bytecode import Bytecode, Instr

from profiler import recorders as rec
from profiler import versions
from profiler.profile import SiteKind, code_key
from profiler.recorders import INSTRUMENTED, FunctionMeta, Instrumented, Probe

_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08

#: id(original code) -> (original code, Instrumented); keeps originals alive
#: so ids are never reused.
_CACHE: dict[int, tuple] = {}


class NotInstrumentable(Exception):
    """The code object is one the profiler leaves alone (e.g. a generator)."""


def is_instrumented(code) -> bool:
    return id(code) in INSTRUMENTED


def instrument(code: types.CodeType) -> Instrumented:
    """The cached instrumented copy of ``code`` (raises NotInstrumentable)."""
    if id(code) in INSTRUMENTED:
        return INSTRUMENTED[id(code)]
    cached = _CACHE.get(id(code))
    if cached is not None:
        if isinstance(cached[1], NotInstrumentable):
            raise cached[1]
        return cached[1]
    ops = versions.current()
    if code.co_flags & ops.skip_flags:
        raise NotInstrumentable(f"{code.co_qualname} is a generator or coroutine")
    try:
        result = _instrument(code, ops)
    except Exception as exc:  # a bytecode-library limit: run this one as is
        failure = NotInstrumentable(f"{code.co_qualname}: {type(exc).__name__}: {exc}")
        _CACHE[id(code)] = (code, failure)
        raise failure from exc
    _CACHE[id(code)] = (code, result)
    INSTRUMENTED[id(result.code)] = result
    return result


def _argnames(code) -> tuple:
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & _CO_VARARGS) + bool(code.co_flags & _CO_VARKEYWORDS)
    return tuple(code.co_varnames[:n])


def _span(location):
    if location is None or location.lineno is None or location.col_offset is None:
        return None
    return (location.lineno, location.col_offset, location.end_lineno,
            location.end_col_offset)


def _original_offsets(code) -> list[int]:
    """Byte offsets of the instructions ``Bytecode.from_code`` yields."""
    return [i.offset for i in dis.get_instructions(code)
            if i.opname not in ("EXTENDED_ARG", "CACHE")]


def _instrument(code, ops: versions.Opcodes) -> Instrumented:
    meta = FunctionMeta(key=code_key(code), qualname=code.co_qualname,
                        filename=code.co_filename, firstlineno=code.co_firstlineno,
                        argnames=_argnames(code))
    bc = Bytecode.from_code(code)
    items = list(bc)
    instrs = [x for x in items if isinstance(x, Instr)]
    offsets = _original_offsets(code)
    if len(offsets) != len(instrs):  # should not happen; fall back to indices
        offsets = list(range(len(instrs)))
    offset_of = {id(x): off for x, off in zip(instrs, offsets)}
    loop_roles = _while_loop_roles(instrs, ops, offset_of)

    out = []
    pending = {}  # id(FOR_ITER) -> the trip probe its GET_ITER created
    for index, item in enumerate(items):
        if not isinstance(item, Instr):
            out.append(item)
            continue
        before, after = _probes_for(item, items, index, ops, meta, offset_of, loop_roles,
                                    pending)
        out.extend(before)
        out.extend(_rewritten(item, ops))
        out.extend(after)
    bc.clear()
    bc.extend(out)
    new_code = bc.to_code()
    return Instrumented(original=code, code=new_code, meta=meta,
                        call_spans=_call_spans(new_code, ops))


def _while_loop_roles(instrs, ops, offset_of) -> dict:
    """id(jump) -> "entry"/"bottom" for spans tested exactly twice, once by
    a backward jump: the two tests of a 3.11 ``while`` loop."""
    by_span: dict = {}
    for ins in instrs:
        if ins.name in ops.truth_jumps:
            span = _span(ins.location)
            if span is not None:
                by_span.setdefault(span, []).append(ins)
    roles = {}
    for jumps in by_span.values():
        if len(jumps) == 2 and sum(j.name in ops.backward_jumps for j in jumps) == 1:
            first, second = sorted(jumps, key=lambda j: offset_of[id(j)])
            if first.name not in ops.backward_jumps:
                roles[id(first)] = "entry"
                roles[id(second)] = "bottom"
    return roles


def _next_instr(items, index):
    for item in items[index + 1:]:
        if isinstance(item, Instr):
            return item
    return None


def _probes_for(ins, items, index, ops, meta, offset_of, loop_roles, pending):
    """``(before, after)`` probe instructions for one original instruction."""
    name, loc = ins.name, ins.location
    if name == ops.resume:
        if ins.arg != 0:  # only the function-start RESUME
            return [], []
        span = _span(loc) or (meta.firstlineno, 0, meta.firstlineno, 0)
        probe = Probe(meta, SiteKind.ENTRY, span)
        return [], ops.probe(rec.record_entry, probe, (), loc)
    span = _span(loc)
    if span is None:
        return [], []
    offset = offset_of.get(id(ins), -1)
    if name in ops.truth_jumps or name in ops.none_jumps:
        probe = Probe(meta, SiteKind.BRANCH, span, offset=offset,
                      none_test=name in ops.none_jumps, loop_role=loop_roles.get(id(ins)))
        return ops.probe(rec.record_branch, probe, (1,), loc), []
    if name == ops.get_iter:
        follower = _next_instr(items, index)
        if follower is None or follower.name != ops.for_iter:
            return [], []  # e.g. the iterable handed to a comprehension
        probe = Probe(meta, SiteKind.LOOP, span, offset=offset)
        follower_probe = Probe(meta, SiteKind.LOOP, span, offset=offset)
        pending[id(follower)] = follower_probe
        return ops.probe(rec.record_loop_enter, probe, (1,), loc), []
    if name == ops.for_iter:
        probe = pending.pop(id(ins), None)
        if probe is None:
            return [], []
        return [], ops.probe(rec.record_loop_trip, probe, (), loc)
    if name in ops.calls:
        probe = Probe(meta, SiteKind.CALL, span, offset=offset)
        return [], ops.probe(rec.record_value, probe, (1,), loc)
    if name in (ops.kw_names, ops.precall):
        return _interception(ins, items, index, ops, meta, span), []
    if name == ops.load_attr:
        probe = Probe(meta, SiteKind.ATTR_LOAD, span, offset=offset, attr=ins.arg)
        return (ops.probe(rec.record_attr_owner, probe, (1,), loc),
                ops.probe(rec.record_value, probe, (1,), loc))
    if name == ops.load_method:
        probe = Probe(meta, SiteKind.ATTR_LOAD, span, offset=offset, attr=ins.arg)
        return ops.probe(rec.record_method_owner, probe, (1,), loc), []  # (then `_rewritten`)
    if name == ops.store_attr:
        probe = Probe(meta, SiteKind.ATTR_STORE, span, offset=offset, attr=ins.arg)
        return ops.probe(rec.record_attr_store, probe, (1, 2), loc), []
    if name == ops.return_value:
        probe = Probe(meta, SiteKind.RETURN, span, offset=offset)
        return ops.probe(rec.record_value, probe, (1,), loc), []
    return [], []


def _interception(ins, items, index, ops, meta, span) -> list:
    """Before a call's keyword names (or its PRECALL when it has none): the callable passes
    through ``recorders.intercept``, where a replaying re-run can answer the call itself."""
    precall = ins
    if ins.name == ops.kw_names:
        precall = _next_instr(items, index)
        if precall is None or precall.name != ops.precall:
            return []
        span = _span(precall.location)          # the call's span, as its CALL site has it
    else:
        previous = items[index - 1] if index else None
        if isinstance(previous, Instr) and previous.name == ops.kw_names:
            return []
    return ops.intercept(rec.intercept, Probe(meta, SiteKind.CALL, span), precall.arg, ins.location)


def _rewritten(ins, ops) -> list:
    """The instruction as the instrumented code runs it."""
    return ops.method_as_attribute(ins) if ins.name == ops.load_method else [ins]


def _call_spans(code, ops) -> dict:
    """Offsets of call instructions in ``code`` -> their span.

    Every offset from the call to the next instruction maps to it, so the
    lookup works whichever of them a suspended caller's ``f_lasti`` shows.
    """
    spans = {}
    instructions = list(dis.get_instructions(code, show_caches=True))
    for i, ins in enumerate(instructions):
        if ins.opname not in ops.calls or ins.positions is None:
            continue
        p = ins.positions
        if p.lineno is None or p.col_offset is None:
            continue
        span = (p.lineno, p.col_offset, p.end_lineno, p.end_col_offset)
        end = i + 1
        while end < len(instructions) and instructions[end].opname == "CACHE":
            end += 1
        stop = instructions[end].offset if end < len(instructions) else ins.offset + 2
        for off in range(ins.offset, stop, 2):
            spans[off] = span
    return spans
