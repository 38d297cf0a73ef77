"""Lowers `for` and `while` loops to unrolled code or `tf.while_loop`.

Decided at build time by `jn.for_stmt` / `jn.while_stmt`: Python iterables
and Python-valued tests run as Python loops (unrolled into the graph); a
tensor trip count the profile saw constant is unrolled behind an in-graph
guard on the count; anything else becomes a `tf.while_loop` over the
variables the body assigns.
"""
from __future__ import annotations

from codegen.syntax.analysis import assigned_names
from codegen.lowering.control_flow import (StatementLowering, body_function, grown_lists, list_modes,
                                           state_functions)
from codegen.syntax.annotations import Anno, getanno
from codegen.syntax.templates import JN, replace, replace_expr


class Loops(StatementLowering):
    """A loop becomes a body function (and a test function), state accessors and
    `jn.for_stmt` / `jn.while_stmt`.  Run alone here; in the pipeline the calls lowering
    has already made `range(n)` a `jn.call(...)`.

    Example::

        def f(n):
            s = 0
            for i in range(n):
                s = s + i
            return s

    lowers to::

        def f(n):
            s = 0

            def loop_body_1(itr_1):
                nonlocal i, s
                i = itr_1
                s = s + i

            def get_state_1():
                return (i, s)

            def set_state_1(vals):
                nonlocal i, s
                i, s = vals
            jn.for_stmt(range(n), loop_body_1, get_state_1, set_state_1, ('i', 's'), 0, None)
            return s

    Example::

        def f(x):
            while x > 0:
                x = x - 1
            return x

    lowers to::

        def f(x):

            def loop_test_1():
                return x > 0

            def loop_body_1():
                nonlocal x
                x = x - 1

            def get_state_1():
                return (x,)

            def set_state_1(vals):
                nonlocal x
                x, = vals
            jn.while_stmt(loop_test_1, loop_body_1, get_state_1, set_state_1, ('x',), 0)
            return x
    """

    def visit_For(self, node):
        names = assigned_names([node.target] + node.body)
        lists = grown_lists(self.ctx, node.body, names)
        names += lists
        site = self.sites.loop(node)
        self.generic_visit(node)
        body_name, itr = self.namer.new("loop_body"), self.namer.new("itr")
        get_name, set_name = self.namer.new("get_state"), self.namer.new("set_state")
        (assign,) = replace("target = itr", node, itr=itr)
        assign.targets = [node.target]
        stmts = [body_function(body_name, names, [assign] + node.body, node, params=itr)]
        stmts += state_functions(names, get_name, set_name, node)
        stmts += replace(f"{JN}.for_stmt(iterable, body, get_state, set_state, names, site, extra_test"
                         + (", lists)" if lists else ")"), node,
                         iterable=node.iter, body=body_name, get_state=get_name, set_state=set_name,
                         names=tuple(names), site=site, extra_test=self._extra_test(node), lists=list_modes(self.ctx, lists))
        return stmts

    @staticmethod
    def _extra_test(node):
        """`lambda: jn.not_any(do_return_1, brk_1)` for loops left by return/break (the flag
        added last first), else None."""
        flags = getanno(node, Anno.EXTRA_TESTS)
        if not flags:
            return None
        return replace_expr(f"lambda: {JN}.not_any({', '.join(reversed(flags))})", node)

    def visit_While(self, node):
        names = assigned_names(node.body)
        tested = assigned_names(node.test)          # `while (k := k - 1) > 0:` binds `k` each round
        names += [n for n in tested if n not in names]
        lists = grown_lists(self.ctx, node.body, names)
        names += lists
        site = self.sites.branch(node.test, "while")
        self.generic_visit(node)
        test_name, body_name = self.namer.new("loop_test"), self.namer.new("loop_body")
        get_name, set_name = self.namer.new("get_state"), self.namer.new("set_state")
        declare = f"    nonlocal {', '.join(tested)}\n" if tested else ""
        (test_fn,) = replace(f"def {test_name}():\n{declare}    return test\n", node, test=node.test)
        stmts = [test_fn, body_function(body_name, names, node.body, node)]
        stmts += state_functions(names, get_name, set_name, node)
        extra = ", lists, assigns=True" if tested else ", lists" if lists else ""
        stmts += replace(f"{JN}.while_stmt(test, body, get_state, set_state, names, site{extra})", node,
                         test=test_name, body=body_name, get_state=get_name, set_state=set_name,
                         names=tuple(names), site=site, lists=list_modes(self.ctx, lists) if lists else ())
        return stmts


transform = Loops.transform
