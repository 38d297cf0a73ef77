"""State operators: reads and deferred writes of outside Python state.

Reads of outside objects (from the arguments, globals and closures) go through `read_outside`:
tensors are fed fresh on every call, Python values are entry-checked, and lists and dicts are
replaced by *copies* the builder may mutate.  Writes (`st_attr`, `st_item`, `st_name`, `del_*`)
go to the build's `Heap`; `codegen.graph.writeback` plans what to apply to the real objects once
the graph has finished and every guard passed: nothing is written to them during a run."""
from __future__ import annotations

import builtins
import dataclasses
import inspect
import operator
import types

import numpy as np
import tensorflow as tf

from profiler.library import is_library_module

from codegen.assumptions import NUMPY_SCALARS, SCALARS, Kind, Source, check_kind, scalar_dtype, subnormal
from codegen.errors import ConversionError, Reason
from codegen.operators.context import active, current
from codegen.operators.failing_ops import calls_python
from codegen.operators.aliases import (CONTAINERS, appended_item, assign_item, bound_container, check_key, held_item,
                                      item_fed, no_tuple_of_containers, note_absent, outside_copy, own_item, proxied,
                                      written_on_class)
from codegen.operators.fed_lists import fed_list, fed_tuple
from codegen.operators.library_settings import check_settings, no_stale_reads
from codegen.operators.heap import DELETED
from codegen.operators.keyed_writes import keyed_write, no_keyed
from codegen.operators.arrays import PyArray
from codegen.operators.bound_methods import made_per_read, read_method
from codegen.operators.numbers import PyNumber
from codegen.operators.printing import not_printed
from codegen.operators.write_refusals import library_setter, refuse, no_write_in_machine, refusal
from codegen.operators.shapes import guarded
from codegen.operators.node_classes import NodeClass
from codegen.operators.trees import Pointer
from codegen.operators import call_time, unchanged
from codegen.operators.dunders import read_operands
from codegen.operators.outside_access import outside_reader, outside_writer
from codegen.operators.values import EAGER, builders_own_cell, is_symbolic, lexical, user_globals, user_module


def _note(lst, source):
    if source not in lst:
        lst.append(source)


def st_attr(obj, name, value):
    ctx = current()
    source = ctx.outside.get(id(obj))
    not_printed(ctx, obj, source)
    if source is None:                       # an object made while building: plain Python
        setattr(obj, name, value)
        return
    no_write_in_machine(ctx, source.attr(name))
    reason = refusal(obj, name, "attr")
    if reason and not library_setter(ctx, obj, name, value, source):
        refuse(reason, source.attr(name))
    if reason:
        _note(ctx.heap.writes, source.attr(name))   # (done by the library's setter: ops in the graph)
        return
    ctx.heap.attrs[(id(obj), name)] = [obj, name, value, source.attr(name)]
    _note(ctx.heap.writes, source.attr(name))


def del_attr(obj, name):
    ctx = current()
    not_printed(ctx, obj, ctx.outside.get(id(obj)))
    if ctx.outside.get(id(obj)) is None:
        delattr(obj, name)
        return
    ld_attr(obj, name)                       # raises AttributeError as eager would
    st_attr(obj, name, DELETED)


def ld_item(obj, key):
    ctx = current()
    sh = ctx.heap.by_copy.get(id(obj))
    if sh is None and id(obj) in ctx.outside and isinstance(obj, CONTAINERS):
        check_key(ctx, obj, key)            # (an `OrderedDict`, a `defaultdict`: `aliases`)
        return read_outside("item", obj, key, obj[key], ctx.outside[id(obj)].item(key))
    if sh is not None:
        no_keyed(sh)
    value = obj[key]
    if sh is not None:
        if item_fed(ctx, sh, obj, key, value):
            return read_outside("item", sh.real, key, sh.snapshot[key], sh.source.item(key))
        if not appended_item(sh, obj, key) and not own_item(sh, obj, key):
            sh.read = True
        value = held_item(ctx, sh, key, value)
    return value


def _container_write(obj):
    ctx = current()
    if id(obj) in ctx.heap.by_copy:
        return
    source = ctx.outside.get(id(obj))
    if source is not None:
        reason = refusal(obj, None, "item") or f"{type(obj).__name__} objects are not copied for deferred writes"
        refuse(reason, source.any_item())


