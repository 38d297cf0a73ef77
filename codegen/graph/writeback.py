"""Turning the build's heap into graph outputs, and applying them after a run.

`plan(ctx, outputs)` runs at the end of a build: every deferred write becomes
an entry of the plan whose values are templates over graph outputs.
`apply(plan, outs, args, kwargs)` runs after the graph succeeded: it writes
the values to the real objects, containers in place (so a list the function
appended to is the same list object afterwards), and gives back Python
numbers where eager would have stored Python numbers.
"""
from __future__ import annotations

import collections.abc
import copy
import dataclasses
import types

import tensorflow as tf

from profiler.library import is_library_module

from codegen.errors import ConversionError, Reason, StagingError
from codegen.operators.heap import DELETED
from codegen.operators.arrays import NodeArray, PyArray, as_numpy
from codegen.operators.numbers import PyNumber
from codegen.operators.trees import Pointer
from codegen.operators.weak_numbers import WeakNumber
from codegen.operators.values import EitherKind, OutsideValue, Undefined, is_symbolic as _is_symbolic


def flatten(value, tensors: list, heap):
    """A template of `value`; symbolic tensors are appended to `tensors`."""
    sh = heap.by_copy.get(id(value)) if heap is not None else None
    if sh is not None:
        return ("real", sh)
    t = type(value)
    if t in (list, tuple):
        return (t.__name__, [flatten(v, tensors, heap) for v in value])
    if isinstance(value, tuple) and hasattr(t, "_fields"):
        return ("namedtuple", t, [flatten(v, tensors, heap) for v in value])
    if isinstance(value, (dict, list, tuple)) and t not in (dict, list, tuple):
        return _subclass(value, tensors, heap)
    if _made_by_the_build(value, heap):
        # An object the function created: eager returns a new one per call, holding values.
        heap.rebuilt.add(id(value))             # a cycle back to it stays this object
        return ("object", value, {k: flatten(v, tensors, heap) for k, v in vars(value).items()})
    if t is dict:
        return ("dict", list(value), [flatten(v, tensors, heap) for v in value.values()])
    if _is_symbolic(value) and heap is not None and value.ref() in heap.arg_tensors:
        return ("arg", heap.arg_tensors[value.ref()])
    if isinstance(value, tf.Variable):
        return ("const", value)                 # the variable itself (its parts are itself again)
    if isinstance(value, tf.__internal__.CompositeTensor):
        # SparseTensor, RaggedTensor, ...: its component tensors leave the graph, and the value
        # is packed again from them after the run.
        parts = tf.nest.flatten(value, expand_composites=True)
        return ("composite", value, [flatten(p, tensors, heap) for p in parts])
    if isinstance(value, NodeArray):
        _escapes(value)
    if isinstance(value, PyArray):
        if heap is not None and value.tensor.ref() in heap.arg_arrays:
            return ("arg", heap.arg_arrays[value.tensor.ref()])
        tensors.append(value.tensor)
        return ("tensor", len(tensors) - 1, as_numpy(value))    # a NumPy array (or scalar) again after the run
    if isinstance(value, PyNumber) or (isinstance(value, WeakNumber) and value.ptype is not None):
        tensors.append(value.tensor)
        return ("tensor", len(tensors) - 1, value.ptype)     # a Python number again after the run
    if isinstance(value, OutsideValue):                       # the graph has it only after its run
        value.refuse()
    if isinstance(value, EitherKind):                         # the run's bit says which
        tensors += [value.tensor, value.python]
        return ("either", len(tensors) - 2, value.ptype)
    if isinstance(value, (Pointer, WeakNumber)):
        _escapes(value)
    if _is_symbolic(value):
        tensors.append(value)
        return ("tensor", len(tensors) - 1, None)
    if isinstance(value, Undefined):
        raise StagingError(Reason("undefined-value", "", "a value written or returned is undefined on some path"))
    if _walks_build_values(value):
        raise ConversionError(Reason(
            "iterator-result", "", f"a {t.__name__} leaves the function (returned, stored, or handed to the Python "
            "after it): the one made while the graph was built would walk the build's values on every call",
            "make a list of it (list(...)) before it leaves"))
    return ("const", value)


