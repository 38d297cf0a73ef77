"""How the call's arguments and effects enter a build: the containers among the arguments (so
their writes are deferred and written back to the caller's objects), and no variable made."""
from __future__ import annotations

import tensorflow as tf

from codegen.assumptions import Source
from codegen.operators.aliases import bound_container
from codegen.operators.arrays import PyArray
from codegen.operators.context import current
from codegen.operators.heap import Shadow


def no_new_variables(next_creator, **kwargs):
    """A variable the call creates is a new object on every call that reaches the code, while a
    graph would create one, once, when it is built, and hand it out again on every run: that
    call runs in Python."""
    current().fail("variable-creation", "the call creates a tf.Variable: eager makes a new one on every call that "
                   "gets there, a graph would reuse the one made when it was built",
                   "create the variable before calling the function, or on a call that runs in Python")


def register_argument_containers(heap, value, path):
    if isinstance(value, PyArray):      # (its tensor, taken out by an op that returns its input, is new)
        heap.arg_arrays[value.tensor.ref()] = path
        return
    if isinstance(value, tf.Tensor):
        heap.arg_tensors[value.ref()] = path      # passed through unchanged: the caller's own object
        return
    if bound_container(value) is not None:
        # `emit=LOG.append`: the container it is bound to is the caller's (its mutators stop the build)
        heap.outside.setdefault(id(value.__self__), _source(path).attr("__self__"))
        return
    if type(value) in (list, dict):
        heap.shadows[id(value)] = sh = _shadow_of_argument(value, path)
        heap.by_copy[id(value)] = sh
        items = enumerate(value) if type(value) is list else value.items()
        for k, v in items:
            register_argument_containers(heap, v, path + (k,))
    elif type(value) is tuple or (isinstance(value, tuple) and hasattr(type(value), "_fields")):
        heap.arg_tuples[id(value)] = path         # returned or stored, it is the caller's tuple
        for k, v in enumerate(value):
            register_argument_containers(heap, v, path + (k,))


def _shadow_of_argument(value, path):
    snapshot = list(value) if type(value) is list else dict(value)
    return Shadow(None, path, value, snapshot, _source(path))


def _source(path):
    source = Source.arg(path[1]) if path[0] == "args" else Source.kwarg(path[1])
    for key in path[2:]:
        source = source.item(key)
    return source
