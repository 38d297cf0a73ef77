"""Linear recursion as two loops: down the calls, then back up the returns.

When a cycle is one function with one call site, called once, and a frame
that made its call only returns after it (`x * power(x, n - 1)`, a list
walk, a digit sum), the frames form a stack that is filled once and then
emptied once.  The descending loop runs, per frame, the blocks from the entry
up to the call or a return (their branches as `tf.cond`s): a call saves what
the rest of the frame reads and moves on to the callee's arguments; a return
ends the descent with its value.  The ascending loop then runs, per waiting
frame from the deepest up, the blocks after the call on that value.  A frame
costs one iteration of each loop, with no tables, no gathers and no
`tf.switch_case`; both loops are ordinary `tf.while_loop`s, so gradients flow
through them, and the order of their ops is eager's: every frame's code before
its call in call order, after it in return order.  This is what runs a chain
whose values XLA must not compile (floats, which it may round differently and
gradients use; stateful ops); integer chains run under XLA
(`codegen.recursion.chain`).

What a frame keeps across its call lives in a `tf.TensorArray` per value;
values every call passes along unchanged are static (`blocks.build_machine`)
and need none.
"""
from __future__ import annotations

import ast
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from codegen.lowering.recursion import Branch, CallGroup, Goto, Return
from codegen.operators.guards import check
from codegen.recursion.blocks import Machine, block_reads, block_vars, is_bare, op_count, ops_since, run_builder
from codegen.recursion.constants import share_constants
from codegen.recursion.frame_specs import leaves, pack
from codegen.recursion.frames import cast, cast_all

MAX_PATHS = 32          # paths through a frame's blocks, each traced into the loop body once


def why_not(m: Machine) -> str | None:
    """Why the cycle is not a linear recursion that the two loops run, or None when it is."""
    if m.roots > 1:
        return f"{m.roots} independent calls into the cycle run together"
    if len(m.cycle.functions) > 1:
        return "the cycle has several functions"
    (f, cf), = m.cycle.functions.items()
    groups = [b for b in cf.blocks if isinstance(b.term, CallGroup)]
    if len(groups) != 1 or len(groups[0].term.calls) != 1:
        return f"{cf.fn.__qualname__} calls itself at {sum(len(b.term.calls) for b in groups)} places"
    resume = groups[0].term.resume
    after, paths = _paths(cf, resume)
    if groups[0].id in after:
        return f"{cf.fn.__qualname__} may call itself again after a call has returned"
    if paths is None or paths > MAX_PATHS or (_paths(cf, cf.entry)[1] or MAX_PATHS + 1) > MAX_PATHS:
        return f"{cf.fn.__qualname__} has more than {MAX_PATHS} paths through its branches, or a loop around its call"
    unknown = [s for s in m.leaf_specs + m.ret_leaves if not tf.TensorShape(s.shape).is_fully_defined()]
    if unknown:
        return "a frame value has no fixed shape"
    return None


def _paths(cf, start) -> tuple[set, int | None]:
    """The blocks reachable from `start` without passing a call, and how many paths lead from
    `start` to a call or a return (None when the blocks loop)."""
    seen, memo = set(), {}

    def count(b, stack):
        if b in stack:
            return None
        seen.add(b)
        if b in memo:
            return memo[b]
        t = cf.blocks[b].term
        nexts = [t.target] if isinstance(t, Goto) else [t.if_true, t.if_false] if isinstance(t, Branch) else []
        counts = [count(n, stack | {b}) for n in nexts]
        memo[b] = None if None in counts else (sum(counts) if nexts else 1)
        return memo[b]
    return seen, count(start, frozenset())


_PLAIN = (ast.Name, ast.Load, ast.Constant, ast.Compare, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Attribute,
          ast.Subscript, ast.Slice, ast.Tuple, ast.cmpop, ast.operator, ast.unaryop, ast.boolop)


def _plain_test(test) -> bool:
    """Whether a branch test only computes from values (no call): evaluating it again, in the
    loop's condition and its body, does nothing eager's one evaluation would not."""
    return all(isinstance(node, _PLAIN) for node in ast.walk(test))


class _End(NamedTuple):
    """Where one path through a frame's blocks ends: whether it calls, the next frame's values
    (the callee's, or this frame's on a return), the values the frame keeps across its call, the
    returned value, and how often each block ran."""
    calls: tf.Tensor
    frame: list
    saved: list
    value: list
    ran: tf.Tensor


