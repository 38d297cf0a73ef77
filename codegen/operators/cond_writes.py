"""Attributes of outside objects, and globals, a tensor `if` writes, carried through its `tf.cond`.

`if loss < self.best: self.best = loss; self.bad = 0` / `else: self.bad += 1` writes
attributes of an object from outside the call inside the sides of a `tf.cond` (`global count;
if y > 0: count += 1` writes a global there, carried the same way).  TensorFlow
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
from codegen.operators.state import ld_attr, read_outside
from codegen.operators.values import UNDEF, is_symbolic

_NUMBERS = (int, float, bool, PyNumber)
# Where each kind of deferred write lives in the heap, and the index of the value in its entry:
# attributes [obj, name, value, source]; globals and closure cells [holder, access, name, value, source].
STORES = {"attr": ("attrs", 2), "name": ("names", 3)}


def _entries(heap, store: str) -> dict:
    return getattr(heap, STORES[store][0])


def _value(entry: list, store: str):
    return entry[STORES[store][1]]


def _source(entry: list):
    return entry[-1]


def _read_before(entry: list, store: str):
    """The value an outside attribute or name has before the `if`, read as any outside read is."""
    if store == "attr":
        return ld_attr(entry[0], entry[1])
    holder, access, name = entry[0], entry[1], entry[2]
    if access == "closure":
        value = holder.cell_contents     # (ValueError for an empty cell: first set inside the `if`)
    else:
        value = holder[name]            # (KeyError: first set inside the `if`)
    return read_outside(access, holder, name, value, entry[-1])


class WritesInSide(Exception):
    """A side of a `tf.cond` wrote attributes or globals the `tf.cond` does not carry yet: it is
    traced again carrying them."""

    def __init__(self, entries: dict):
        super().__init__()
        self.entries = entries          # (store, heap key) -> a copy of its heap entry


class CondWrites:
    """The outside attributes and names one tensor `if` carries (see the module docstring).  A
    key is (store, the key of the heap's entry), `store` one of `STORES`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.before_heap = {store: dict(_entries(ctx.heap, store)) for store in STORES}
        self.keys: list = []
        self.targets: dict = {}         # key -> its heap entry, as the side wrote it
        self.before: dict = {}          # key -> its value before the `if`
        self.wrote = {True: set(), False: set()}

    def learn(self, exc: WritesInSide):
        """Carry the writes `exc` names; the abandoned trace's writes are undone."""
        for store in STORES:
            entries = _entries(self.ctx.heap, store)
            entries.clear()
            entries.update(self.before_heap[store])
        for key, entry in exc.entries.items():
            if key in self.targets:
                continue
            store, source = key[0], _source(entry)
            pending = self.before_heap[store].get(key[1])
            if pending is not None:
                value = _value(pending, store)
            else:
                try:
                    value = _read_before(entry, store)
                except (AttributeError, KeyError, ValueError):
                    self.ctx.fail("write-in-tf.cond", f"`{source}` is first set inside a tensor `if`: eager leaves "
                                  "it unset where the other side runs", "set it before the `if`")
            self.keys.append(key)
            self.targets[key] = entry
            self.before[key] = value

    def carry_new(self, before: tuple, now: tuple):
        """Raises `WritesInSide` with the attributes and names written since `before` (their
        keys -> id of the value, as `general._heap_state` gives them, one dict per store) that
        this `if` does not carry yet."""
        new = {}
        for i, store in enumerate(STORES):
            entries = _entries(self.ctx.heap, store)
            new.update({(store, k): list(entries[k]) for k, v in now[i].items()
                        if before[i].get(k) != v and (store, k) not in self.targets and k in entries})
        if new:
            raise WritesInSide(new)

    def _current(self, key):
        entry = _entries(self.ctx.heap, key[0]).get(key[1])
        return self.before[key] if entry is None else _value(entry, key[0])

    def wrap(self, get_state, set_state, names):
        """State accessors and names with the carried writes after the variables."""
        n = len(names)

        def get():
            return tuple(get_state()) + tuple(self._current(k) for k in self.keys)

        def set_(vals):
            set_state(tuple(vals[:n]))
            for key, value in zip(self.keys, vals[n:]):
                store, entry = key[0], list(self.targets[key])
                if value is UNDEF:
                    self.ctx.fail("write-in-tf.cond", f"the sides of a tensor `if` leave `{_source(entry)}` "
                                  "values janus cannot merge into one", "give it a tensor or number on both sides")
                entry[STORES[store][1]] = value
                _entries(self.ctx.heap, store)[key[1]] = entry
        return get, set_, tuple(names) + tuple(str(_source(self.targets[k])) for k in self.keys)

    def after_side(self, which: bool):
        """Note which carried writes the side just traced made."""
        self.wrote[which] = {k for k in self.keys if self._current(k) is not self.before[k]}

    def settle(self, test):
        """After the `tf.cond`: a write only one side made, which the call had not made before (or
        had made only where an earlier tensor `if`'s side ran), is written back only where a
        writing side ran: the predicates are outputs of the graph."""
        ctx, heap = self.ctx, self.ctx.heap
        for key in self.keys:
            earlier = heap.cond_writes.get(key)
            if earlier is not None and earlier[0] is not self.before[key]:
                earlier = None                  # (written unconditionally since that `if`)
            if key[1] in self.before_heap[key[0]] and earlier is None:
                continue                        # written before the `if`: written whichever side runs
            value = self._current(key)
            if key in self.wrote[True] and key in self.wrote[False]:
                heap.cond_writes.pop(key, None)
                continue
            if key not in self.wrote[True] and key not in self.wrote[False]:
                if earlier is not None:         # (the earlier `if`'s write passes through)
                    heap.cond_writes[key] = (value, earlier[1], earlier[2])
                continue
            if ctx.general_depth or ctx.in_machine or ctx.dry_run:
                if not isinstance(self.before[key], _NUMBERS):
                    ctx.fail("write-in-tf.cond", f"`{_source(self.targets[key])}` is written on one side of "
                             "a tensor `if` inside another branch or loop: janus cannot leave the caller's object "
                             "there", "write it on both sides, or after the branch")
                continue
            if is_symbolic(value) or isinstance(value, PyNumber):
                ran = tf.cast(test, tf.bool)
                ran = ran if key in self.wrote[True] else tf.logical_not(ran)
                if earlier is not None:
                    ran = tf.logical_or(ran, earlier[1] if earlier[2] else tf.logical_not(earlier[1]))
                heap.cond_writes[key] = (value, ran, True)
