"""Calls at build time: where inlining happens.

`call` converts a user function (with its own profile sites) and calls its builder on the
current, possibly symbolic, values, so it is inlined into the same graph; a call into a recursive
cycle on tensors or trees runs as a Call/Return machine; framework functions are called as they
are and emit their own ops; builtins get their graph meaning (`codegen.operators.builtins`).
Converting a function and running a machine are services of the rooms above this one, reached
through the build context (`BuildContext.compiler`)."""
from __future__ import annotations

import collections
import functools
import inspect
import threading
import types

import tensorflow as tf

from profiler import SiteKind, code_key
from profiler.library import is_user_function

from codegen.assumptions import Kind, Source
from codegen.errors import ConversionError, Reason
from codegen.operators import callbacks, dunders, library_calls, library_state, state, unconverted
from codegen.operators.aliases import no_lists_handed_out, read_deep, read_whole
from codegen.operators.arrays import PyArray
from codegen.operators.bound_methods import partial_parts, register_owner
from codegen.operators.builtins import BUILTINS
from codegen.operators.context import Frame, active, current
from codegen.operators.defaults import check_defaults, outside_defaults
from codegen.operators.eager_view import ABSENT, stands_for_eager, tensor_attribute
from codegen.operators.object_access import bound_setattr
from codegen.operators.gradients import UnknownConnectivity, checked_gradient
from codegen.operators.heap import NON_READING_MUTATORS
from codegen.operators.library_settings import check_settings, no_stale_reads
from codegen.operators.lists import GrowList
from codegen.operators.outside_calls import NOT_CONVERTED, try_call
from codegen.operators.printing import not_printed
from codegen.operators.sequence_dtypes import with_eager_dtype
from codegen.operators.write_refusals import no_write_in_machine
from codegen.operators.text import read_by_c
from codegen.operators.overrides import Overridden, overridden
from codegen.operators.values import refuse_undefined
from codegen.operators.weak_numbers import WeakNumber, conversion

_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard",
             "appendleft", "extendleft", "popleft", "rotate", "move_to_end",
             "sort", "reverse", "popitem", "__setitem__", "__delitem__"}
# Methods whose answer compares the items (the lists and dicts in them too)
_COMPARING = {"index", "count", "remove", "sort", "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
              "__ge__", "__repr__", "__str__"}
RECURSION_LIMIT = 64


class Speculated:
    """Base of callables that wrap a user function for janus (`janus.speculate`): called from
    converted code, they are inlined as their Python function."""

    python_function: types.FunctionType


def unwrap(f):
    """A speculated function (or a method of one) as its Python function; anything else as it is."""
    if isinstance(f, Speculated):
        return f.python_function
    if isinstance(f, types.MethodType) and isinstance(f.__func__, Speculated):
        return types.MethodType(f.__func__.python_function, f.__self__)
    return f


def user_callee(f, args):
    """(function, args) for a call of a user function or method, else None."""
    f = unwrap(f)
    if isinstance(f, types.MethodType) and is_user_function(f.__func__):
        return f.__func__, (f.__self__,) + tuple(args)
    if is_user_function(f):
        return f, tuple(args)
    if isinstance(f, Overridden) and (ctx := active()) is not None and (merged := f.merged(ctx)):
        return merged, (f.node,) + tuple(args)
    return None


def ld_attr(obj, name: str):
    """`obj.name`.  A property of the program's own class runs as the program's code, inlined: its
    reads are guarded and its writes deferred like the function's own, so a getter that counts,
    logs or caches runs once per read, as in eager (read at build time, it would run only when
    the graph was built, and the guards would read it again at each call).  `super().name` finds
    the property past the calling class, as Python does."""
    if stands_for_eager(obj):
        found = tensor_attribute(obj, name)
        return found if found is not ABSENT else state.ld_attr(obj, name)
    if name == "__class__" and inspect.getattr_static(type(obj), "__class__") is _OBJECT_CLASS:
        return BUILTINS[type](obj)          # (a stand-in for a Python number answers as the number)
    dunders.refuse_lookup(obj, name)
    found = _own_property(obj, name)
    return call(*found) if found is not None else state.ld_attr(obj, name)


