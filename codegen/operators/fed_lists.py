"""Lists and tuples of tensors read from outside (a trainer's accumulated gradients,
`self.acc`; an LSTM's `(h, c)`), fed tensor by tensor.

An outside list is otherwise copied, and checked at entry by identity and, where the build read
what it holds, by its very items: a list the step replaces on every call (`self.acc = [a + g for
a in self.acc]`), or whose tensors change between calls, would build a graph per call.  A list
of 1 to `_MOST` eager tensors is read as a tuple of tensors is: each tensor fed on every call,
the entry guard checking that the value is a list of that many tensors of those dtypes and
shapes, and that it is no other list or dict the graph reads (`entry_guard`, ALIASING).

Its identity is checked as well where the build depends on it: the call writes into it (the
write-back changes the list the build saw), stores or returns it (it comes back as that
object), takes `is` or `id()` of it, or reaches it another way too (`writeback.plan`,
`identity_of`)."""
from __future__ import annotations

import dataclasses

import tensorflow as tf

from codegen.assumptions import Check, Kind
from codegen.operators import call_time
from codegen.operators.values import EAGER

_MOST = 16


def fed_list(ctx, access, holder, name, value, source, read):
    """The build's copy of the outside list `value` with its tensors fed (`read()` gives the
    list at call time), or None where it is not such a list or is already copied."""
    if not 0 < len(value) <= _MOST or any(type(v) is not EAGER for v in value) or \
            source in ctx.relaxed_state_lengths:        # (a list that grows between calls)
        return None
    heap = ctx.heap
    sh = heap.shadows.get(id(value))
    if sh is not None:              # (a second way to the same list: the two are checked by identity)
        sh.identity = True
        return None
    specs, fed = _fed_items(ctx, value, source, read)
    copy = heap.shadow(value, source, holder=(access, holder, name))
    sh = heap.by_copy[id(copy)]
    copy[:] = fed
    sh.snapshot, sh.fed = list(fed), True
    key = ("items", id(holder), name)
    if key not in ctx.checks:
        ctx.keep.append(holder)
        ctx.checks[key] = Check(Kind.LIST_TENSORS_MATCH, source, tuple(specs), holder, name, access)
    if source not in heap.reads:
        heap.reads.append(source)
    return copy


def fed_tuple(ctx, access, holder, name, value, source, read):
    """A tuple of tensors read from outside (an LSTM's `(h, c)`): each tensor fed fresh, the
    tuple's length, dtypes and shapes checked at entry."""
    heap = ctx.heap
    key = (access, id(holder), name)
    if key not in heap.fed:
        specs, fed = _fed_items(ctx, value, source, read)
        heap.fed[key] = tuple(fed)
        ctx.check(access, holder, name, value, source, kind=Kind.TENSORS_MATCH, expected=specs)
        if source not in heap.reads:
            heap.reads.append(source)
    return heap.fed[key]


def _fed_items(ctx, value, source, read) -> tuple[list, list]:
    """The (dtype, shape) of each tensor of `value`, a dim the state's relaxations name as None,
    and a placeholder feeding each (`read()[i]` at call time)."""
    specs, fed = [], []
    with ctx.outer_graph.as_default():
        for i, item in enumerate(value):
            shape = item.shape.as_list()
            for d in ctx.relaxed_state_dims.get(source.item(i), ()):
                if d < len(shape):
                    shape[d] = None
            specs.append((item.dtype, shape))
            fed.append(call_time.feed(ctx.outer_graph, lambda i=i: read()[i], tf.TensorSpec(shape, item.dtype),
                                      ctx.heap.fed_keys))
    return specs, fed


def identity_of(heap, *values):
    """`is` or `id()` taken of `values`: a fed list among them is checked by identity too."""
    for v in values:
        sh = heap.by_copy.get(id(v))
        if sh is not None:
            sh.identity = True


class FedSpecs(tuple):
    """The (dtype, shape) of a fed list's tensors; `others`: the lists and dicts the graph copies
    (as the very objects the entry guard keeps them), none of which the fed list may be."""
    others: tuple = ()


def check_identities(ctx, written: set):
    """The checks the fed lists need after the build (`written`: ids of the shadows the write-back
    changes): by identity where the build depends on it, else that the list is none of the other
    lists and dicts the graph copies (a list an outside dict holds, which the call appends to)."""
    shadows = ctx.heap.shadows.values()
    for sh in shadows:
        if not sh.fed:
            continue
        access, holder, name = sh.holder
        key = ("items", id(holder), name)
        if sh.identity or id(sh) in written or ctx.checks[key].kind is not Kind.LIST_TENSORS_MATCH:
            ctx.check(access, holder, name, sh.real, sh.source, kind=Kind.ID_MATCH, expected=sh.real)
            continue
        specs = FedSpecs(ctx.checks[key].expected)
        specs.others = tuple(o.real for o in shadows if not o.fed and o.real is not None)
        ctx.checks[key] = dataclasses.replace(ctx.checks[key], expected=specs)