def st_item(obj, key, value):
    _container_write(obj)
    sh = current().heap.by_copy.get(id(obj))
    not_printed(current(), obj, sh.source if sh is not None else None)
    if sh is not None:
        no_write_in_machine(current(), sh.source)
        if keyed_write(current(), sh, key, value):
            _note(current().heap.writes, sh.source.any_item())
            return
        no_keyed(sh)
        _note(current().heap.writes, sh.source.item(key) if not hasattr(key, "dtype") else sh.source.any_item())
        if hasattr(key, "dtype") or not assign_item(sh, obj, key):
            sh.mutated = True           # `lst[a:b] = v` needs the list the build saw
    obj[key] = value


def del_item(obj, key):
    _container_write(obj)
    sh = current().heap.by_copy.get(id(obj))
    if sh is not None:
        no_write_in_machine(current(), sh.source)
        sh.mutated = True
    del obj[key]


def _name_holder(name):
    ctx = current()
    fn = lexical(ctx.frame.converted.fn, name)
    if name in fn.__code__.co_freevars:
        return "closure", fn.__closure__[fn.__code__.co_freevars.index(name)], Source.closure(fn.__qualname__, name)
    return "global", user_globals(fn), Source.global_name(user_module(fn), name)


def st_name(name, value):
    ctx = current()
    cell = builders_own_cell(ctx.frame.converted.fn, name)
    if cell is not None:
        if ctx.general_depth and not ctx.dry_run:
            # (a nested helper's `nonlocal` write inside a tf.cond side, a loop body or a function
            # TensorFlow traces happens once per trace, not once per side taken or round)
            ctx.fail("write-in-tf.cond", f"`{name}`, a variable of an enclosing function, is rebound by a nested "
                     "function inside a tensor `if`, a tensor loop or a function TensorFlow traces",
                     "return the new value from the nested function and assign it")
        if value is DELETED:
            del cell.cell_contents
        else:
            cell.cell_contents = value
        return
    access, holder, source = _name_holder(name)
    no_write_in_machine(ctx, source)
    ctx.heap.names[(id(holder), name)] = [holder, access, name, value, source]
    _note(ctx.heap.writes, source)


def del_name(name):
    ld(name)
    st_name(name, DELETED)


_INPLACE = {"add": operator.iadd, "sub": operator.isub, "mult": operator.imul, "div": operator.itruediv,
            "floordiv": operator.ifloordiv, "mod": operator.imod, "pow": operator.ipow,
            "matmult": operator.imatmul, "bitand": operator.iand, "bitor": operator.ior,
            "bitxor": operator.ixor, "lshift": operator.ilshift, "rshift": operator.irshift}


def inplace(op, current_value, value):
    """`a <op>= b`: on the build's copy of an outside list or dict, a change the write-back makes
    (only `lst += items` appends, whatever the list held): the others depend on what it holds."""
    ctx = active()
    sh = ctx.heap.by_copy.get(id(current_value)) if ctx is not None else None
    if sh is not None:
        no_write_in_machine(ctx, sh.source)
        not_printed(ctx, current_value, sh.source)
        _note(ctx.heap.writes, sh.source)
        if not (op == "add" and type(current_value) is list):
            sh.mutated = True
    read_operands(value)
    return _INPLACE[op](current_value, value)


# -- reads of outside values -----------------------------------------------------------------
def _outside_array(ctx, access, holder, name, value, source):
    """An outside NumPy array of numbers, fed per call; any other stops the build (its items would
    be read once, by the build): the statement runs in Python."""
    if type(value) is np.ndarray and value.dtype.kind in "biuf":
        return PyArray(_fed(ctx, access, holder, name, value, source, Kind.ARRAY_MATCH))
    raise ConversionError(Reason("numpy-array", ctx.user_line(), f"{source} is a NumPy array of dtype {value.dtype}, "
                                 "which the graph does not feed: the statement runs in Python",
                                 "keep numbers in an array of a numeric dtype, or in a tensor"))