_OBJECT_CLASS = object.__dict__["__class__"]


def _getattr(obj, name, *default):
    """`getattr(obj, name)`: a property of the program's own class runs as its code, as for
    `obj.name`."""
    if type(name) is str:
        dunders.refuse_lookup(obj, name)
        found = _own_property(obj, name)
        if found is not None and default:
            _caught_property(name, "getattr with a default")
        if found is not None:
            return call(*found)
    return _BUILTIN_GETATTR(obj, name, *default)


def _hasattr(obj, name):
    if type(name) is str:
        dunders.refuse_lookup(obj, name)
    if type(name) is str and _own_property(obj, name) is not None:
        _caught_property(name, "hasattr")
    return _BUILTIN_HASATTR(obj, name)


def _caught_property(name, how):
    """An `AttributeError` the getter may raise decides the result: Python runs it."""
    current().fail("property", f"`{how}` on the property `{name}`: whether its getter raises AttributeError "
                   "decides the result", "read the attribute directly, or test for it outside the function")


_BUILTIN_GETATTR, _BUILTIN_HASATTR = BUILTINS[getattr], BUILTINS[hasattr]
BUILTINS[getattr], BUILTINS[hasattr] = _getattr, _hasattr   # (the builtins' module sits below this one)


def _own_property(obj, name: str):
    """(getter, instance) when `obj.name` is a property of the program's own class whose lookup
    the entry guard can re-check without running it; else None."""
    ctx = current()
    if type(obj) is super:
        instance, mro = obj.__self__, type(obj.__self__).__mro__ if not isinstance(obj.__self__, type) else ()
        after = mro[mro.index(obj.__thisclass__) + 1:] if obj.__thisclass__ in mro else ()
        owner = next((c for c in after if name in c.__dict__), None)
        found = owner.__dict__[name] if owner is not None else None
    else:
        if isinstance(obj, (type, tf.Tensor, tf.Variable, PyArray)) or (id(obj), name) in ctx.heap.attrs:
            return None
        instance, owner = obj, type(obj)
        found = inspect.getattr_static(owner, name, None)
    if type(found) is not property or not is_user_function(found.fget) or \
            type(instance).__getattribute__ is not object.__getattribute__:     # (Python's own lookup finds it)
        return None
    source, cls = ctx.outside.get(id(instance)), type(instance)
    if source is not None:              # the same class, and the same property on it, at every call
        ctx.check("attr", instance, "__class__", cls, source.attr("__class__"), kind=Kind.ID_MATCH, expected=cls)
    where = ctx.outside.get(id(owner)) or Source.global_name(owner.__module__, owner.__qualname__)
    ctx.check("attr", owner, name, found, where.attr(name), kind=Kind.ID_MATCH, expected=found)
    return found.fget, instance


def _grown_list_tensor(ctx, f, args, kwargs):
    """`tf.constant` or `tf.stack` of a list a loop over a tensor grows (carried as one tensor)."""
    if f is tf.stack:
        return args[0].stacked(*args[1:], **kwargs)
    if args[0].kind is not float or len(args) > 2 or set(kwargs) - {"dtype", "name"}:
        ctx.fail("list-conversion", "tf.constant of a list a loop grows, other than of Python floats",
                 "use tf.stack")        # (eager's tf.constant of a list of scalar tensors raises)
    return args[0].__tf_tensor__(args[1] if len(args) == 2 else kwargs.get("dtype"))  # as eager converts it