def _walks_build_values(value) -> bool:
    """An iterator (a generator, `zip`, `map`, `iter(...)`) or a dict's view: an object that
    walks other values, which the graph cannot hand back, and which the build made (or reached:
    one of the caller's would be walked by the build, not by the call)."""
    t = type(value)
    if isinstance(value, (collections.abc.KeysView, collections.abc.ValuesView, collections.abc.ItemsView)):
        return True
    try:
        return hasattr(t, "__next__") and iter(value) is value
    except Exception:           # noqa: BLE001 - an object whose iter() fails walks nothing
        return False


def _subclass(value, tensors, heap):
    """A dict or list of a subclass (`OrderedDict`, `defaultdict`, a user's list type): a copy of
    it holds the values after the run, as eager's holds tensors; a tuple subclass, or one whose
    copy would not be the same kind of object, only when it holds no graph value."""
    parts = [flatten(v, tensors, heap) for v in value.values()] if isinstance(value, dict) else \
        [flatten(v, tensors, heap) for v in value]
    attrs_symbolic = _holds_symbolic(getattr(value, "__dict__", {}))
    if all(p[0] == "const" for p in parts) and not attrs_symbolic:
        return ("const", value)
    try:
        ok = not isinstance(value, tuple) and type(copy.copy(value)) is type(value)
    except Exception:           # noqa: BLE001 - any failure to copy means it cannot be rebuilt
        ok = False
    if not ok or attrs_symbolic:
        raise ConversionError(Reason("result-container", "", f"a {type(value).__name__} holding graph values "
                                     "leaves the function, and janus cannot make a new one holding their values",
                                     "return a dict, list or tuple"))
    return ("subclass", value, list(value) if isinstance(value, dict) else None, parts)


def _holds_symbolic(attrs: dict) -> bool:
    return any(_is_symbolic(v) for v in tf.nest.flatten(list(attrs.values())))


def _made_by_the_build(value, heap) -> bool:
    """A plain object (a dataclass or an instance of a user class) that did not come from
    outside the function: the builder made it while tracing."""
    if heap is None or id(value) in heap.outside or id(value) in heap.rebuilt or isinstance(value, (type, types.ModuleType, types.FunctionType,
                                                                          types.MethodType)):
        return False
    if not hasattr(value, "__dict__") or type(value).__dict__.get("__slots__"):
        return False
    return dataclasses.is_dataclass(value) or not is_library_module(type(value).__module__)


def resolve_path(path, args, kwargs):
    where, *rest = path
    value = args if where == "args" else kwargs
    for step in rest:
        value = value[step]
    return value


def resolve_real(sh, args, kwargs):
    if sh.real is not None:
        return sh.real
    where, *rest = sh.path
    value = args if where == "args" else kwargs
    for step in rest:
        value = value[step]
    return value


def unflatten(template, outs, args=(), kwargs=None):
    tag = template[0]
    if tag == "tensor":
        value = outs[template[1]]
        return template[2](value.numpy()) if template[2] is not None else value
    if tag == "const":
        return template[1]
    if tag == "either":
        value = outs[template[1]]
        return template[2](value.numpy()) if outs[template[1] + 1].numpy() else value
    if tag == "namedtuple":
        return template[1](*(unflatten(t, outs, args, kwargs) for t in template[2]))
    if tag == "subclass":
        new, keys = copy.copy(template[1]), template[2]
        values = [unflatten(t, outs, args, kwargs) for t in template[3]]
        if keys is None:
            new[:] = values
        else:
            new.clear()
            new.update(zip(keys, values))
        return new
    if tag == "object":
        new = copy.copy(template[1])
        vars(new).update({k: unflatten(t, outs, args, kwargs) for k, t in template[2].items()})
        return new
    if tag == "composite":
        parts = [unflatten(t, outs, args, kwargs) for t in template[2]]
        return tf.nest.pack_sequence_as(template[1], parts, expand_composites=True)
    if tag == "real":
        return resolve_real(template[1], args, kwargs)
    if tag == "arg":
        return resolve_path(template[1], args, kwargs)
    if tag == "list":
        return [unflatten(t, outs, args, kwargs) for t in template[1]]
    if tag == "tuple":
        return tuple(unflatten(t, outs, args, kwargs) for t in template[1])
    return {k: unflatten(t, outs, args, kwargs) for k, t in zip(template[1], template[2])}


