"""The state of one graph build: the profile it reads, what it assumes.

A `BuildContext` is active while TensorFlow traces a builder.  The operators
ask it what the profile saw at a site, whether an
assumption may still be made (not relaxed, not after a write other than a
top-level variable write, not inside a general `tf.cond`/`tf.while_loop`),
and record assumptions, entry
checks on outside objects, and deferred prints.
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
from typing import Protocol

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry

from codegen.assumptions import Assumption, Check, Kind, Source, check_kind
from codegen.errors import Reason, StagingError
from codegen.operators.heap import Heap

_LOCAL = threading.local()
_CONTROL_FLOW = ("While", "If", "Case", "StatefulPartitionedCall", "PartitionedCall")


def _only_reads(op) -> bool:
    """Whether a `tf.while_loop` or `tf.cond` op's bodies hold no write: only ops of
    `_READ_ONLY_STATEFUL` among their stateful ones, in nested bodies too."""
    if op.type not in ("While", "If", "StatelessIf"):
        return False
    graph, pending, seen = op.graph, [], set()
    for value in op.node_def.attr.values():
        pending += [value.func.name] if value.func.name else [f.name for f in value.list.func]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        fn = graph._get_function(name)                  # noqa: SLF001 - the graph's function library
        if fn is None:
            return False
        for node in fn.definition.node_def:
            if node.op in _CONTROL_FLOW:
                for value in node.attr.values():
                    pending += [value.func.name] if value.func.name else [f.name for f in value.list.func]
            elif _is_stateful(node.op) and node.op not in _READ_ONLY_STATEFUL:
                return False
    return True


def _is_stateful(op_type: str) -> bool:
    op_def = op_def_registry.get(op_type)
    return op_def is None or op_def.is_stateful

# Stateful op types that write nothing: an in-graph guard may follow them.
_READ_ONLY_STATEFUL = {"Assert", "VarHandleOp", "ReadVariableOp", "Placeholder", "PrintV2",
                       "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
                       "NoOp", "VarIsInitializedOp",
                       # `tf.numpy_function`: a run that fails after it replays its recorded result
                       # (`codegen.graph.python_calls`), so a guard may follow it
                       "PyFunc"}


# Op type prefixes of `tf.Variable` writes, and op types that only read a variable.
VARIABLE_WRITES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "ResourceScatter",
                   "ResourceApply", "ResourceSparseApply")
VARIABLE_READS = ("ReadVariableOp", "ResourceGather", "VariableShape", "VarHandleOp")


class Compiler(Protocol):
    """What the operators need from the rooms above them: converting a user function to inline
    it, and running a recursive cycle as a Call/Return machine (`codegen.services`)."""

    def convert(self, fn): ...

    def wants_machine(self, fn, args) -> bool: ...

    def run_machine(self, fn, calls: list, kind=None) -> list | None: ...

    def refused(self, fn) -> Reason | None: ...

    def dispatcher(self, name: str, by_class: dict): ...


def active() -> "BuildContext | None":
    """The build running on this thread, if any."""
    return getattr(_LOCAL, "ctx", None)


def current() -> "BuildContext":
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        raise RuntimeError("janus operators run only while a graph is being built")
    return ctx


@dataclasses.dataclass
class PrintEvent:
    args: list               # Python values, or ("tensor", output index)
    kwargs: dict
    printer: object = print  # `print`, or a function printing as `tf.print` does


class Frame:
    def __init__(self, converted):
        self.converted = converted


class BuildContext:
    def __init__(self, profile, relaxed: set, compiler: Compiler, outside: dict[int, Source], unroll_limit: int = 200,
                 relaxed_state_dims=None, relaxed_state_scalars=None, relaxed_state_lengths=()):
        self.profile = profile
        self.relaxed = relaxed                 # assumption keys never to make again
        self.compiler = compiler
        self.outside = dict(outside)           # id(obj) -> source path, objects guarded by identity
        self.keep = []                         # keeps outside objects alive while ids are used
        self.unroll_limit = unroll_limit
        self.assumptions: list[Assumption] = []
        self.checks: dict[tuple, Check] = {}
        self.prints: list[PrintEvent] = []
        self.library_before: dict = {}         # id -> (library object, its attributes before a call)
        self.print_tensors: list = []
        self.print_options = np.get_printoptions()    # NumPy's, as the call that builds found them
        self.printed_objects: dict = {}        # id or source -> an object a print replays (`printing.not_printed`)
        self.jit_compile = False               # the function asks for XLA (`codegen.recursion.linear_xla`)
        self.deferred_checks: list = []        # (pred, text, Assert op name) read after an XLA run (`guards.check`)
        self.bounded_functions: set = set()    # functions janus compiles whose loops have static bounds
        self._stacks: dict = {}                # thread id -> (frames, open dependencies), see on_thread
        self._frames: list[Frame] = []
        self._dependencies: list = []
        self.general_depth = 0
        self.foreign_callbacks = 0             # program functions TensorFlow called on its own thread
        self.plain_traces = 0                  # >0 while one runs that TensorFlow traces without AutoGraph
        self.outer_graph = None                # the FuncGraph being built (fed state is captured there)
        self.heap = Heap(self.outside)
        self.relaxed_state_dims = relaxed_state_dims or {}      # source -> dims fed as None
        self.relaxed_state_scalars = relaxed_state_scalars or {}  # source -> dtype a scalar is fed as
        self.relaxed_state_lengths = set(relaxed_state_lengths)   # containers whose len() is fed
        self.in_machine = 0                    # >0 while building a Call/Return machine
        self.vectorized = 0                    # >0 while tracing an element run on many items at once
        self.dry_run = 0                       # >0 while typing machine blocks in a scratch graph
        self.numpy_scalars_fed = False         # a NumPy scalar argument is fed as a tensor in this build
        self.int_checks = None                 # while a machine block is built: its Python ints' range checks
        self.int_checks_depth = 0              # `general_depth` where that block's own statements run
        self.int_sources: list = []            # and the tensors its `WeakNumber`s hold Python ints in
        self.python_scan: dict = {}            # id(graph) -> (ops scanned, an op calling Python found)
        self.outside_reads: dict = {}          # (access, id(holder), name) -> state.OutsideRead
        self.observers: list = []              # (callback, [tensors]) called with the outputs after success
        self.recursion: list = []              # recursive cycles run as machines in this graph
        self.none_reads: dict = {}             # id -> (value, its `is None` test): tree reads None on some nodes
        self.absent_reads: dict = {}           # tree schema -> attribute names read as absent on every node,
        #                                        and (name, function) of the methods the graph calls on them
        self.settings_checked: set = set()     # ids of objects whose settings are checked (`library_settings`)
        self.raw_handles: list = []            # resource handles read as outside state (captured as they are)
        self._scanned = 0
        self._wrote = False

    # -- activation -------------------------------------------------------------------
    def __enter__(self):
        self._previous = getattr(_LOCAL, "ctx", None)
        _LOCAL.ctx = self
        return self

    def __exit__(self, *exc):
        while self.open_dependencies:
            self.open_dependencies.pop().__exit__(None, None, None)
        _LOCAL.ctx = self._previous

    @property
    def frames(self) -> list[Frame]:
        """The user functions being converted on this thread, innermost last."""
        return self._stacks.get(threading.get_ident(), (self._frames,))[0]

    @property
    def open_dependencies(self) -> list:
        """The control-dependency scopes the guards built on this thread opened."""
        return self._stacks.get(threading.get_ident(), (None, self._dependencies))[1]

    def wait_for(self, ops) -> None:
        """Every op built after this on this thread, until the build ends, waits for `ops`."""
        deps = tf.control_dependencies(list(ops))
        deps.__enter__()
        self.open_dependencies.append(deps)

    def guard_ops(self) -> list:
        """The guards every op built now on this thread waits for."""
        return [op for deps in self.open_dependencies for op in deps.control_inputs]

    @contextlib.contextmanager
    def on_thread(self, frames: list, guards: list):
        """Continue this build on the calling thread (a replica thread of `strategy.run`, which
        TensorFlow runs one at a time, handing over at `merge_call`): its own stack of frames,
        starting from `frames`, and of guard scopes, starting with one on `guards` so its ops wait
        for the guards built before it.  Yields the list that receives the guard ops it builds."""
        thread = threading.get_ident()
        previous = getattr(_LOCAL, "ctx", None)
        opened = [tf.control_dependencies(guards)] if guards else []
        for deps in opened:
            deps.__enter__()
        self._stacks[thread] = (list(frames), opened)
        _LOCAL.ctx = self
        built: list = []
        try:
            yield built
        finally:
            built.extend(op for deps in opened[1 if guards else 0:] for op in deps.control_inputs)
            while opened:
                opened.pop().__exit__(None, None, None)
            del self._stacks[thread]
            _LOCAL.ctx = previous

    # -- where we are -----------------------------------------------------------------
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def user_line(self) -> str:
        """The user's file:line being traced now (builders run with the user's file and lines)."""
        if not self.frames:
            return ""
        filename = self.frame.converted.filename
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != filename:
            frame = frame.f_back
        return f"{filename}:{frame.f_lineno}" if frame is not None else filename

    def where(self, lineno) -> str:
        return f"{self.frame.converted.filename}:{lineno}"

    def site(self, site_id):
        ref = self.frame.converted.sites[site_id]
        fprof = self.profile.functions.get(self.frame.converted.key) if self.profile else None
        return ref, (fprof.site(ref.kind, ref.span) if fprof else None)

    # -- may we speculate here? ---------------------------------------------------------
    def writes_emitted(self) -> bool:
        """Whether the graph being built already holds a write that a failed check could leave
        applied (scans new ops only).  A top-level variable write is not one: it waits for the
        check, or is put back when the check fails (`codegen.graph.print_order`)."""
        if self._wrote:
            return True
        ops = tf.compat.v1.get_default_graph().get_operations()
        for op in ops[self._scanned:]:
            if op._is_stateful and op.type not in _READ_ONLY_STATEFUL and not op.type.startswith(VARIABLE_WRITES) \
                    and not _only_reads(op):
                self._wrote = True
                break
        self._scanned = len(ops)
        return self._wrote

    def may_speculate(self, key) -> bool:
        return self.general_depth == 0 and key not in self.relaxed and not self.writes_emitted()

    def assumption_key(self, kind: Kind, ref) -> tuple:
        return (self.frame.converted.key, kind.name, ref.span)

    # -- recording ---------------------------------------------------------------------
    def assume(self, kind: Kind, key, source: str, expected, where: str, **fields) -> Assumption:
        a = Assumption(len(self.assumptions), kind, key, source, expected, where, **fields)
        self.assumptions.append(a)
        return a

    def check(self, access: str, holder, name: str, value, source: Source, lineno=None, kind=None, expected=None):
        """Record that the entry guard must re-check this build-time read of an outside value
        (`kind` None: chosen from the value by `check_kind`)."""
        if kind is None:
            kind = check_kind(value)
            if kind is None:
                return
            expected = value
        key = (access, id(holder), name)
        if key not in self.checks:
            self.keep.append(holder)
            where = self.where(lineno) if (lineno and self.frames) else ""
            self.checks[key] = Check(kind, source, expected, holder, name, access, where)
        if kind is Kind.ID_MATCH and id(value) not in self.outside:
            self.outside[id(value)] = source
            self.keep.append(value)

    def check_length(self, shadow):
        """A container of which only the length was read: its length must be the same at entry."""
        access, holder, name = shadow.holder
        key = ("length", id(holder), name)
        if key not in self.checks:
            self.checks[key] = Check(Kind.LENGTH_MATCH, shadow.source, len(shadow.snapshot), holder, name, access)

    def check_set(self, access, holder, name, value, source):
        """A set the build read: it must hold the same items at entry."""
        key = ("items", id(holder), name)
        if key not in self.checks:
            self.checks[key] = Check(Kind.ITEMS_MATCH, source, frozenset(value), holder, name, access)

    def check_items(self, shadow):
        """A container whose contents the build read: its items must be the same at entry."""
        access, holder, name = shadow.holder
        key = ("items", id(holder), name)
        if key not in self.checks:
            self.checks[key] = Check(Kind.ITEMS_MATCH, shadow.source, shadow.snapshot, holder, name, access)

    def observe(self, callback, tensors):
        """Hand `tensors` out of the graph; `callback(*outputs)` runs after a successful call.  Only
        from the function's own graph: tensors made inside a branch or loop body cannot leave it
        (what they would report, a machine's step counts, is then not reported)."""
        tensors = list(tensors)
        if all(not hasattr(t, "graph") or t.graph is self.outer_graph for t in tensors):
            self.observers.append((callback, tensors))

    def refuse_plain_truth(self, what: str):
        """`what` (a tensor's truth, its Python value) inside a function TensorFlow traces without
        AutoGraph: eager's trace raises there (a graph tensor has no Python value), janus's
        converted code would compute it.  The build stops; the call raises in Python, as eager."""
        if self.plain_traces:
            self.fail("callback-autograph-off", f"{what} in a function TensorFlow traces without AutoGraph "
                      "(`tf.vectorized_map`, `tf.function(autograph=False)`): eager raises there",
                      "use tf.cond or tf.where inside that function")

    def fail(self, kind: str, explanation: str, hint: str = "", lineno=None):
        where = self.where(lineno) if (lineno and self.frames) else (self.user_line() if self.frames else "")
        raise StagingError(Reason(kind, where, explanation, hint))