def call(f, /, *args, **kwargs):
    refuse_undefined(*args, *kwargs.values())
    f = unwrap(f)
    dunders.refuse_builtin(f, args)
    f, args, kwargs = callbacks.python_call_with(f, args, kwargs, _program_callable, call)
    if type(f) in callbacks.GETTERS and active() is not None:
        return callbacks.getter_call(f, args, kwargs, call)
    handler = BUILTINS.get(f) if _hashable(f) else None
    if handler is not None:
        return handler(*args, **kwargs)
    if (made := dunders.construct(f, args, kwargs)) is not dunders.NOT_USER:
        return made
    ctx = current()
    if isinstance(o := overridden(f), Overridden) and (merged := o.merged(ctx)):   # (each node class's own)
        return _inline(ctx, merged, (o.node,) + args, kwargs)
    if isinstance(f, types.MethodType) and is_user_function(f.__func__):
        register_owner(ctx, f)
        return _inline(ctx, f.__func__, (f.__self__,) + args, kwargs)
    if is_user_function(f):
        return _inline(ctx, f, args, kwargs)
    if isinstance(f, functools.partial) and user_callee(f.func, ()) is not None:
        func, held, keywords = partial_parts(ctx, f)
        return call(func, *held, *args, **{**keywords, **kwargs})
    if isinstance(f, types.MethodWrapperType) and f.__name__ in ("__setattr__", "__delattr__") \
            and bound_setattr(f, args, kwargs):
        return None
    impl = library_calls.dispatched(f, args, BUILTINS[type])
    if impl is not None:
        return call(impl, *args, **kwargs)
    _container_method(ctx, f)
    for a in args:
        dunders.refuse_user_key(f.__self__ if isinstance(f, types.BuiltinMethodType) else None, a)
        if isinstance(f, types.BuiltinMethodType) and f.__name__ in ("index", "count", "remove"):
            dunders.refuse_user_equality(f.__self__, a)
        read_deep(ctx, a)                   # (library or C code reads it through and through)
    read_by_c(ctx, f, args, kwargs)
    check_settings(ctx, f)
    library_state.note(ctx, f)
    no_stale_reads(ctx, f, args, kwargs)
    fresh = library_calls.new_value_each_call(ctx, f, args)
    library_calls.refuse_copy_of_outside(ctx, f, args)
    foreign = library_calls.foreign(f)
    if fresh or foreign:
        stand_in = try_call(f, args, kwargs)        # the call runs in Python while the graph runs
        if stand_in is not NOT_CONVERTED:
            return stand_in
    if fresh:
        raise ConversionError(Reason("per-call-value", ctx.user_line(), f"`{fresh}` gives a new value on every call; "
                                     "a graph would repeat the value of the call that built it",
                                     "pass the value in as an argument, or use tf.random with a seed"))
    if foreign:
        raise ConversionError(Reason("python-call", ctx.user_line(), f"`{foreign}` is Python code of a library "
                                     "that is not TensorFlow; a graph would run it once, when it is built, not on "
                                     "every call", "it runs in Python between graph segments"))
    replicated = _replica_call(ctx, f, args, kwargs)
    if replicated is not _ABSENT:
        return replicated
    if (called := _program_object_called(ctx, f, args, kwargs)) is not _ABSENT:
        return called
    # Library code sees plain tensors where tree attributes stood for Python numbers; a list, dict
    # or set method keeps the number (it comes back as one after the run), and so do the builtins
    # that compute with it by its own operators (`sum` of Python ints stays a checked Python int).
    if f is tf.constant or f is tf.convert_to_tensor:
        kwargs = with_eager_dtype(f, args, kwargs)
        if (converted := conversion(f, args, kwargs)) is not None:
            return converted
    if type(getattr(f, "__self__", None)) not in (list, dict, set) and not _keeps_numbers(f):
        args, kwargs = _plain(args), {k: _plain(v) for k, v in kwargs.items()}
    if (f is tf.constant or f is tf.stack) and args and isinstance(args[0], GrowList):
        return _grown_list_tensor(ctx, f, args, kwargs)
    if f is tf.constant and args and isinstance(args[0], PyArray):
        return args[0].constant(*args[1:], **kwargs)
    if isinstance(f, types.MethodType) and isinstance(f.__self__, tf.GradientTape) and f.__name__ == "gradient":
        try:
            return checked_gradient(f, args, kwargs)
        except UnknownConnectivity:
            raise ConversionError(Reason("gradient-path", ctx.user_line(), "a tensor `if` nested in another "
                                         "decides whether the gradient is connected; eager's gradient is None on "
                                         "some paths, where a graph's is zeros", "it runs in Python")) from None
    return _library_call(ctx, f, args, kwargs)