def plan(ctx, tensors: list) -> list:
    heap = ctx.heap
    out = []
    for sh in list(heap.shadows.values()):
        if (sh.read or sh.mutated) and sh.holder is not None:
            # The write-back is the difference from the contents the build saw: the call must
            # start from them (a mutation other than appends and item assignments depends on them).
            ctx.check_items(sh)
        elif sh.length_read and sh.holder is not None and sh.source not in ctx.relaxed_state_lengths:
            ctx.check_length(sh)
        copy, snap = sh.copy, sh.snapshot
        if type(copy) is list:
            prefix = len(copy) >= len(snap) and all(a is b for a, b in zip(copy, snap))
            if prefix and len(copy) == len(snap):
                continue
            if prefix and not sh.read:
                out.append(("extend", sh, flatten(copy[len(snap):], tensors, heap)))
            else:
                if sh.holder is not None:
                    ctx.check_items(sh)        # the new contents depend on the old ones
                out.append(("replace", sh, flatten(list(copy), tensors, heap)))
        else:
            changed = [k for k in copy if k not in snap or copy[k] is not snap[k] or k in sh.assigned]
            deleted = [k for k in snap if k not in copy]
            if changed or deleted:
                out.append(("dict", sh, {k: flatten(copy[k], tensors, heap) for k in changed},
                            deleted))
    for obj, name, value, source in heap.attrs.values():
        template = ("deleted",) if value is DELETED else flatten(value, tensors, heap)
        out.append(("attr", obj, name, template))
    for holder, access, name, value, source in heap.names.values():
        template = ("deleted",) if value is DELETED else flatten(value, tensors, heap)
        out.append((access, holder, name, template))
    return out


def apply(plan_entries, outs, args, kwargs):
    for entry in plan_entries:
        kind = entry[0]
        if kind == "extend":
            resolve_real(entry[1], args, kwargs).extend(unflatten(entry[2], outs, args, kwargs))
        elif kind == "replace":
            resolve_real(entry[1], args, kwargs)[:] = unflatten(entry[2], outs, args, kwargs)
        elif kind == "dict":
            real = resolve_real(entry[1], args, kwargs)
            for k, t in entry[2].items():
                real[k] = unflatten(t, outs, args, kwargs)
            for k in entry[3]:
                real.pop(k, None)
    for entry in plan_entries:
        kind = entry[0]
        if kind in ("extend", "replace", "dict"):
            continue
        _, holder, name, template = entry
        if kind == "attr":
            if template[0] == "deleted":
                delattr(holder, name)
            else:
                setattr(holder, name, unflatten(template, outs, args, kwargs))
        elif kind == "global":
            if template[0] == "deleted":
                del holder[name]
            else:
                holder[name] = unflatten(template, outs, args, kwargs)
        else:
            if template[0] == "deleted":
                del holder.cell_contents
            else:
                holder.cell_contents = unflatten(template, outs, args, kwargs)


def _escapes(value):
    raise ConversionError(Reason(
        "tree-value-escapes", "",
        "a tree node" + ("" if isinstance(value, Pointer) else " attribute") + " read inside the graph "
        "leaves the function (returned or stored): janus cannot hand back the Python object it stands for",
        "return or store a tensor computed from it (or keep the node out of the speculated function)"))
