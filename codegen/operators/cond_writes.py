"""Attributes of outside objects a tensor `if` writes, carried through its `tf.cond`.

`if loss < self.best: self.best = loss; self.bad = 0` / `else: self.bad += 1` writes
attributes of an object from outside the call inside the sides of a `tf.cond`.  TensorFlow
traces each side once, whichever side a call takes, so such a write cannot be deferred as it
stands.  It is carried like a local variable instead: before the `tf.cond` the attribute's value
is the call's pending write of it or the object's attribute (read as any outside read is); each
side outputs the value it leaves; after the `tf.cond` the merged output is the call's pending
write.  Where one side leaves the attribute as it was and the call had not written it before,
eager leaves the caller's object there: the write-back then sets it only when the graph's
predicate says the writing side ran (`Heap.cond_writes`).  Inside another branch or a loop body
the predicate is no output of the graph, so there only a Python number may pass through a side
unwritten (its identity means nothing); anything else stops the build as before.
"""
from __future__ import annotations

import tensorflow as tf

from codegen.operators.numbers import PyNumber
from codegen.operators.state import ld_attr
from codegen.operators.values import UNDEF, is_symbolic

_NUMBERS = (int, float, bool, PyNumber)


class WritesInSide(Exception):
    """A side of a `tf.cond` wrote attributes of outside objects the `tf.cond` does not carry
    yet: it is traced again carrying them."""

    def __init__(self, entries: dict):
        super().__init__()
        self.entries = entries          # heap.attrs key -> its entry [obj, name, value, source]


class CondWrites:
    """The outside attributes one tensor `if` carries (see the module docstring)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.attrs_before = dict(ctx.heap.attrs)
        self.keys: list = []
        self.targets: dict = {}         # key -> (obj, name, source)
        self.before: dict = {}          # key -> its value before the `if`
        self.wrote = {True: set(), False: set()}

    def learn(self, exc: WritesInSide):
        """Carry the attributes `exc` names; the abandoned trace's writes are undone."""
        heap = self.ctx.heap
        heap.attrs.clear()
        heap.attrs.update(self.attrs_before)
        for key, (obj, name, _, source) in exc.entries.items():
            if key in self.targets:
                continue
            pending = self.attrs_before.get(key)
            if pending is not None:
                value = pending[2]
            else:
                try:
                    value = ld_attr(obj, name)
                except AttributeError:
                    self.ctx.fail("write-in-tf.cond", f"`{source}` is first set inside a tensor `if`: eager leaves "
                                  "it unset where the other side runs", "set it before the `if`")
            self.keys.append(key)
            self.targets[key] = (obj, name, source)
            self.before[key] = value

    def carry_new(self, before: dict, now: dict):
        """Raises `WritesInSide` with the attributes written since `before` (keys -> id of the
        value, as `general._heap_state` gives them) that this `if` does not carry yet."""
        new = {k: self.ctx.heap.attrs[k] for k, v in now.items()
               if before.get(k) != v and k not in self.targets and k in self.ctx.heap.attrs}
        if new:
            raise WritesInSide(new)

    def wrap(self, get_state, set_state, names):
        """State accessors and names with the carried attributes after the variables."""
        n, heap = len(names), self.ctx.heap

        def get():
            return tuple(get_state()) + tuple(heap.attrs[k][2] if k in heap.attrs else self.before[k]
                                              for k in self.keys)

        def set_(vals):
            set_state(tuple(vals[:n]))
            for key, value in zip(self.keys, vals[n:]):
                obj, name, source = self.targets[key]
                if value is UNDEF:
                    self.ctx.fail("write-in-tf.cond", f"the sides of a tensor `if` leave `{source}` values janus cannot "
                                  "merge into one", "give it a tensor or number on both sides")
                heap.attrs[key] = [obj, name, value, source]
        return get, set_, tuple(names) + tuple(str(self.targets[k][2]) for k in self.keys)

    def after_side(self, which: bool):
        """Note which carried attributes the side just traced wrote."""
        heap = self.ctx.heap
        self.wrote[which] = {k for k in self.keys if k in heap.attrs and heap.attrs[k][2] is not self.before[k]}

    def settle(self, test):
        """After the `tf.cond`: an attribute only one side wrote, which the call had not written
        before (or had written only where an earlier tensor `if`'s side ran), is written back only
        where a writing side ran: the predicates are outputs of the graph."""
        ctx, heap = self.ctx, self.ctx.heap
        for key in self.keys:
            earlier = heap.cond_writes.get(key)
            if earlier is not None and earlier[0] is not self.before[key]:
                earlier = None                  # (written unconditionally since that `if`)
            if key in self.attrs_before and earlier is None:
                continue                        # written before the `if`: written whichever side runs
            value = heap.attrs[key][2]
            if key in self.wrote[True] and key in self.wrote[False]:
                heap.cond_writes.pop(key, None)
                continue
            if key not in self.wrote[True] and key not in self.wrote[False]:
                if earlier is not None:         # (the earlier `if`'s write passes through)
                    heap.cond_writes[key] = (value, earlier[1], earlier[2])
                continue
            if ctx.general_depth or ctx.in_machine or ctx.dry_run:
                if not isinstance(self.before[key], _NUMBERS):
                    ctx.fail("write-in-tf.cond", f"`{self.targets[key][2]}` is written on one side of a tensor `if` "
                             "inside another branch or loop: janus cannot leave the caller's object there",
                             "write it on both sides, or after the branch")
                continue
            if is_symbolic(value) or isinstance(value, PyNumber):
                ran = tf.cast(test, tf.bool)
                ran = ran if key in self.wrote[True] else tf.logical_not(ran)
                if earlier is not None:
                    ran = tf.logical_or(ran, earlier[1] if earlier[2] else tf.logical_not(earlier[1]))
                heap.cond_writes[key] = (value, ran, True)