def _program_object_called(ctx, f, args, kwargs):
    """An object of the program's class called: its `__call__` inlined, or a layer's `call`; else
    `_ABSENT`."""
    call_method = getattr(type(f), "__call__", None)
    if not isinstance(f, type) and isinstance(call_method, types.FunctionType) and is_user_function(call_method):
        return _inline(ctx, call_method, (f,) + args, kwargs)
    user_call = getattr(type(f), "call", None) if not isinstance(f, type) else None
    if isinstance(user_call, types.FunctionType) and is_user_function(user_call) and hasattr(f, "__dict__"):
        return _layer_call(ctx, f, user_call, args, kwargs)
    return _ABSENT


def _library_call(ctx, f, args, kwargs):
    """A library function called as it is.  An op with no output (`tf.group`, `tf.print`,
    `assert_*`, `assign(read_value=False)`) is None to the program, as eager gives it, and
    `tf.control_dependencies` drops such Nones (the graph runs its stateful ops in order)."""
    if f is tf.control_dependencies and args and isinstance(args[0], (list, tuple)):
        args = ([c for c in args[0] if c is not None],) + args[1:]
    if callbacks.takes_callbacks(f):
        result = callbacks.call_with(ctx, f, args, kwargs, _program_callable, call)
    else:
        result = unconverted.library_call(f, args, kwargs)
    return None if isinstance(result, tf.Operation) else result


def decorator(d):
    """`@d` on a nested `def`: applying it is a call of `d` (`@tf.function` hands the function to
    TensorFlow, which calls it back: `callbacks`)."""
    return functools.partial(call, d)


def _program_callable(v) -> bool:
    """Whether calling `v` runs the program's own code: its function or method, a partial of
    one, or an object whose class has its own `__call__`."""
    if user_callee(v, ()) is not None:
        return True
    if isinstance(v, functools.partial):
        return _program_callable(v.func)
    method = getattr(type(v), "__call__", None)
    return isinstance(method, types.FunctionType) and is_user_function(method)


dunders.install(call)


def ld_item(obj, key):
    """`obj[key]`: the program's own `__getitem__` runs as its code, inlined; so does the
    program's factory of a `defaultdict` the call made, at a missing key (as its `__missing__`)."""
    dunders.refuse_user_key(obj, key)
    if type(obj) is collections.defaultdict and id(obj) not in current().outside and key not in obj and (
            _program_callable(obj.default_factory) or callbacks.program_class(obj.default_factory)):
        st_item(obj, key, value := call(obj.default_factory))
        return value
    found = dunders.getitem(obj, key)
    return state.ld_item(obj, key) if found is dunders.NOT_USER else found


def st_item(obj, key, value):
    """`obj[key] = value`; a dict keyed by the program's own `__hash__` runs in Python."""
    dunders.refuse_user_key(obj, key)
    if dunders.setitem(obj, key, value) is dunders.NOT_USER:
        state.st_item(obj, key, value)


def del_item(obj, key):
    """`del obj[key]`: the program's own `__delitem__` runs as its code, inlined."""
    dunders.refuse_user_key(obj, key)
    if dunders.setitem(obj, key, None, "__delitem__") is dunders.NOT_USER:
        state.del_item(obj, key)


def inplace(op, current_value, value):
    """`a <op>= b`: the program's own `__i<op>__` (or binary method) runs as its code, inlined."""
    found = dunders.inplace(op, current_value, value)
    return state.inplace(op, current_value, value) if found is dunders.NOT_USER else found