def _fed(ctx, access, holder, name, value, source, kind):
    """An outside tensor (or NumPy array) read by the build: a graph input read fresh on every
    call, with an entry check on its dtype and shape."""
    if kind is Kind.TENSOR_MATCH and value.dtype == tf.resource:    # a handle (`v.handle`, a table's): the
        ctx.check(access, holder, name, value, source, kind=Kind.ID_MATCH, expected=value)   # tensor TensorFlow
        ctx.raw_handles.append(value)           # captures for the object's own ops, one input ordered with them
        return value
    heap = ctx.heap
    key = (access, id(holder), name)
    if key not in heap.fed:
        shape = list(value.shape) if kind is Kind.ARRAY_MATCH else (
            value.shape.as_list() if value.shape.rank is not None else None)
        for d in (d for d in ctx.relaxed_state_dims.get(source, ()) if shape is not None and d < len(shape)):
            shape[d] = None
        dtype = tf.as_dtype(value.dtype)
        read = outside_reader(access, holder, name)
        if kind is Kind.ARRAY_MATCH:
            read = (lambda r: lambda: tf.convert_to_tensor(r(), dtype))(read)
        graph = ctx.outer_graph
        with graph.as_default():
            heap.fed[key] = call_time.feed(graph, read, tf.TensorSpec(shape, dtype),
                                           heap.fed_keys if kind is Kind.TENSOR_MATCH else None)
        expected = (value.dtype, shape)
        ctx.check(access, holder, name, value, source, kind=kind, expected=expected)
        _note(heap.reads, source)
    return heap.fed[key]


_CODE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)


def calls_python_so_far(ctx) -> bool:
    """Whether the graph built so far holds an op that calls Python (`tf.numpy_function`); scans
    each graph's new ops only."""
    for graph in {id(g): g for g in (ctx.outer_graph, tf.compat.v1.get_default_graph()) if g is not None}.values():
        scanned, found = ctx.python_scan.get(id(graph), (0, False))
        if not found:
            ops = graph.get_operations()
            memo: dict = {}
            found = any(calls_python(op, memo) for op in ops[scanned:])
            ctx.python_scan[id(graph)] = (len(ops), found)
        if found:
            return True
    return False


@dataclasses.dataclass
class OutsideRead:
    """A read of outside state, which a Python function the graph calls may change (see
    `unchanged`): `when` is "late" after such a call, "loop" in a tf.cond/while body (a call
    later in the body comes before the next iteration's read), "early" before any call."""
    read: object                 # () -> the state's value now
    write: object                # (value) -> None: puts a value back there
    source: Source
    where: str
    checkable: bool              # small enough to compare after every Python call
    when: str
    code: bool                   # a module, function, method or class (rarely rebound by a call)

    @property
    def key(self) -> tuple:
        return ("unchanged", str(self.source))

    def refused(self, relaxed) -> bool:
        """It cannot be checked, or it changed often enough to be relaxed: the build fails."""
        return not self.checkable or self.key in relaxed


_WHEN = {"early": 0, "loop": 1, "late": 2}


def _note_read(ctx, access, holder, name, value, source):
    """Note when the build read this outside state, for a graph that calls Python (`unchanged`);
    a later read of the same state keeps the latest kind."""
    when = "late" if calls_python_so_far(ctx) else "loop" if ctx.general_depth else "early"
    key = (access, id(holder), name)
    known = ctx.outside_reads.get(key)
    if known is not None and _WHEN[known.when] >= _WHEN[when]:
        return
    limit = unchanged.EARLY_LIMIT if when == "early" else unchanged.LIMIT
    write = outside_writer(access, holder, name)
    checkable = not unchanged.too_large(value, limit) and (
        write is not None or isinstance(value, (*_CODE, tf.Variable)))
    read = OutsideRead(outside_reader(access, holder, name), write, source, ctx.user_line(), checkable, when,
                       isinstance(value, _CODE))
    if when == "late" and read.refused(ctx.relaxed):
        ctx.fail("python-state", f"`{source}` is read after a tf.numpy_function call: its Python may change it "
                 "while the graph runs, and the graph would use the value from the start of the call",
                 "read it before that call, or pass it as an argument")
    ctx.keep.append(holder)
    ctx.outside_reads[key] = read


