"""The program's code that Python or a library runs as it is while a graph is built.

Converted code calls the program's functions through `calls.call`, which converts them. But C
code and library machinery also call the program back, unseen by the operators: a dict
subclass's `__missing__`, a dataclass's `default_factory`, Enum's `_missing_`, a metaclass's
`__call__`, a class's own `__new__`, the `__init__` of a subclass of `list` or `Exception`, a
property of a `NamedTuple`, an `itemgetter` on an object with its own `__getitem__`. Such code
would run once, as plain Python, when the graph is built. Its prints and writes would happen
once, and what it reads would be baked into the graph.

`watch` catches it. While a graph is built, every new Python frame on the building thread is
checked (`sys.settrace`'s call event, which fires once per frame). The first frame of the
program's code that is not converted code refuses the build, at the statement of the function
being built that led there, and that statement runs in Python (`janus.segmented`).

Tracing every frame made builds 1.7 times as long, so the watch is paused where the program's
code cannot run: across a library's own functions called on tensors and Python scalars
(`library_call`), and in janus's own graph code (`unwatched`). Converted code called from there
is watched again (`watched`).

A tracer the user had set (a debugger, coverage) keeps tracing: the watch hands every frame on
to it.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import types

import numpy as np
import tensorflow as tf

from profiler.library import is_library_file, is_library_module

from codegen.errors import ConversionError, Reason
from codegen.operators.values import BUILDER_CODE

_LOCAL = threading.local()
_NOT_PROGRAM: dict = {}         # code object -> whether its frames are not the program's unconverted code
# A finaliser (a collection may run one anywhere: a class with one of the program's is not made in a
# graph, `dunders.construct`), and the module and factory code that compiling a builder runs
# (`codegen.compiler`): an `import` in the program is refused before it runs.
_NOT_PROGRAM_NAMES = frozenset({"__del__", "<module>", "__janus_factory__"})
_PLAIN_TYPES = frozenset({int, float, bool, complex, str, bytes, type(None), tf.DType, tf.TensorShape})
_PLAIN_CLASSES = (tf.Tensor, tf.Variable, np.ndarray, np.generic)


class _Watch:
    def __init__(self, outer):
        self.outer = outer          # the tracer set before the build, or None
        self.found = None           # (program function, its caller, the user's line) of the first frame


def _not_program(code) -> bool:
    known = _NOT_PROGRAM.get(code)
    if known is None:
        name = code.co_filename
        known = (code in BUILDER_CODE or is_library_file(name) or code.co_name in _NOT_PROGRAM_NAMES
                 or name.startswith("<") and name not in ("<string>", "<stdin>")       # (janus's own, `<janus ...>`)
                 or os.path.basename(name).startswith("__autograph_generated_file"))   # (TensorFlow's conversions)
        if len(_NOT_PROGRAM) > 65536:
            _NOT_PROGRAM.clear()
        _NOT_PROGRAM[code] = known
    return known


def _generated(frame) -> bool:
    """Code the standard library made with `exec` from text of its own (a dataclass's `__init__`,
    a named tuple's `__new__`): the program's functions it calls are watched on their own."""
    return frame.f_code.co_filename == "<string>" and (
        "__create_fn__" in frame.f_code.co_qualname or frame.f_globals.get("__name__", "").startswith("namedtuple_"))


def _of_library_object(frame) -> bool:
    """A method of the program's subclass of a TensorFlow or Keras class (a cell a Keras `RNN`
    runs, a layer a `Sequential` holds), called by the library: it runs at build time as the
    library's own code does, and the settings it reads are checked at entry
    (`library_settings`)."""
    code = frame.f_code
    if not code.co_argcount or _caller(frame.f_back) == "":
        return False
    owner = frame.f_locals.get(code.co_varnames[0])
    return any((k.__module__ or "").partition(".")[0] in _FRAMEWORKS for k in type(owner).__mro__[1:])


_FRAMEWORKS = frozenset({"keras", "tf_keras", "tensorflow"})


def _on_call(frame, event, arg):
    watch = _LOCAL.watch
    if not _not_program(frame.f_code) and not _generated(frame) and not _of_library_object(frame):
        # Raised into the frame before its first instruction, so the code never runs.  Python then
        # unsets the trace function: the next janus call the build makes raises again (`_run`).
        watch.found = watch.found or (frame.f_code.co_qualname, _caller(frame.f_back), _builder_line(frame))
        _refuse(*watch.found)
    return watch.outer(frame, event, arg) if watch.outer is not None else None


def _caller(frame) -> str:
    """The library function that called the program's code, or "" (Python's own machinery, or
    janus reading an attribute or an item as Python does)."""
    if frame is None or frame.f_globals.get("__name__", "").partition(".")[0] in ("codegen", "janus", "profiler"):
        return ""
    return frame.f_code.co_qualname


def _builder_line(frame) -> str:
    """file:line of the converted code's statement running now, below `frame`."""
    while frame is not None and frame.f_code not in BUILDER_CODE:
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""


