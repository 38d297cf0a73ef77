"""Python a graph calls itself (`tf.numpy_function`, `tf.py_function`) runs once per call.

A janus graph that fails (an op error, a guard) is undone and the call runs again in Python.
The Python functions the graph called have run by then, and must not run twice: while a graph
runs, the results of its `tf.numpy_function` calls are recorded, and when the call then runs in
Python those calls return the recorded results, in order, instead of running again (so the
re-run reaches eager's exception with eager's effects).  A graph calls the Python function of a
PyFunc op through TensorFlow's registry (`script_ops.FuncRegistry.__call__`), on TensorFlow's
threads: its calls are matched by the ops' tokens.  Eagerly, `tf.numpy_function` calls the
function itself (`script_ops.py_func_common`), on the calling thread, where the re-run
replays.  janus wraps both on first use; they delegate when nothing records or replays.
`tf.py_function` runs its function eagerly under TensorFlow's own gradient bookkeeping, which a
recorded result cannot stand in for: a graph with one raises its error instead of running the
call again.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
import types

import numpy as np
from tensorflow.python.eager import context
from tensorflow.python.ops import script_ops

from codegen.operators.failing_ops import PYTHON_OPS
from codegen.operators.outside_calls import OutsideCall, PythonCall
from codegen.operators.unchanged import same_value
from profiler import recorders

_logs: dict = {}                 # token of a PyFunc op -> the log of the graph run recording it
_lock = threading.Lock()
_local = threading.local()       # .replay: the recorded calls the current thread's re-run returns
_registry_call = script_ops.FuncRegistry.__call__
_eager_numpy_function = script_ops.py_func_common


def _user_function(func):
    """The user's function behind the wrappers TensorFlow puts around it in a graph: AutoGraph's
    `do_not_convert` sets `__wrapped__` for a function, and only holds a callable object in its
    closure (as `func`)."""
    for _ in range(8):
        inner = getattr(func, "__wrapped__", None)
        code = getattr(func, "__code__", None)
        if inner is None and code is not None and "func" in code.co_freevars and func.__closure__ \
                and code.co_filename.replace("\\", "/").endswith("autograph/impl/api.py"):
            inner = func.__closure__[code.co_freevars.index("func")].cell_contents
        if inner is None:
            return func
        func = inner
    return func


class _Raised:
    """A recorded call that raised: its replay raises the same exception."""

    def __init__(self, exc):
        self.exc = exc

    def __call__(self, *_):
        raise self.exc


def _call(self, token, device, args):
    """The registry's call (TensorFlow's own, for `tf.py_function`), recording what a plain
    Python function returned (or raised), before TensorFlow converts it to arrays."""
    func = self.get(token, None)
    log, watch, context = _logs.get(token, (None, None, None))
    if log is None or func is None or isinstance(func, script_ops.EagerFunc):
        return _registry_call(self, token, device, args)
    target = _user_function(func)
    outside = isinstance(target, PythonCall)
    try:
        result = _in_context(context, target.run if outside else func, args)
    except BaseException as exc:      # (KeyboardInterrupt, a library's own BaseException: replayed too)
        log.append((target.record if outside else target, _Raised(exc)))
        if watch is not None:
            watch.after_python()
        raise
    result = _kept(result)      # the graph's tensor must not share memory the Python changes later
    log.append((target.record if outside else target, result))
    if watch is not None:
        watch.after_python()
    if outside:
        result = target.leaves(result)          # (raises the CALL_RESULT guard's message)
    message = watch.after_call() if watch is not None else None
    if message is not None:
        # State the graph reads after this call changed: the run fails here (an InvalidArgument
        # error carrying the UNCHANGED guard's message), and the call runs in Python, replaying.
        raise ValueError(message)
    if isinstance(result, bytes):
        result = [result]
    if isinstance(result, (tuple, list)):
        return [self._convert(x) for x in result]
    return self._convert(result)


def _in_context(context, func, args):
    """`func(*args)` in the context variables of the thread that runs the graph, as eager calls it
    there (NumPy's `errstate`, `decimal`'s context, the program's own `ContextVar`s); TensorFlow
    calls it on a thread of its own.  (A `threading.local` stays that thread's.)"""
    try:
        return context.run(func, *args)
    except RuntimeError as exc:
        if "cannot enter context" not in str(exc):
            raise
        return func(*args)          # (entered already by a call running beside it)


def _context_back(context):
    """What the Python the graph called set in its context variables, set in the caller's."""
    for var, value in context.items():
        try:
            if var.get() is value:
                continue
        except LookupError:
            pass
        var.set(value)


def _kept(result):
    """What a call returned, as it was when it returned: an array the Python keeps and changes
    later (a buffer it returns each time) would replay as changed, and the tensor TensorFlow
    makes of it may share its memory."""
    if isinstance(result, np.ndarray):
        return result.copy()
    if type(result) in (tuple, list):
        return type(result)(_kept(x) for x in result)
    return result


def _same_function(recorded, func) -> bool:
    """Whether the re-run calls the function the graph called: the same object, or made from the
    same code on the same things (a bound method, a `functools.partial`, or a nested function are
    new objects each time the program makes them)."""
    if recorded is func:
        return True
    if type(recorded) is not type(func):
        return False
    if isinstance(func, types.MethodType):
        return recorded.__self__ is func.__self__ and _same_function(recorded.__func__, func.__func__)
    if isinstance(func, types.BuiltinMethodType):
        return recorded.__self__ is func.__self__ and recorded.__name__ == func.__name__
    if isinstance(func, functools.partial):
        return _same_function(recorded.func, func.func) and len(recorded.args) == len(func.args) and all(
            map(same_value, recorded.args, func.args)) and recorded.keywords.keys() == func.keywords.keys() \
            and all(same_value(recorded.keywords[k], v) for k, v in func.keywords.items())
    if not isinstance(func, types.FunctionType):
        return False
    a, b = recorded.__code__, func.__code__     # (the graph's copy of a nested def is compiled apart)
    return a is b or (a.co_filename, a.co_firstlineno, a.co_name) == (b.co_filename, b.co_firstlineno, b.co_name)


def _py_func_common(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TensorFlow's names
    """`tf.numpy_function`: run eagerly in a replaying re-run, the next recorded call of the same
    function returns what it returned (or raises what it raised) in the graph instead of running
    again; the last one puts back the outside state as the graph's run left it."""
    replay = getattr(_local, "replay", None)
    if replay and context.executing_eagerly():
        expected, result = replay[0]
        if _same_function(expected, _user_function(func)):
            replay.pop(0)
            if not replay and _local.watch is not None:
                _local.watch.apply_final()
            call = result if isinstance(result, _Raised) else (lambda *_: result)
            return _eager_numpy_function(call, inp, Tout, stateful=stateful, name=name)
        replay.clear()              # the re-run went another way: call for real from here on
        if _local.watch is not None:
            _local.watch.apply_final()
    return _eager_numpy_function(func, inp, Tout, stateful=stateful, name=name)


def _intercept(callee, filename, span):
    """A call in the instrumented re-run (`profiler.recorders.intercept`): the next recorded
    Python call the graph made at this span, to the same function, returns (or raises) what it
    did instead of running again; any other call runs."""
    replay = getattr(_local, "replay", None)
    if not replay:
        return callee
    expected, result = replay[0]
    if not isinstance(expected, OutsideCall) or expected.span != span or expected.filename != filename:
        return callee
    if not _same_function(expected.function, callee):
        replay.clear()              # the re-run went another way: call for real from here on
        if _local.watch is not None:
            _local.watch.apply_final()
        return callee
    replay.pop(0)
    if not replay and _local.watch is not None:
        _local.watch.apply_final()
    return result if isinstance(result, _Raised) else (lambda *_, **__: result)


def replays_outside_calls() -> bool:
    """Whether the current thread's re-run must answer calls the graph made at their call sites
    (which only the profiler's instrumented code can: the re-run is then a profiled one)."""
    return any(isinstance(expected, OutsideCall) for expected, _ in getattr(_local, "replay", None) or ())


def install():
    """Wrap TensorFlow's two entry points to Python functions, and answer replayed calls in
    instrumented code (once; they delegate to TensorFlow's own when nothing records or replays)."""
    if script_ops.FuncRegistry.__call__ is not _call:
        script_ops.FuncRegistry.__call__ = _call
        script_ops.py_func_common = _py_func_common
        recorders.CALL_HOOK = _intercept


def python_ops(graph) -> list:
    """(op type, token) of every op of `graph`, or of a loop or branch body in its library, that
    calls Python."""
    graph_def = graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return [(n.op, n.attr["token"].s.decode()) for n in nodes if n.op in PYTHON_OPS]


_NOTHING = contextlib.nullcontext(())       # a graph that calls no Python records nothing


def recording(tokens, watch=None):
    """Record the results of the Python calls of the ops `tokens` while the body runs; a call
    that changed state the graph reads after it (`watch`, a `unchanged.Watch`) fails the run."""
    return _recording(tokens, watch) if tokens else _NOTHING


@contextlib.contextmanager
def _recording(tokens, watch):
    log: list = []
    context = contextvars.copy_context()
    with _lock:
        for token in tokens:
            _logs[token] = (log, watch, context)
    try:
        yield log
    finally:
        with _lock:
            for token in tokens:
                _logs.pop(token, None)
        _context_back(context)


@contextlib.contextmanager
def replaying(log, watch=None):
    """Python calls on this thread return the recorded results of `log`, in order, while they
    match; then they run.  The outside state `watch` saw is put back as the run found it, and
    as the run left it when the last recorded call is replayed."""
    if log and watch is not None:
        watch.finish()
        watch.rewind()
    _local.replay, _local.watch = list(log), watch
    try:
        yield
    finally:
        if _local.replay and watch is not None:     # the re-run ended before its last replayed call
            watch.apply_final()
        _local.replay = _local.watch = None