def read_outside(access, holder, name, value, source):
    """What the builder sees for an outside value, with the entry check that keeps it valid."""
    ctx = current()
    heap = ctx.heap
    if ctx.dry_run:                          # a throwaway copy: a dry run must not change the user's list
        if check_kind(value) is Kind.ID_MATCH and id(value) not in ctx.outside:
            ctx.outside[id(value)] = source  # an outside object (not one the build made): writes to it
            ctx.keep.append(value)           # are deferred, or refused in a recursion, never made
        return list(value) if type(value) is list else dict(value) if type(value) is dict else value
    _note_read(ctx, access, holder, name, value, source)
    if type(value) is EAGER:
        return _fed(ctx, access, holder, name, value, source, Kind.TENSOR_MATCH)
    if type(value) is tuple and 0 < len(value) <= 16 and all(type(v) is EAGER for v in value):
        return fed_tuple(ctx, access, holder, name, value, source, outside_reader(access, holder, name))
    numpy = type(value) in NUMPY_SCALARS
    if (type(value) in (int, float) or numpy) and ctx.relaxed_state_scalars.get(source) == scalar_dtype(type(value)) \
            and not subnormal(value):
        key = (access, id(holder), name)
        if key not in heap.fed:
            dtype = tf.as_dtype(ctx.relaxed_state_scalars[source])
            read = outside_reader(access, holder, name)
            graph = ctx.outer_graph
            with graph.as_default():        # (a NumPy number through an array: TensorFlow caches scalars by value)
                made = (lambda: tf.constant(np.asarray(read()), dtype)) if numpy else lambda: tf.constant(read(), dtype)
                heap.fed[key] = call_time.feed(graph, made, tf.TensorSpec((), dtype))
            ctx.check(access, holder, name, value, source, kind=Kind.TYPE_MATCH, expected=type(value))
            _note(heap.reads, source)
        if numpy:
            ctx.numpy_scalars_fed = True    # (Python needing its value specialises on it again)
            return PyArray(heap.fed[key], scalar=True)
        return PyNumber(heap.fed[key], type(value))
    if isinstance(value, np.ndarray):
        return _outside_array(ctx, access, holder, name, value, source)
    if bound_container(value) is not None and value.__self__ is not holder:
        # `EMIT = LOG.append`: the container it is bound to is outside too (its mutators stop the build).
        ctx.outside.setdefault(id(value.__self__), source.attr("__self__"))
        ctx.keep.append(value.__self__)
    if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) and access == "attr" \
            and (value.__self__ is holder or value.__self__ is proxied(holder)):
        # A C method bound to the object (a NumPy Generator's `random`; through a proxy, such as the
        # dict wrapper a `tf.Module` keeps a dict attribute in, the wrapped object's): a new object
        # on every read, so what is checked is that the name still gives a method bound to it.
        ctx.check("bound", holder, name, value.__self__, source, kind=Kind.ID_MATCH, expected=value.__self__)
        return value
    if isinstance(value, types.MethodType):     # (a method patched on the instance or the class is seen)
        return read_method(ctx, access, holder, name, value, source)
    if type(value) is list and (fed := fed_list(ctx, access, holder, name, value, source,
                                                outside_reader(access, holder, name))) is not None:
        return fed
    if type(value) in (list, dict):
        ctx.check(access, holder, name, value, source, kind=Kind.ID_MATCH, expected=value)
        _note(heap.reads, source)
        return outside_copy(ctx, value, source, (access, holder, name))
    if type(value) is set:                   # what the build read of it (`len(S)`, `5 in S`) is checked
        ctx.check(access, holder, name, value, source, kind=Kind.ID_MATCH, expected=value)
        ctx.check_set(access, holder, name, value, source)
        return value
    no_tuple_of_containers(ctx, value, source)
    if access == "attr" and check_kind(value) is Kind.ID_MATCH and made_per_read(ctx, holder, name, value, source):
        ctx.outside.setdefault(id(value), source)
        ctx.keep.append(value)
        return value
    ctx.check(access, holder, name, value, source)
    return value


# -- name and attribute reads ----------------------------------------------------------------
def ld(name: str):
    ctx = current()
    fn = ctx.frame.converted.fn
    code = fn.__code__
    cell = builders_own_cell(fn, name)
    if cell is not None:
        try:
            return cell.cell_contents
        except ValueError:
            raise NameError(f"free variable '{name}' referenced before assignment in enclosing scope") from None
    if name not in code.co_freevars and (outer := lexical(fn, name)) is not fn:
        fn, code = outer, outer.__code__
    if name in code.co_freevars:
        access, holder = "closure", fn.__closure__[code.co_freevars.index(name)]
        source = Source.closure(fn.__qualname__, name)
    elif name in (globals_ := user_globals(fn)) or (id(globals_), name) in ctx.heap.names:
        access, holder, source = "global", globals_, Source.global_name(user_module(fn), name)
    else:
        try:
            value = getattr(builtins, name)
        except AttributeError:
            raise NameError(f"name '{name}' is not defined") from None
        if not ctx.dry_run:      # (a Python call of the graph may define a global of that name)
            _note_read(ctx, "global", user_globals(fn), name, value, Source.global_name(user_module(fn), name))
        return value
    written = ctx.heap.names.get((id(holder), name))
    if written is not None:
        if written[3] is DELETED:
            raise NameError(f"name '{name}' is not defined")
        return written[3]
    if access == "closure":
        try:
            value = holder.cell_contents
        except ValueError:
            raise NameError(f"free variable '{name}' referenced before assignment in enclosing scope") from None
    else:
        value = holder[name]
    return read_outside(access, holder, name, value, source)