@contextlib.contextmanager
def watch():
    """Watch the build on this thread; on leaving it, refuse the build if the program's code ran
    unconverted inside it."""
    previous = getattr(_LOCAL, "watch", None)
    outer = sys.gettrace()
    mine = _LOCAL.watch = _Watch(previous.outer if previous is not None and outer is _on_call else outer)
    sys.settrace(_on_call)
    try:
        yield
    finally:
        sys.settrace(outer)
        _LOCAL.watch = previous
        if mine.found is not None:      # (whatever the library made of the refusal raised into its call)
            _refuse(*mine.found)


def _refuse(function: str, caller: str, line: str):
    by = f"`{caller}`" if caller and caller != "<module>" else "Python"
    raise ConversionError(Reason(
        "python-call", line,
        f"`{function}` is the program's code, and {by} calls it while the graph is built: in a graph it "
        "would run once, not on every call", "it runs in Python"))


def library_call(f, args, kwargs):
    """`f(*args, **kwargs)` of a library function; unwatched when every argument is a tensor, a
    variable, an array, a Python scalar, or a list or tuple of those."""
    watching = getattr(_LOCAL, "watch", None)
    if watching is None:
        return f(*args, **kwargs)
    if watching.found is not None:
        _refuse(*watching.found)
    if _plain(args) and _plain(kwargs.values()) and _library_made(f):
        return _run(watching.outer, f, args, kwargs)
    return f(*args, **kwargs)


def unwatched(fn):
    """`fn`, janus's own code that builds graph parts from tensors, runs unwatched: its frames are
    most of a build's.  Converted code it calls is watched again (`watched`)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        watching = getattr(_LOCAL, "watch", None)
        return _run(watching.outer, fn, args, kwargs) if watching is not None else fn(*args, **kwargs)
    return run


def watched(fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, converted code, watched also where janus's code around it is not."""
    return _run(_on_call, fn, args, kwargs) if getattr(_LOCAL, "watch", None) is not None else fn(*args, **kwargs)


def _run(tracer, fn, args, kwargs):
    """`fn(*args, **kwargs)` with `tracer` set, as the build's watch stands before and after."""
    before, watching = sys.gettrace(), getattr(_LOCAL, "watch", None)
    if watching is not None and watching.found is not None:
        _refuse(*watching.found)
    if before is tracer or watching is None:
        return fn(*args, **kwargs)
    sys.settrace(tracer)
    try:
        return fn(*args, **kwargs)
    finally:
        sys.settrace(before)


def _plain(values) -> bool:
    for v in values:
        if type(v) in _PLAIN_TYPES or isinstance(v, _PLAIN_CLASSES):
            continue
        if type(v) in (list, tuple) and all(type(x) in _PLAIN_TYPES or isinstance(x, _PLAIN_CLASSES) for x in v):
            continue
        return False
    return True


def _library_made(f) -> bool:
    """Whether `f` is the library's own and holds nothing of the program's: a library's function,
    class, or NumPy ufunc, or a library's method bound to a library's object.  Any other callable
    object (`np.vectorize` of a program function, a `staticmethod` object, a generic alias of a
    program class, a Keras layer) may call the program's code, and stays watched."""
    kind = type(f)
    if kind is types.FunctionType:
        return is_library_module(f.__module__)
    if isinstance(f, type):
        return is_library_module(f.__module__) and is_library_module(kind.__module__)
    if kind is types.BuiltinFunctionType:           # (a builtin function, or a C method of its `__self__`)
        owner = f.__self__
        return owner is None or isinstance(owner, types.ModuleType) or _library_object(owner)
    if kind is types.MethodType:
        return is_library_module(getattr(f.__func__, "__module__", None)) and _library_object(f.__self__)
    if kind is np.ufunc:
        return getattr(np, f.__name__, None) is f    # (`np.frompyfunc` makes ufuncs of the program's functions)
    return False


def _library_object(obj) -> bool:
    return is_library_module(obj.__module__ if isinstance(obj, type) else type(obj).__module__)