def _container_method(ctx, f):
    """A method of a list, dict or set from outside the call: a mutator of one janus copies is
    a deferred write (a reading one notes the read); of another kind it stops the build."""
    # (a list, dict or set subclass written in Python, the `ListWrapper` a `tf.Module` keeps a
    # list attribute in, has Python methods: an outside one's mutators stop the build below too)
    owner = getattr(f, "__self__", None) if isinstance(f, (types.BuiltinMethodType, types.MethodWrapperType)) or (
        isinstance(f, types.MethodType) and isinstance(f.__self__, (list, dict, set))) else None
    if owner is not None and f.__name__ not in _MUTATORS:
        read_whole(ctx, owner)      # (an outside container janus keeps no copy of: its contents checked)
    if owner is not None:
        no_lists_handed_out(ctx, owner, f.__name__)
    if owner is not None and id(owner) in ctx.heap.by_copy:
        if f.__name__ in _COMPARING:
            read_deep(ctx, owner)           # (C code compares the items, the lists in it included)
        elif f.__name__ not in NON_READING_MUTATORS:
            ctx.heap.mark_read(owner)
        else:
            sh = ctx.heap.by_copy[id(owner)]
            no_write_in_machine(ctx, sh.source)
            not_printed(ctx, owner, sh.source)
            if sh.source not in ctx.heap.writes:
                ctx.heap.writes.append(sh.source)
            if f.__name__ not in ("append", "extend") or type(owner) is not list:
                sh.mutated = True       # its result depends on the contents: they are checked at entry
    elif owner is not None and f.__name__ in _MUTATORS and id(owner) in ctx.printed_objects:
        not_printed(ctx, owner)
    elif owner is not None and f.__name__ in _MUTATORS and id(owner) in ctx.outside:
        ctx.fail("outside-container", f"`{ctx.outside[id(owner)]}.{f.__name__}(...)` mutates a {type(owner).__name__} "
                 "from outside the call that janus keeps no copy of: the statement runs in Python",
                 "pass or read the list or dict itself")