def ld_attr(obj, name: str):
    ctx = current()
    written = ctx.heap.attrs.get((id(obj), name))
    if written is not None:
        if written[2] is DELETED:
            raise AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")
        return written[2]
    if ctx.heap.attrs:
        found = written_on_class(ctx, obj, name)
        if found is not None:
            return found[2]
    if isinstance(obj, PyArray):
        return obj.user_attribute(name)
    if name == "__class__" and isinstance(obj, Pointer):
        return NodeClass(obj)
    if name in ("shape", "get_shape") and is_symbolic(obj):
        shape = guarded(obj.shape)
        return shape if name == "shape" else (lambda: shape)
    value = _read_attr(ctx, obj, name)
    if ctx.in_machine and isinstance(value, tf.Variable):
        return tf.convert_to_tensor(value)     # a plain read vectorises across frames; a resource op does not
    return value


def _rebindable(value) -> bool:
    """A library module's data attribute a program may rebind between calls (`sys.stderr` under
    `contextlib.redirect_stderr`): an object, not a function, class, module, number or dtype."""
    return not (callable(value) or isinstance(value, (*_CODE, *SCALARS, *NUMPY_SCALARS, tf.DType, np.dtype)))


def _computed_here(items: list) -> bool:
    """Whether every item of what a property gave is a tensor it computed in the graph being built."""
    graph = tf.compat.v1.get_default_graph()
    return bool(items) and all(is_symbolic(v) and getattr(v, "graph", None) is graph for v in items)


def _read_attr(ctx, obj, name):
    source = ctx.outside.get(id(obj))
    try:
        value = getattr(obj, name)
    except AttributeError:
        note_absent(ctx, obj, name)          # (`hasattr`, `getattr` with a default: an answer to guard)
        raise
    if name == "__dict__" and source is not None and not isinstance(obj, types.ModuleType):
        ctx.fail("object-dict", f"`{source}.__dict__` reaches its attributes past janus's deferred writes: the "
                 "statement runs in Python", "read and write the attributes by name")
    if source is None or (isinstance(obj, types.ModuleType) and is_library_module(obj.__name__)):
        if source is not None and (callable(value) or isinstance(value, types.ModuleType)) \
                and obj.__dict__.get(name) is value:
            ctx.outside.setdefault(id(value), source.attr(name))    # a library's function: not the call's own
        elif source is not None and type(value) in (list, dict):
            return read_outside("attr", obj, name, value, source.attr(name))    # (`sys.argv`: its items too)
        elif source is not None and _rebindable(value):
            ctx.check("attr", obj, name, value, source.attr(name), kind=Kind.ID_MATCH, expected=value)
        return value                 # (a user module's own state, `config.LR`, is read as any other)
    if name == "handle" and isinstance(obj, tf.Variable):     # (a variable a failed run puts back; captured: `_fed`)
        tf.compat.v1.get_default_graph().watch_variable(obj)
    if (type(value) is list or is_symbolic(value)) and inspect.getattr_static(obj, name, None) is not value \
            and _computed_here(value if type(value) is list else [value]):
        # A library property that computes its value from the object's state on every read, in
        # this graph (a Keras model's `losses`, an optimizer's scheduled `learning_rate`): the graph
        # computes it on every run, as eager does; the settings its code reads are checked as for
        # a library method's call.
        check_settings(ctx, obj)
        getter = getattr(inspect.getattr_static(type(obj), name, None), "fget", None)
        if getter is not None:
            no_stale_reads(ctx, types.MethodType(getter, obj), (), {})
        return value
    if type(value) is list and inspect.getattr_static(obj, name, None) is not value:
        # Computed (a property): checked by its items, never written back, outside (it may be kept).
        ctx.check("attr", obj, name, value, source.attr(name), kind=Kind.ITEMS_MATCH, expected=value)
        ctx.outside.setdefault(id(value), source.attr(name))
        ctx.keep.append(value)
        return value
    return read_outside("attr", obj, name, value, source.attr(name))
