"""`d[n] = v` on an outside dict, where `n` is a Python number that varies between calls.

The idiom of a training loop: `self.losses[self.step] = loss; self.step += 1`, or
`log[len(log)] = y`.  The number is fed to the graph (`PyNumber`), so the build cannot
hash it, and specialising on its value builds a graph per call.  Instead the write is
deferred with its key: the graph hands the number out like any written value, and the
write-back assigns `d[key] = value` with the Python number itself, after the dict's other
writes of the call.  Python then decides what the key means (a new key, one already there,
`True` meeting `1`), as in eager.

The build does not know which item the write replaced, so from that write on the dict's
copy no longer holds what the call's dict holds: any later use of the copy (an item, its
length, iteration, a method, a print) stops the build, and janus specialises on the number
as before (`heap.Shadow.keyed`).  Only a plain `dict` outside the call, written where the
statement runs once per call (not inside a tensor `if` or loop, nor in a recursion machine),
takes a keyed write, and only with an int or bool key: a float key may be a NaN, which a dict
finds by the identity of the caller's object, and the write-back has an equal float, not it.
A list's item would need its bounds, which is not done.
"""
from __future__ import annotations

from codegen.operators.heap import Shadow
from codegen.operators.numbers import PyNumber


def keyed_write(ctx, sh: Shadow, key, value) -> bool:
    """Defer `copy[key] = value` with a varying Python number `key`; False where it cannot be."""
    if not isinstance(key, PyNumber) or key.ptype is float or key.computed or type(sh.copy) is not dict \
            or ctx.general_depth \
            or ctx.dry_run or ctx.in_machine or sh.fed:
        return False
    if not sh.keyed:
        sh.keyed_line = ctx.user_line()
    sh.keyed.append((key, value))
    return True


def no_keyed(sh: Shadow):
    """Stop the build where the call uses a dict again after a keyed write to it."""
    if sh.keyed:
        sh.keyed_use()
