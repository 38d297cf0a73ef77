"""Each lowering on its own: the builder it produces, and that the builder computes what
the original does when run on Python values (no graph, no profile needed)."""
import ast

import pytest

from codegen import convert
from codegen.operators.context import BuildContext, Frame
from codegen.services import SERVICES
from codegen.lowering.break_continue import BreakContinue
from codegen.lowering.return_statements import ReturnStatements
from codegen.syntax.source import parse_function
from codegen.lowering.base import LoweringContext
from profiler import Profile


def run_builder(fn, *args):
    """Run the converted builder at 'build time' on Python values."""
    converted = convert(fn)
    ctx = BuildContext(Profile(), set(), SERVICES, {})
    with ctx:
        ctx.frames.append(Frame(converted))
        return converted.builder(*args)


def loops_and_flags(n):
    out = []
    for i in range(n):
        if i % 2:
            continue
        if i > 6:
            break
        out.append(i)
    k = 0
    while k < 10:
        k += 3
        if k == 6:
            return out, k
    return out, -k


def boolean_ops(a, b):
    return (a and b, a or b, not a, 0 < a < 5 <= b, a if b else -a)


def closures_and_defaults(x, scale=3):
    def inner(y):
        return y * scale
    return inner(x) + len([v for v in range(x) if v % 2])


CASES = [(loops_and_flags, (5,)), (loops_and_flags, (12,)), (loops_and_flags, (0,)),
         (boolean_ops, (3, 7)), (boolean_ops, (0, 2)), (boolean_ops, (6, 0)),
         (closures_and_defaults, (4,)), (closures_and_defaults, (5, 2))]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{f.__name__}{a}" for f, a in CASES])
def test_builder_equals_original_on_python_values(fn, args):
    assert run_builder(fn, *args) == fn(*args)


def _lowered(fn, *lowerings):
    node = parse_function(fn).node
    ctx = LoweringContext.for_function(node, "<test>")
    for lowering in lowerings:
        lowering.transform(node, ctx)
    return ast.unparse(node)


def test_break_continue_become_flags():
    text = _lowered(loops_and_flags, BreakContinue)
    assert "brk_1 = True" in text and "cont_1 = True" in text and "if not brk_1" in text
    assert "break" not in text and "continue" not in text


def test_early_return_becomes_flag_and_single_return():
    text = _lowered(loops_and_flags, BreakContinue, ReturnStatements)
    assert text.count("return ") == 1 and "do_return_1 = True" in text


def test_show_code_reads_like_python_with_one_reserved_name():
    source = convert(boolean_ops).source
    assert "jn.and_(" in source and "jn.or_(" in source and "jn.not_(" in source
    assert "jn.compare_chain(('<', '<', '<='), " in source and "jn.if_exp(" in source
    source = convert(loops_and_flags).source
    assert "jn.for_stmt(" in source and "jn.while_stmt(" in source and "jn.if_stmt(" in source
