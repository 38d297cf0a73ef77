"""Turning the build's heap into graph outputs, and applying them after a run.

`plan(ctx, outputs)` runs at the end of a build: every deferred write becomes
an entry of the plan whose values are templates over graph outputs.
`apply(plan, outs, args, kwargs, made)` runs after the graph succeeded: it
writes the values to the real objects, containers in place (so a list the
function appended to is the same list object afterwards), and gives back
Python numbers where eager would have stored Python numbers.

One object stays one object: `flatten` gives an object it meets again (in the
result, in a write, or inside itself) the template it gave the first time,
`share` marks such templates, and `unflatten` makes one object for all the
places of a marked template within one call (`made` holds them).
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import types

import numpy as np

import tensorflow as tf

from profiler.library import is_library_module

from codegen.assumptions import held
from codegen.errors import ConversionError, Reason, StagingError
from codegen.operators.fed_lists import check_identities
from codegen.operators.heap import DELETED
from codegen.operators import call_time
from codegen.operators.object_access import object_attrs, set_attrs as _set_attrs, slots as _slots
from codegen.operators.arrays import NodeArray, PyArray, as_numpy
from codegen.operators.numbers import PyNumber
from codegen.operators.trees import Pointer
from codegen.operators.weak_numbers import WeakNumber
from codegen.operators.values import (BUILDER_CODE, DICT_VIEWS, EitherKind, OutsideValue, Undefined, is_iterator,
                                      is_symbolic as _is_symbolic)


_ATOMS = (int, float, str, bool, type(None), bytes)


def flatten(value, tensors: list, heap):
    """A template of `value`; symbolic tensors are appended to `tensors`.  A value met before in
    this build gets the template it got then (so it comes back as one object)."""
    if heap is None:
        return _flatten(value, tensors, heap)
    sh = heap.by_copy.get(id(value))
    if sh is not None:
        sh.identity = True              # (it comes back as the user's list: `fed_lists`)
        return ("real", sh)
    if type(value) in _ATOMS:
        return ("const", value)
    seen = heap.flat.get(id(value))
    if seen is not None:
        return seen[1]
    template = _flatten(value, tensors, heap)
    heap.flat[id(value)] = (value, template)        # (kept alive: its id stays its own)
    return template


def _callers_tensor(value, tensors: list, heap):
    """The template of a graph tensor that stands for a tensor of the caller's: an argument, an
    outside tensor fed fresh, or the argument a tensor `if` chose; else None."""
    ref = value.ref()
    if ref in heap.arg_tensors:
        return ("arg", heap.arg_tensors[ref])
    if ref in heap.fed_keys:
        tensors.append(value)                           # the caller's own tensor, read fresh: itself again
        heap.fed_keys[ref].returned = True
        return ("fed", heap.fed_keys[ref], len(tensors) - 1)
    if ref in heap.arg_choices:
        test, if_true, if_false = heap.arg_choices[ref]
        for path in (if_true, if_false):
            if path is not None and path[0] == "fed":
                path[1].returned = True
        tensors += [value, test]
        return ("arg-or", len(tensors) - 2, if_true, if_false)
    return None


def _graph_only(value, heap):
    """The template of a value only the graph has, which eager gives otherwise: an op with no
    output is None (`tf.group`, `assert_*`, `assign(read_value=False)`); a dataset or a tape the
    call made stops the build (the call runs in Python).  None for anything else."""
    if isinstance(value, tf.Operation):
        graph, building = value.graph, tf.compat.v1.get_default_graph()
        while graph is not None and graph is not building:
            graph = getattr(graph, "outer_graph", None)
        return ("const", None) if graph is building else None
    if isinstance(value, tf.data.Dataset):
        raise ConversionError(Reason(
            "dataset-leaves", "", f"a {type(value).__name__} made in the graph leaves the function (returned or "
            "stored): packed again from the graph's output it would be another class (TensorFlow's variant "
            "dataset), whose type and repr differ from eager's", "build the dataset outside the speculated function"))
    if heap is None or id(value) not in heap.outside:
        raise ConversionError(Reason(
            "tape-leaves", "", "a GradientTape made in the call leaves the function (returned or stored): it "
            "recorded the graph's trace, not the run, so its gradients after the call would be None",
            "take the gradients inside the function"))
    return None


def _entered(heap, value, template):
    """`template`, registered for `value` before its parts are flattened (a part that leads back
    to `value` gets this same template)."""
    if heap is not None:
        heap.flat[id(value)] = (value, template)
    return template


def _flatten(value, tensors: list, heap):
    t = type(value)
    if isinstance(value, tuple) and heap is not None and id(value) in heap.arg_tuples:
        return ("arg", heap.arg_tuples[id(value)])         # the caller's own tuple
    if t in (list, tuple):
        parts = []
        template = _entered(heap, value, (t.__name__, parts))
        parts += [flatten(v, tensors, heap) for v in value]
        return template
    if isinstance(value, tuple) and hasattr(t, "_fields"):
        return ("namedtuple", t, [flatten(v, tensors, heap) for v in value])
    if isinstance(value, (dict, list, tuple)) and t not in (dict, list, tuple):
        return _subclass(value, tensors, heap)
    if isinstance(value, (tf.GradientTape, tf.data.Dataset, tf.Operation)) and (found := _graph_only(value, heap)):
        return found
    if _made_by_the_build(value, heap):
        # An object the function created: eager returns a new one per call, holding values.
        attrs = {}
        template = _entered(heap, value, ("object", value, attrs))
        attrs.update((k, flatten(v, tensors, heap)) for k, v in object_attrs(value).items())
        return template
    if t is dict:
        parts = []
        template = _entered(heap, value, ("dict", list(value), parts))
        parts += [flatten(v, tensors, heap) for v in value.values()]
        return template
    if _is_symbolic(value) and heap is not None and (found := _callers_tensor(value, tensors, heap)) is not None:
        return found
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
    if heap is not None and id(value) not in heap.outside:
        if callable(value) and not isinstance(value, (type, np.ufunc)):
            return _callable(value, tensors, heap)
        if t in (set, collections.deque):       # made by the function: a new one per call, as eager's
            return ("collection", value, [flatten(v, tensors, heap) for v in value])
        if t is types.SimpleNamespace:          # attributes only: a copy holds the run's values
            attrs = {}
            template = _entered(heap, value, ("object", value, attrs))
            attrs.update((k, flatten(v, tensors, heap)) for k, v in vars(value).items())
            return template
        if _holds_graph_values(object_attrs(value)):
            raise ConversionError(Reason("result-container", "", f"a {t.__name__} the function made holds graph "
                                         "values, and janus cannot make a new one holding their values",
                                         "return a dict, list or tuple"))
    return ("const", value)


def _callable(value, tensors, heap):
    """A function or method leaving the graph that janus did not read from outside.  One the
    function made (a nested `def` or lambda, whose cells hold the build's values; a
    `functools.partial`; a library's callable object) would be the build's on every call: that
    code runs in Python.  A method of an object the graph rebuilds is bound to the new object."""
    if isinstance(value, types.FunctionType):
        if value.__code__ not in BUILDER_CODE:
            return ("const", value)             # a module's function, the caller's callback
    elif isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        owner, func = value.__self__, getattr(value, "__func__", None)
        if owner is None or isinstance(owner, (type, types.ModuleType)) or id(owner) in heap.outside:
            return ("const", value)             # `len`, a class method, a method of an outside object
        if getattr(func, "__code__", None) not in BUILDER_CODE and getattr(owner, value.__name__, None) == value:
            owner_t = flatten(owner, tensors, heap)
            return ("const", value) if owner_t[0] == "const" else ("method", value.__name__, owner_t)
    raise ConversionError(Reason(
        "function-result", "", f"a {type(value).__name__} made in the function leaves it (returned, stored, or "
        "handed to the Python after it): the one made while the graph was built would hold the build's values "
        "and be the same object on every call"))


def _walks_build_values(value) -> bool:
    """An iterator (a generator, `zip`, `map`, `iter(...)`) or a dict's view: an object that
    walks other values, which the graph cannot hand back, and which the build made (or reached:
    one of the caller's would be walked by the build, not by the call)."""
    return isinstance(value, DICT_VIEWS) or is_iterator(value)


def _subclass(value, tensors, heap):
    """A dict or list of a subclass (`OrderedDict`, `defaultdict`, a user's list type): a copy of
    it holds the values after the run, as eager's holds tensors; a tuple subclass, or one whose
    copy would not be the same kind of object, only when it holds no graph value."""
    parts = [flatten(v, tensors, heap) for v in value.values()] if isinstance(value, dict) else \
        [flatten(v, tensors, heap) for v in value]
    attrs_symbolic = _holds_symbolic(getattr(value, "__dict__", {}))
    if flatten(getattr(value, "default_factory", None), tensors, heap)[0] != "const":    # (its lambda, the build's)
        raise ConversionError(Reason("function-result", "", "a defaultdict's factory the function made leaves it"))
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


def _holds_graph_values(attrs: dict) -> bool:
    """Whether attributes hold a graph tensor, or a number or array that stands for one."""
    return any(_is_symbolic(v) or isinstance(v, (WeakNumber, PyNumber, PyArray, EitherKind))
               for v in tf.nest.flatten(list(attrs.values())))


def _made_by_the_build(value, heap) -> bool:
    """A plain object (a dataclass or an instance of a user class) that did not come from
    outside the function: the builder made it while tracing."""
    if heap is None or id(value) in heap.outside or isinstance(value, (type, types.ModuleType, types.FunctionType,
                                                                       types.MethodType)):
        return False
    if not hasattr(value, "__dict__") and not _slots(type(value)):
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
        return held(sh.real)
    where, *rest = sh.path
    value = args if where == "args" else kwargs
    for step in rest:
        value = value[step]
    return value


def unflatten(template, outs, args=(), kwargs=None, made=None):
    """The value of `template` after a run; `made` (one dict per call) holds the objects made for
    shared templates, so each is made once."""
    tag = template[0]
    if tag == "tensor":
        value = outs[template[1]]
        return template[2](value.numpy()) if template[2] is not None else value
    if tag == "const":
        return held(template[1])
    if tag == "either":
        value = outs[template[1]]
        return template[2](value.numpy()) if outs[template[1] + 1].numpy() else value
    if tag == "namedtuple":
        return template[1](*(unflatten(t, outs, args, kwargs, made) for t in template[2]))
    if tag == "subclass":
        new = copy.copy(template[1])
        _fill_subclass(new, template, [unflatten(t, outs, args, kwargs, made) for t in template[3]])
        return new
    if tag == "object":
        new = copy.copy(template[1])
        _set_attrs(new, {k: unflatten(t, outs, args, kwargs, made) for k, t in template[2].items()})
        return new
    if tag == "composite":
        parts = [unflatten(t, outs, args, kwargs, made) for t in template[2]]
        return tf.nest.pack_sequence_as(template[1], parts, expand_composites=True)
    if tag == "real":
        return resolve_real(template[1], args, kwargs)
    if tag == "arg":
        return resolve_path(template[1], args, kwargs)
    if tag == "fed":
        return _fed(template[1], outs[template[2]], made)
    if tag == "arg-or":            # the argument the predicate chose, or the tensor the other side made
        path = template[2] if outs[template[1] + 1].numpy() else template[3]
        if path is not None and path[0] == "fed":
            return _fed(path[1], outs[template[1]], made)
        return outs[template[1]] if path is None else resolve_path(path, args, kwargs)
    if tag == "list":
        return [unflatten(t, outs, args, kwargs, made) for t in template[1]]
    if tag == "tuple":
        return tuple(unflatten(t, outs, args, kwargs, made) for t in template[1])
    if tag == "shared":
        value = made.get(template[1], made)
        return _make_shared(template, outs, args, kwargs, made) if value is made else value
    if tag == "method":
        return getattr(unflatten(template[2], outs, args, kwargs, made), template[1])
    if tag == "collection":
        new = copy.copy(template[1])
        new.clear()
        (new.extend if type(new) is collections.deque else new.update)(
            unflatten(t, outs, args, kwargs, made) for t in template[2])
        return new
    return {k: unflatten(t, outs, args, kwargs, made) for k, t in zip(template[1], template[2])}


def _fed(key, output, made):
    """The caller's own tensor fed for `key` (`call_time.fed_value`), taken once per call: the
    same value in two places is one object."""
    if made is None:
        return call_time.fed_value(key, output)
    if key not in made:
        made[key] = call_time.fed_value(key, output)
    return made[key]


def _fill_subclass(new, template, values):
    if template[2] is None:
        new[:] = values
    else:
        new.clear()
        store = _library_base(type(new)).__setitem__    # (`Counter.update` would count the pairs)
        for k, v in zip(template[2], values):
            store(new, k, v)


def _library_base(t: type) -> type:
    """The first class of `t`'s bases that Python or its library defines (a subclass's own
    `__setitem__` already ran in the build, on the values it stored)."""
    return next(b for b in t.__mro__ if b.__module__ in ("builtins", "collections"))


def _make_shared(template, outs, args, kwargs, made):
    """The one object of a shared template; a container is registered in `made` before its parts
    are made, so a part leading back to it (a cycle) is this very object."""
    slot, inner = template[1], template[2][0]
    tag = inner[0]
    if tag == "list":
        new = made[slot] = []
        new += [unflatten(t, outs, args, kwargs, made) for t in inner[1]]
    elif tag == "dict":
        new = made[slot] = {}
        values = [unflatten(t, outs, args, kwargs, made) for t in inner[2]]
        new.update(zip(inner[1], values))
    elif tag == "object":
        new = made[slot] = copy.copy(inner[1])
        _set_attrs(new, {k: unflatten(t, outs, args, kwargs, made) for k, t in inner[2].items()})
    elif tag == "subclass":
        new = made[slot] = copy.copy(inner[1])
        new.clear()
        _fill_subclass(new, inner, [unflatten(t, outs, args, kwargs, made) for t in inner[3]])
    else:      # (a tuple in a cycle is made inside it first: that one is kept)
        new = made.setdefault(slot, unflatten(inner, outs, args, kwargs, made))
    return new


def plan(ctx, tensors: list) -> list:
    heap = ctx.heap
    out = []
    for sh in list(heap.shadows.values()):
        if sh.fed:
            pass                        # (its tensors are fed; `fed_lists` checks what else it needs)
        elif (sh.read or sh.mutated) and sh.holder is not None:
            # The write-back is the difference from the contents the build saw: the call must
            # start from them (a mutation other than appends and item assignments depends on them).
            ctx.check_items(sh)
        elif sh.length_read and sh.holder is not None and sh.source not in ctx.relaxed_state_lengths:
            ctx.check_length(sh)
        copy, snap = sh.copy, sh.snapshot
        if type(copy) is list:
            same = [heap.real_of(a) is b for a, b in zip(copy, snap)]
            prefix = len(copy) >= len(snap) and all(same)
            if prefix and len(copy) == len(snap):
                continue
            if prefix and not sh.read:
                out.append(("extend", sh, flatten(copy[len(snap):], tensors, heap)))
            elif len(copy) >= len(snap) and not (sh.read or sh.mutated) and all(
                    kept or i in sh.assigned for i, kept in enumerate(same)):
                # Items assigned by index (and appends): written back by index, at the same length.
                if sh.holder is not None and not sh.fed:
                    ctx.check_length(sh)
                out.append(("dict", sh, {i: flatten(copy[i], tensors, heap) for i, kept in enumerate(same)
                                         if not kept}, []))
                if len(copy) > len(snap):
                    out.append(("extend", sh, flatten(copy[len(snap):], tensors, heap)))
            else:
                if sh.holder is not None and not sh.fed:
                    ctx.check_items(sh)        # the new contents depend on the old ones
                out.append(("replace", sh, flatten(list(copy), tensors, heap)))
        else:
            changed = [k for k in copy if k not in snap or heap.real_of(copy[k]) is not snap[k] or k in sh.assigned]
            deleted = [k for k in snap if k not in copy]
            if changed or deleted:
                out.append(("dict", sh, {k: flatten(copy[k], tensors, heap) for k in changed},
                            deleted))
            if sh.keyed:                # (after the dict's other writes: the copy saw none after it)
                out.append(("keyed", sh, [(flatten(k, tensors, heap), flatten(v, tensors, heap))
                                          for k, v in sh.keyed]))
    for key, (obj, name, value, source) in heap.attrs.items():
        template = ("deleted",) if value is DELETED else flatten(value, tensors, heap)
        out.append(_maybe_if(heap, tensors, ("attr", key), value, ("attr", obj, name, template)))
    for key, (holder, access, name, value, source) in heap.names.items():
        template = ("deleted",) if value is DELETED else flatten(value, tensors, heap)
        out.append(_maybe_if(heap, tensors, ("name", key), value, (access, holder, name, template)))
    check_identities(ctx, {id(entry[1]) for entry in out if entry[0] in _CONTAINER_WRITES})
    return out


_CONTAINER_WRITES = ("extend", "replace", "dict", "keyed")


def _maybe_if(heap, tensors, key, value, entry):
    """The write-back `entry`, or, for a write one side of a tensor `if` made, the entry that
    makes it only where the predicate took that side (`cond_writes`)."""
    written = heap.cond_writes.get(key)
    if written is None or written[0] is not value:
        return entry
    tensors.append(written[1])
    return (entry[0] + "-if", entry[1], entry[2], (len(tensors) - 1, written[2]), entry[3])


def apply(plan_entries, outs, args, kwargs, made):
    for entry in plan_entries:
        kind = entry[0]
        if kind == "extend":
            resolve_real(entry[1], args, kwargs).extend(unflatten(entry[2], outs, args, kwargs, made))
        elif kind == "replace":
            resolve_real(entry[1], args, kwargs)[:] = unflatten(entry[2], outs, args, kwargs, made)
        elif kind == "dict":
            real = resolve_real(entry[1], args, kwargs)
            for k, t in entry[2].items():
                real[k] = unflatten(t, outs, args, kwargs, made)
            for k in entry[3]:
                real.pop(k, None)
        elif kind == "keyed":
            real = resolve_real(entry[1], args, kwargs)
            for k, t in entry[2]:
                real[unflatten(k, outs, args, kwargs, made)] = unflatten(t, outs, args, kwargs, made)
    for entry in plan_entries:
        kind = entry[0]
        if kind in _CONTAINER_WRITES:
            continue
        holder, name, template = held(entry[1]), entry[2], entry[-1]
        if kind.endswith("-if"):
            at, side = entry[3]
            if bool(outs[at]) != side:
                continue                        # the side that leaves the caller's object ran
            kind = kind[:-len("-if")]
        if kind == "attr":
            if template[0] == "deleted":
                delattr(holder, name)
            else:
                setattr(holder, name, unflatten(template, outs, args, kwargs, made))
        elif kind == "global":
            if template[0] == "deleted":
                del holder[name]
            else:
                holder[name] = unflatten(template, outs, args, kwargs, made)
        else:
            if template[0] == "deleted":
                del holder.cell_contents
            else:
                holder.cell_contents = unflatten(template, outs, args, kwargs, made)


def _escapes(value):
    raise ConversionError(Reason(
        "tree-value-escapes", "",
        "a tree node" + ("" if isinstance(value, Pointer) else " attribute") + " read inside the graph "
        "leaves the function (returned or stored): janus cannot hand back the Python object it stands for",
        "return or store a tensor computed from it (or keep the node out of the speculated function)"))