class _Linear:
    """The two loops of one linear recursion."""

    def __init__(self, m: Machine, capacity: int | None = None):
        self.m = m
        self.capacity = capacity        # XLA's static bound on the frames (`linear_xla`), or None
        (self.f, self.cf), = m.cycle.functions.items()
        self.group = next(b for b in self.cf.blocks if isinstance(b.term, CallGroup))
        self.call = self.group.term.calls[0]
        self.specs = m.leaf_specs
        self.returns = leaves(m.returns[self.f])
        after, _ = _paths(self.cf, self.group.term.resume)
        kept = {v for b in after for v in block_vars(m, self.f, self.cf, self.cf.blocks[b])[0]}
        self.saved = [j for v in self.cf.vars if v in kept and v != self.call.target
                      for j in m.index.get((self.f, v), [])]

    def zeros(self, specs) -> list:
        return [tf.zeros(s.shape, s.dtype) for s in specs]

    def trace(self, block_id, local: dict, ran, delta, side=None, paths=None) -> _End:
        """Run the frame whose values are `local` from `block_id` to its call or a return (at the
        entry's branch, the side `side` when given: the loop's condition has tested it).  `paths`
        collects each traced path's block counts."""
        m, f, cf = self.m, self.f, self.cf
        block = cf.blocks[block_id]
        gid = m.cycle.offsets[f] + block.id
        written, new, term = self.run_block(block, local)
        local = {**local, **dict(zip([j for v in written for j in m.index[(f, v)]], new))}
        delta = delta.copy()
        delta[gid] += 1
        t = block.term
        if isinstance(t, Goto):
            return self.trace(t.target, local, ran, delta, paths=paths)
        if isinstance(t, Branch) and side is not None and block_id == cf.entry:
            return self.trace(t.if_true if side else t.if_false, local, ran, delta, paths=paths)
        if isinstance(t, Branch):
            if not isinstance(term, (tf.Tensor, tf.Variable)):
                return self.trace(t.if_true if term else t.if_false, local, ran, delta, paths=paths)
            return _End(*tf.cond(tf.cast(term, tf.bool), lambda: self.trace(t.if_true, local, ran, delta, paths=paths),
                                 lambda: self.trace(t.if_false, local, ran, delta, paths=paths)))
        if paths is not None:
            paths.append(delta)
        ran = ran + tf.constant(delta)
        frame = [local[j] for j in range(len(self.specs))]
        saved = [local[j] for j in self.saved]
        if isinstance(t, CallGroup):
            (args,) = term
            child = self.zeros(self.specs)
            for p, a in zip(cf.params, args):
                for j, leaf in zip(m.index.get((f, p), []), cast_all(a, m.specs[(f, p)])):
                    child[j] = leaf
            return _End(tf.constant(True), child, saved, self.zeros(self.returns), ran)
        value = cast_all(term if t.value is not None else 0, m.returns[f])
        return _End(tf.constant(False), frame, saved, value, ran)

    def base_case(self):
        """The side of the entry's branch that calls, when the entry is a bare test (no statements)
        whose one side reaches only the call and the other only returns (`if n == 0: return ...`):
        the descending loop then tests it in its condition instead of a `tf.cond` per frame."""
        entry = self.cf.blocks[self.cf.entry]
        if not isinstance(entry.term, Branch) or not is_bare(entry) or not _plain_test(entry.term.test):
            return None
        ends = [self._ends(entry.term.if_true), self._ends(entry.term.if_false)]
        if ends == [{"call"}, {"return"}]:
            return True
        return False if ends == [{"return"}, {"call"}] else None

    def _ends(self, start) -> set:
        """How the paths from block `start` end before the next call: "call", "return", "loop"."""
        out, seen, todo = set(), set(), [start]
        while todo:
            b = todo.pop()
            if b in seen or b == self.cf.entry:
                out.add("loop")
                continue
            seen.add(b)
            t = self.cf.blocks[b].term
            if isinstance(t, CallGroup):
                out.add("call")
            elif isinstance(t, Return):
                out.add("return")
            else:
                todo += [t.target] if isinstance(t, Goto) else [t.if_true, t.if_false]
        return out

    def run_block(self, block, local: dict) -> tuple:
        """One block on the frame whose values are `local`: (the variables it writes, their new
        leaves, its terminator's value); the variables it reads are noted for the read guards."""
        m, f, cf = self.m, self.f, self.cf
        table_vars, written = block_vars(m, f, cf, block)
        before = op_count()
        new, term = run_builder(m, f, cf, block, table_vars, written,
                                [local[j] for v in table_vars for j in m.index[(f, v)]])
        for var in block_reads(ops_since(before)):
            m.reads.setdefault(var, set()).add(m.cycle.offsets[f] + block.id)
        return written, new, term

    def test(self, frame):
        """The entry's branch test on `frame`, as a boolean tensor."""
        _, _, term = self.run_block(self.cf.blocks[self.cf.entry], dict(enumerate(frame)))
        return tf.cast(term, tf.bool) if isinstance(term, (tf.Tensor, tf.Variable)) else tf.constant(bool(term))

    def root_frame(self, args) -> list:
        """The root call's frame values: its arguments' leaves, zeros elsewhere."""
        m, f, cf = self.m, self.f, self.cf
        frame = self.zeros(self.specs)
        for p, a in zip(cf.params, args):
            for j, leaf in zip(m.index.get((f, p), []), cast_all(a, m.specs[(f, p)])):
                frame[j] = leaf
        return frame

    def descend(self, frame, limit):
        """The descending loop from the root call's `frame`: (depth of the frame that returned,
        whether one returned within the limit, block counts, its value, the stacks of saved values)."""
        m, cf = self.m, self.cf
        stacks = [tf.TensorArray(self.specs[j].dtype, size=self.capacity or 0, dynamic_size=self.capacity is None,
                                 clear_after_read=False, element_shape=self.specs[j].shape) for j in self.saved]
        zero_delta = np.zeros([m.cycle.n_blocks], np.int32)
        calls = self.base_case()
        if calls is not None:
            return self._descend_tested(calls, frame, stacks, limit, zero_delta)

        def body(depth, done, ran, frame, value, stacks):
            end = self.trace(cf.entry, dict(enumerate(frame)), ran, zero_delta)
            stacks = [s.write(depth, v) for s, v in zip(stacks, end.saved)]
            share_constants(tf.compat.v1.get_default_graph())
            return depth + tf.cast(end.calls, tf.int32), ~end.calls, end.ran, end.frame, end.value, stacks

        state = (tf.constant(0), tf.constant(False), tf.zeros([m.cycle.n_blocks], tf.int32), frame,
                 self.zeros(self.returns), stacks)
        depth, done, ran, _, value, stacks = tf.while_loop(lambda depth, done, *_: ~done & (depth <= limit),
                                                            body, state, maximum_iterations=self.capacity)
        return depth, self._within(done, depth), ran, value, stacks

    def _within(self, done, depth):
        """`done`, and false where the frames reached XLA's bound (the loop stopped there)."""
        return done if self.capacity is None else done & (depth < self.capacity)

    def _descend_tested(self, calls, frame, stacks, limit, zero_delta):
        """The descending loop whose condition is the entry's test: its body runs only the calling
        side, and the returning side runs once after it, on the frame that returns (under a
        `tf.cond` on whether one did within the limit, so it never runs where eager does not)."""
        m = self.m

        def cond(depth, ran, frame, stacks):
            return (depth <= limit) & tf.equal(self.test(frame), calls)

        paths: list = []

        def body(depth, ran, frame, stacks):
            end = self.trace(self.cf.entry, dict(enumerate(frame)), ran, zero_delta, side=calls, paths=paths)
            stacks = [s.write(depth, v) for s, v in zip(stacks, end.saved)]
            share_constants(tf.compat.v1.get_default_graph())
            return depth + 1, ran if len(paths) == 1 else end.ran, end.frame, stacks

        state = (tf.constant(0), tf.zeros([m.cycle.n_blocks], tf.int32), frame, stacks)
        depth, ran, frame, stacks = tf.while_loop(cond, body, state, maximum_iterations=self.capacity)
        ran = _counted(ran, paths, depth)
        done = self._within(depth <= limit, depth)

        def returned():
            end = self.trace(self.cf.entry, dict(enumerate(frame)), ran, zero_delta, side=not calls)
            return end.ran, end.value

        ran, value = tf.cond(done, returned, lambda: (ran, self.zeros(self.returns)))
        return depth, done, ran, value, stacks

    def ascend(self, depth, value, ran, stacks):
        """The ascending loop: every waiting frame, deepest first, resumes with its callee's value."""
        m, f = self.m, self.f
        target = leaves(m.specs[(f, self.call.target)])
        zero_delta = np.zeros([m.cycle.n_blocks], np.int32)

        paths: list = []

        def body(i, value, ran):
            local = dict(enumerate(self.zeros(self.specs)))
            local.update(zip(self.saved, [s.read(i - 1) for s in stacks]))
            local.update(zip(m.index.get((f, self.call.target), []),
                             [cast(v, s) for v, s in zip(value, target)]))
            end = self.trace(self.group.term.resume, local, ran, zero_delta, paths=paths)
            share_constants(tf.compat.v1.get_default_graph())
            return i - 1, end.value, ran if len(paths) == 1 else end.ran

        i, value, ran = tf.while_loop(lambda i, *_: i > 0, body, (depth, value, ran), maximum_iterations=self.capacity)
        return i, value, _counted(ran, paths, depth)


def _counted(ran, paths: list, frames):
    """The block counts after a loop whose body traced `paths`: with one path, the loop leaves them
    alone (an add per frame fewer) and they are added here, once per frame."""
    if len(paths) != 1:
        return ran
    return ran + frames * tf.constant(paths[0])


def run(m: Machine, args, limit):
    """Build the two loops for the one call `entry(*args)` into the current graph; its result."""
    lin = _Linear(m)
    depth, done, ran, value, stacks = lin.descend(lin.root_frame(args), limit)
    _, value, ran = lin.ascend(depth, value, ran, stacks)
    with tf.control_dependencies([check(done, [
            "recursion deeper than the interpreter's recursion limit", limit])] + m.guards(lambda g: ran[g])):
        value = [tf.identity(v) for v in value]
    m.ctx.observe(m.cycle.observe, [2 * depth + 1, depth + 1, ran])
    return pack(m.returns[m.entry], [cast(v, s) for v, s in zip(value, m.ret_leaves)])