def _layer_call(ctx, layer, user_call, args, kwargs):
    """`layer(...)` where the framework's `__call__` (Keras: build, autocast, masks, training flag)
    runs the user's `call`: the framework's code runs as it is, and the `call` it reaches is the
    user's, converted and inlined.  For the duration of the call the instance's `call` is a
    stand-in that converts on this thread only; another thread calling the layer meanwhile gets
    the user's method as written."""
    building = threading.get_ident()

    def stand_in(*a, **kw):
        if threading.get_ident() != building:
            return user_call(layer, *a, **kw)
        return _inline(ctx, user_call, (layer,) + a, kw)
    own = vars(layer).get("call", _ABSENT)
    object.__setattr__(layer, "call", stand_in)
    try:
        return layer(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
    finally:
        if own is _ABSENT:
            object.__delattr__(layer, "call")
        else:
            object.__setattr__(layer, "call", own)


def _replica_call(ctx, run, args, kwargs):
    """`strategy.run(fn, ...)` (or `extended.call_for_each_replica`) with a user `fn`: the
    strategy runs `fn` once per replica, each on a thread of its own, and each replica's `fn` is
    converted and inlined as if called here.  Every op a replica builds waits for the guards
    built before the call, and every op built after the call waits for the replicas' guards.
    Anything else: `_ABSENT`."""
    if not (isinstance(run, types.MethodType) and run.__name__ in _REPLICA_RUNNERS
            and isinstance(run.__self__, _STRATEGIES)):
        return _ABSENT
    fn = args[0] if args else kwargs.get("fn")
    callee = user_callee(fn, ()) if fn is not None else None
    if callee is None:
        return _ABSENT
    function, bound = callee
    frames, guards, built = list(ctx.frames), ctx.guard_ops(), []

    def stand_in(*a, **kw):
        with ctx.on_thread(frames, guards) as replica_guards:
            built.append(replica_guards)
            return _inline(ctx, function, bound + a, kw)
    if args:
        args = (stand_in,) + tuple(_plain(a) for a in args[1:])
    else:
        kwargs = dict(kwargs, fn=stand_in)
    result = run(*args, **{k: _plain(v) for k, v in kwargs.items()})
    waits = [op for ops in built for op in ops]
    if waits:
        ctx.wait_for(waits)
    return result


_ABSENT = object()
_REPLICA_RUNNERS = ("run", "experimental_run_v2", "call_for_each_replica")
_STRATEGIES = (tf.distribute.Strategy, tf.distribute.StrategyExtended, tf.compat.v1.distribute.Strategy,
               tf.compat.v1.distribute.StrategyExtended)
def _profiled_kind(ctx, fn):
    """"P" when every call of `fn` the profile saw from the function being built returned a Python
    or NumPy number (the machine then speculates that its result is one), "T" when every one
    returned a tensor, else None."""
    fprof = ctx.profile.get(ctx.frame.converted.key) if ctx.profile is not None and ctx.frames else None
    if fprof is None:
        return None
    key = code_key(fn)
    sites = [s for s in fprof.sites_of(SiteKind.CALL) if key in s.callees]
    if sites and all(s.value.only_numbers() for s in sites):
        return "P"
    return "T" if sites and all(s.value.only_tensors() for s in sites) else None


_KEEPS = (sum, abs, pow, divmod, round, map, filter, zip, enumerate, reversed, list, tuple, dict, iter, next,
          collections.OrderedDict, collections.defaultdict, collections.deque, collections.ChainMap,
          types.SimpleNamespace)     # (containers that only hold the values they are given)
_KEEPING_MODULES = ("operator", "_operator", "functools", "_functools", "math", "itertools")


def _keeps_numbers(f) -> bool:
    """Whether `f` computes with a Python number by its own operators, or only carries it (`sum`,
    `operator.mul`, `math.prod`, `functools.reduce`, `map`)."""
    return any(f is g for g in _KEEPS) or getattr(f, "__module__", None) in _KEEPING_MODULES \
        or isinstance(getattr(f, "__self__", None), WeakNumber)


def _plain(value):
    if isinstance(value, WeakNumber):
        return value.__tf_tensor__()        # the tensor TensorFlow makes of the Python number
    if type(value) in (list, tuple):
        items = [_plain(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value                    # (the same object: a class may keep it, `st.tags is seen`)
        return type(value)(items)
    return value


def every_argument(fn, args, kwargs, ctx=None):
    """The call's value of each of `fn`'s parameters, in order (defaults filled in), as a machine
    frame holds them; None where `fn` takes `*args`, `**kwargs` or keyword-only parameters, or the
    arguments do not bind (Python raises TypeError: the call is inlined, and raises it).  A graph
    that takes a default holds while `fn.__defaults__` is the same tuple (a check of `ctx`)."""
    code = fn.__code__
    if not kwargs and len(args) == code.co_argcount:
        return args
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount:
        return None
    try:
        bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    except TypeError:
        return None
    given = len(bound.arguments)
    bound.apply_defaults()
    if len(bound.arguments) > given and ctx is not None:
        check_defaults(ctx, fn)
    return tuple(bound.arguments.values())


def _hashable(f) -> bool:
    try:
        hash(f)
        return True
    except TypeError:
        return False


def _inline(ctx, fn, args, kwargs):
    full = every_argument(fn, args, kwargs, ctx)
    if full is not None and ctx.compiler.wants_machine(fn, full):   # recursion on tensors or trees
        return ctx.compiler.run_machine(fn, [full], _profiled_kind(ctx, fn))[0]
    converted = ctx.compiler.convert(fn)
    depth = sum(1 for fr in ctx.frames if fr.converted.code is fn.__code__)
    if depth >= RECURSION_LIMIT:
        refused = ctx.compiler.refused(fn)
        ctx.fail("recursion", f"{fn.__qualname__} recurses deeper than {RECURSION_LIMIT} levels while building"
                 + (f"; it cannot run as a Call/Return machine: {refused.explanation}" if refused else ""),
                 refused.hint if refused else "make the recursion end on a tensor test or a tree")
    args, kwargs = outside_defaults(ctx, fn, args, kwargs)
    ctx.frames.append(Frame(converted))
    try:
        return unconverted.watched(converted.builder, *args, **kwargs)
    finally:
        ctx.frames.pop()
