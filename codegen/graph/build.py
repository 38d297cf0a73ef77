"""Traces a builder into a TensorFlow graph for one argument signature.

The graph is built with TensorFlow's own machinery (`tf.function(...,
autograph=False).get_concrete_function(specs)`), so variable capture,
gradients and XLA work as they do for `tf.function`.  The wrapper rebuilds
the user's arguments from the graph's inputs, runs the builder under a
`BuildContext`, and returns, in this order, the result's tensors, the values
of deferred writes (`codegen.graph.writeback`) and the tensors deferred prints
need.  Python values in the result stay in its template."""
from __future__ import annotations

import dataclasses
import inspect
import re
import time

import numpy as np
import tensorflow as tf

from profiler.library import is_library_file

from codegen import faults
from codegen.assumptions import GUARD_MARK, Kind
from codegen.errors import ConversionError, JanusError, NeedsPythonValue, Reason, ReplicaSync, StagingError
from codegen.graph import derivatives, python_calls, random_ops, template_sharing, variable_writes, writeback
from codegen.graph.arguments import no_new_variables, register_argument_containers
from codegen.graph.direct_call import DirectCall
from codegen.graph.entry_guard import compile_entry_guard
from codegen.graph.held_weakly import weaken
from codegen.graph.print_order import (order_prints_after_failures, order_python_after_failures,
                                      order_python_among_variables, order_writes_after_failures)
from codegen.graph.quiet_log import QUIET
from codegen.graph.signature import Feed, Signature, components, rebuild
from codegen.graph.xla import HINTS, TRACE_FAILED, compile_with_xla, first_failed, traced_for_xla
from codegen.operators import failing_ops, library_state, unchanged, unconverted
from codegen.operators.call_time import Feeds, forget_fed
from codegen.operators.printing import replay_prints
from codegen.operators.calls import every_argument
from codegen.operators.context import BuildContext, Frame
from codegen.operators.arrays import PyArray
from codegen.operators.numbers import PyNumber
from codegen.operators.state import calls_python_so_far
from codegen.operators.trees import Pointer, Tables
from codegen.operators.values import EAGER
from codegen.services import SERVICES

_MUTABLE = (list, dict, set, tuple, np.ndarray)
_GUARD_MARK = re.compile(rf"{re.escape(GUARD_MARK)}(\d+):")


@dataclasses.dataclass
class GraphArtifact:
    signature: Signature
    concrete: object                  # tf ConcreteFunction
    entry_guard: object               # generated function: (args, kwargs) -> inputs | None
    rejected_by: object               # its twin: (args, kwargs) -> the first failing check's description | None
    assumptions: list
    checks: list
    result_template: object
    n_result: int
    plan: list                        # deferred writes, applied after a successful run
    n_writes: int
    prints: list
    op_count: int
    build_seconds: float
    state_reads: list
    state_writes: list
    n_print_tensors: int = 0
    observers: list = dataclasses.field(default_factory=list)    # (callback, number of outputs)
    recursion: list = dataclasses.field(default_factory=list)    # machine cycles in this graph
    written_variables: list = dataclasses.field(default_factory=list)   # tf.Variables a run may write
    restored_variables: list = dataclasses.field(default_factory=list)  # those a write may change before a failure
    xla: str = ""                     # under jit_compile: "on", or why the graph runs without XLA
    python_ops: list = dataclasses.field(default_factory=list)   # (type, token) of ops that call Python
    unchanged: list = dataclasses.field(default_factory=list)    # outside reads a Python call may change
    unchanged_arguments: tuple | None = None   # (message, forced) when argument containers are watched
    variables_before_python: list = dataclasses.field(default_factory=list)   # used before its first Python call
    checks_at: int = -1               # the output holding the outcomes of the checks XLA would drop
    check_texts: list = dataclasses.field(default_factory=list)   # their messages, read after an XLA run
    feeds: Feeds | None = None        # how the values read at the call are made (None: TensorFlow's way)
    weak: list = dataclasses.field(default_factory=list)   # what it holds weakly (`held_weakly`), a run strongly
    _direct: DirectCall | None = None  # the concrete function's kernel call (`run`)

    @property
    def xla_hint(self) -> str:
        """What the program can change so that this graph compiles with XLA."""
        return TRACE_FAILED if self.xla.startswith("traced for XLA") else HINTS.get(self.xla, "")

    @property
    def calls_python(self) -> bool:
        return bool(self.python_ops)

    @property
    def replays_python(self) -> bool:
        """Its Python calls can be recorded and replayed (no `tf.py_function`; see python_calls)."""
        return all(kind != "EagerPyFunc" for kind, _ in self.python_ops)

    def __post_init__(self):
        self.python_tokens = tuple(token for _, token in self.python_ops)   # read on every run
        self._snapshot = variable_writes.Snapshot(self.restored_variables)
        self._all = variable_writes.Snapshot(self.written_variables)

    def watch(self, args, kwargs):
        """The outside state this run reads, and the containers among its arguments, as a Python
        call it makes may change them (`codegen.operators.unchanged.Watch`)."""
        reads = list(self.unchanged)
        if self.unchanged_arguments is not None:
            message, forced = self.unchanged_arguments
            reads += [((lambda v=v: v), None, message, forced) for v in (*args, *kwargs.values())
                      if isinstance(v, _MUTABLE)]
        return unchanged.Watch(reads, self.variables_before_python) if reads or self.variables_before_python \
            else None

    def failed_assumption(self, exc: Exception):
        """The assumption whose in-graph guard stopped this run, or None for any other error.

        TensorFlow reports a failed Assert only as text (the error carries no node or payload
        in eager mode), so the guard's own message, `Assumption.message()`, marks the id; it is
        read here, in one place, and mapped to this graph's `Assumption`."""
        if not isinstance(exc, tf.errors.InvalidArgumentError):
            return None
        match = _GUARD_MARK.search(getattr(exc, "message", "") or str(exc))
        if match is None or int(match.group(1)) >= len(self.assumptions):
            return None
        return self.assumptions[int(match.group(1))]

    def differentiated_through(self, inputs) -> bool:
        """Whether the caller takes derivatives of this run TensorFlow would take through
        functions of its own (`codegen.graph.derivatives`): such a call runs in Python."""
        return derivatives.differentiated_through(inputs, self.concrete)

    def run(self, inputs):
        """Run the graph; returns all outputs. Raises what the graph raises, after restoring the
        variables it wrote (an op failing midway leaves the state the call started with)."""
        # (A graph whose Python calls cannot be replayed raises its failure as it is, with the
        # writes made by then: running the call again would run that Python twice.)
        restore = self.restored_variables and self.replays_python
        saved = self._snapshot.take() if restore else None
        try:
            with QUIET:                     # a failing guard is janus's business, not the user's log
                if all(type(x) is EAGER for x in inputs):
                    # What the call binds and converts is already done: the inputs are the graph's
                    # flat inputs, in order (saves TensorFlow's argument binding, ~50 us a call).
                    feeds = self.feeds.values() if self.feeds is not None and tf.executing_eagerly() \
                        else self.concrete.captured_inputs
                    outs = self._direct_call(inputs, feeds)
                else:
                    outs = self.concrete(*inputs)
            if self.check_texts:
                failed = first_failed(outs[self.checks_at], self.check_texts)
                if failed is not None:
                    raise failed
        except Exception:
            if saved is not None:
                self._snapshot.restore(saved)
            forget_fed(self.concrete)
            raise
        return list(outs) if isinstance(outs, (list, tuple)) else [outs]

    def _direct_call(self, inputs, feeds):
        """The graph's flat outputs: its kernel called directly where nothing records it."""
        if self._direct is None or self._direct.concrete is not self.concrete:     # (XLA may replace it)
            self._direct = DirectCall(self.concrete, variants=not self.python_ops and self.xla != "on")
        outs = self._direct([*inputs, *feeds])
        return self.concrete._call_flat(inputs, feeds) if outs is None else outs

    @property
    def executor(self) -> str:
        """Which TensorFlow executor runs the graph where no tape records it, and why."""
        return "default executor (no run yet)" if self._direct is None else self._direct.executor

    def undo(self, saved):
        """Restore what `snapshot_variables` saved (a run treated as failed after it ran)."""
        self._all.restore(saved)

    def snapshot_variables(self):
        return self._all.take()

    def commit(self, outs, args, kwargs):
        """After success: apply the writes, replay prints, return the result."""
        n, w = self.n_result, self.n_writes
        made = {}          # the one object of each template shared between places (see template_sharing.share)
        writeback.apply(self.plan, outs, args, kwargs, made)      # templates index the shared output list
        n_prints = self.n_print_tensors
        replay_prints(self.prints, outs[n + w:n + w + n_prints])
        rest = outs[n + w + n_prints:]
        for callback, count in self.observers:
            callback(*rest[:count])
            rest = rest[count:]
        return writeback.unflatten(self.result_template, outs, args, kwargs, made)


def build_graph(converted, sig: Signature, profile, relaxed: set, outside: dict, jit_compile=False,
                **options) -> GraphArtifact:
    """The graph of `converted` for `sig`.  Under `jit_compile` it is traced as
    `tf.function(jit_compile=True)` traces (TensorFlow then builds the gradients of `tf.cond` and
    `tf.while_loop` in forms XLA compiles); a program that fails so (a loop's gradient XLA cannot
    bound) is traced again to run without XLA."""
    if not jit_compile:
        return _build_graph(converted, sig, profile, relaxed, outside, False, **options)
    try:
        return _build_graph(converted, sig, profile, relaxed, outside, True, **options)
    except Exception as exc:                      # noqa: BLE001 - traced again below, which raises
        artifact = _build_graph(converted, sig, profile, relaxed, outside, False, **options)
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        artifact.xla = f"traced for XLA it failed ({why})"
        return artifact


def _build_graph(converted, sig: Signature, profile, relaxed: set, outside: dict, jit_compile: bool,
                 unroll_limit=200, relaxed_state_dims=None, relaxed_state_scalars=None,
                 relaxed_state_lengths=()) -> GraphArtifact:
    ctx = BuildContext(profile, relaxed, SERVICES, outside, unroll_limit, relaxed_state_dims,
                       relaxed_state_scalars, relaxed_state_lengths)
    ctx.jit_compile = jit_compile
    holder = {}

    def wrapper(*inputs):
        ctx.outer_graph = tf.compat.v1.get_default_graph()
        values = []
        for leaf in sig.leaves:        # a tree passed twice is one stand-in, as it is one object
            values.append(values[leaf.same_as] if leaf.kind is Feed.TREE and leaf.same_as is not None
                          else _leaf_value(leaf, inputs))
        holder["values"] = values
        ctx.numpy_scalars_fed = any(leaf.kind is Feed.SCALAR_TENSOR and issubclass(leaf.value, np.generic)
                                    for leaf in sig.leaves)
        args = rebuild(("list", sig.template[0]), values)
        kwargs = {k: rebuild(t, values) for k, t in sig.template[1].items()}
        with ctx, unconverted.watch():
            for i, a in enumerate(args):
                register_argument_containers(ctx.heap, a, ("args", i))
            for k, a in kwargs.items():
                register_argument_containers(ctx.heap, a, ("kwargs", k))
            ctx.frames.append(Frame(converted))
            with tf.variable_creator_scope(no_new_variables):
                result = _call_top(ctx, converted, args, kwargs)
            ctx.frames.pop()
            holder["unchanged"], holder["arguments"] = _watched_reads(ctx, sig, converted.filename)
            _only_appended(ctx.heap, sig, values, converted.filename)
            tensors: list = []
            holder["template"] = writeback.flatten(result, tensors, ctx.heap)
            holder["n"] = len(tensors)
            holder["template"], holder["plan"] = template_sharing.share(holder["template"], writeback.plan(ctx, tensors))
            holder["writes"] = len(tensors) - holder["n"]
        observed = [t for _, ts in ctx.observers for t in ts]
        checked = [tf.stack([pred for pred, _, _ in ctx.deferred_checks])] if ctx.deferred_checks else []
        holder["checks_at"] = len(tensors) + len(ctx.print_tensors) + len(observed) if checked else -1
        outputs = tensors + list(ctx.print_tensors) + observed + checked
        outputs += failing_ops.unused_failing(tf.compat.v1.get_default_graph(), outputs)   # (eager runs them all)
        order_prints_after_failures(tf.compat.v1.get_default_graph(), converted.filename)
        order_python_after_failures(tf.compat.v1.get_default_graph())
        order_python_among_variables(tf.compat.v1.get_default_graph())
        order_writes_after_failures(tf.compat.v1.get_default_graph(),
                                    variable_writes.write_ops(tf.compat.v1.get_default_graph()))
        return outputs

    start = time.perf_counter()
    fn = tf.function(traced_for_xla(wrapper) if jit_compile else wrapper, autograph=False)
    try:
        with library_state.variable_scope_kept():
            concrete = fn.get_concrete_function(*sig.specs())
    except BaseException as exc:                  # (also a program's own SystemExit on a side no call took)
        library_state.restore(ctx)
        if isinstance(exc, (JanusError, KeyboardInterrupt, GeneratorExit)):
            raise
        raise _staging_error(exc, converted) from exc
    elapsed = time.perf_counter() - start
    sig, checks, weak = weaken(sig, list(ctx.checks.values()), holder)      # (`codegen.graph.held_weakly`)
    guard, rejected_by = compile_entry_guard(sig, checks, _used_columns(concrete, sig, ctx.absent_reads),
                                             _followed_columns(sig, holder["values"]),
                                             bool(converted.code.co_flags & inspect.CO_VARKEYWORDS))
    artifact = GraphArtifact(sig, concrete, guard, rejected_by, ctx.assumptions, checks, holder["template"],
                             holder["n"], holder["plan"], holder["writes"], ctx.prints,
                             len(concrete.graph.get_operations()), elapsed, list(ctx.heap.reads),
                             list(ctx.heap.writes), len(ctx.print_tensors),
                             [(cb, len(ts)) for cb, ts in ctx.observers], list(dict.fromkeys(ctx.recursion)),
                             variable_writes.written_variables(concrete), _restored_variables(concrete),
                             python_ops=python_calls.python_ops(concrete.graph), unchanged=holder["unchanged"],
                             unchanged_arguments=holder["arguments"], checks_at=holder["checks_at"], weak=weak)
    _refuse_what_a_graph_cannot_repeat(ctx, artifact, converted.filename)
    if artifact.calls_python:
        python_calls.install()
        artifact.variables_before_python = variable_writes.read_before_python(concrete)
    if jit_compile:
        compile_with_xla(artifact, sig, ctx.deferred_checks, ctx.bounded_functions)
    artifact.feeds = Feeds.of(artifact.concrete, concrete.graph)     # (the traced graph made the feeds)
    return artifact


def _refuse_what_a_graph_cannot_repeat(ctx, artifact, filename):
    """The build fails where every run of the graph could not do what eager does on every call:
    outside state read after a `tf.py_function` (no check runs after one; code is let be), and
    a seeded stateful random op, a table or queue the call makes (`codegen.graph.random_ops`)."""
    late = [r for r in ctx.outside_reads.values() if r.when != "early" and not r.code]
    if (late or artifact.unchanged_arguments) and not artifact.replays_python:
        raise StagingError(Reason("python-state", late[0].where if late else filename,
                                  f"`{late[0].source if late else 'an argument'}` is read after a tf.py_function "
                                  "call, whose Python may change it while the graph runs",
                                  "use tf.numpy_function, or pass it as an argument"))
    if found := random_ops.unrepeatable(artifact.concrete.graph):
        raise StagingError(Reason(found[0], filename, found[1], found[2]))
    if variable_writes.writes_unknown(artifact.concrete, ctx.raw_handles):
        raise StagingError(Reason("resource-write", filename, "a resource handle kept outside the function is "
                                  "written before an op that may fail (a failed run runs again in Python, and the "
                                  "write would happen twice), or used beside another variable while one is written "
                                  "(it may be a second handle to it, which the graph would not order with the "
                                  "first)", "write through the variable itself (`v.assign_add`)"))


def _watched_reads(ctx, sig: Signature, filename: str) -> tuple:
    """For a graph that calls Python: each outside read as `unchanged.Watch` takes it, and the
    message for the arguments' containers (or None).  A read the calls may change before it (after
    the first call, or in a loop or branch body) gets an `UNCHANGED` assumption, and so do the
    arguments' lists, dicts, sets and arrays; a read before any call is watched for a failed
    run's re-run."""
    if not calls_python_so_far(ctx):
        return [], None
    reads, made = [], {}
    for late in ctx.outside_reads.values():
        if late.refused(ctx.relaxed):
            # (a loop body reads the state once per trace, before a call its Python may change)
            raise StagingError(Reason(
                "python-state", late.where, f"`{late.source}` is read {_WHERE[late.when]} a graph that calls "
                "Python (tf.numpy_function), whose Python may change it while the graph runs",
                "read it outside the loop, or pass it as an argument" if late.when == "loop"
                else "pass it as an argument"))
        if late.when == "early":
            reads.append((late.read, late.write, None, False))
            continue
        if late.key not in made:
            made[late.key] = _unchanged(ctx, late.key, f"`{late.source}`", late.where)
        a = made[late.key]
        reads.append((late.read, late.write, f"{a.message()}; the Python the graph called changed it",
                      faults.matches(a)))
    arguments = None
    if _has_containers(sig):
        key = ("unchanged", "arguments")
        if key in ctx.relaxed:
            raise StagingError(Reason("python-state", filename, "a Python function the graph calls changed a "
                                      "list, dict or array passed as an argument",
                                      "pass it a copy, or return what it computes"))
        a = _unchanged(ctx, key, "the arguments' lists, dicts, sets and arrays", filename)
        arguments = (f"{a.message()}; the Python the graph called changed it", faults.matches(a))
    return reads, arguments


_WHERE = {"early": "before the tf.numpy_function call of", "loop": "inside a tensor loop or branch of",
          "late": "after the tf.numpy_function call of"}


def _unchanged(ctx, key, source, where):
    return ctx.assume(Kind.UNCHANGED, key, source, "unchanged", where, fallback="python-state")


def _has_containers(sig: Signature) -> bool:
    """Whether some argument is, or holds, a list, dict, set or NumPy array."""
    def walk(t):
        if t[0] == "leaf":
            leaf = sig.leaves[t[1]]
            return leaf.kind is Feed.LIST or leaf.value is np.ndarray or isinstance(leaf.value, (list, dict, set))
        return t[0] in ("list", "dict") or any(walk(x) for x in t[1])
    return any(walk(t) for t in sig.template[0]) or any(walk(t) for t in sig.template[1].values())


def _used_columns(concrete, sig: Signature, absent: dict) -> dict:
    """For each tree argument leaf, the names of its table columns some op of the graph reads:
    the entry guard computes only those (a column nothing reads is fed empty); and the names the
    build read as absent on every node of a tree of its schema (`absent`), which no node may have."""
    placeholders = concrete.graph.inputs
    returned = {t.ref() for t in concrete.graph.outputs}
    used = {}
    for i, leaf in enumerate(sig.leaves):
        if leaf.kind in (Feed.TREE, Feed.FOREST):
            schema = leaf.value if leaf.kind is Feed.TREE else leaf.value.schema
            fed = placeholders[leaf.input_index:leaf.input_index + len(schema.columns)]
            used[i] = frozenset(c.name for c, ph in zip(schema.columns, fed)
                                if ph.consumers() or ph.ref() in returned) | absent.get(schema, frozenset())
    return used


def _followed_columns(sig: Signature, values) -> dict:
    """For each tree argument leaf a recursion machine ran on, the child columns its calls go
    through: only those must form no cycle at entry (a parent pointer no call follows may)."""
    followed = {}
    for i, (leaf, value) in enumerate(zip(sig.leaves, values)):
        pointer = value if leaf.kind is Feed.TREE else (value[0] if leaf.kind is Feed.FOREST and value else None)
        if isinstance(pointer, Pointer) and pointer.tables.followed is not None:
            followed[i] = frozenset(pointer.tables.followed)
    return followed


def _restored_variables(concrete) -> list:
    """The variables a run must snapshot: those a write may change before an op fails."""
    late = failing_ops.writes_before_failures(concrete.graph, variable_writes.write_ops(concrete.graph))
    return variable_writes.written_variables(concrete, late) if late else []


def _only_appended(heap, sig, values, filename):
    """A list fed by identity (its length varies between calls) may only be appended to: the
    graph has none of its items, and writes back only what it appended."""
    for leaf, value in zip(sig.leaves, values):
        sh = heap.by_copy.get(id(value)) if leaf.kind is Feed.LIST else None
        if sh is not None and (sh.read or sh.length_read or sh.mutated):
            raise StagingError(Reason("list-read", filename, f"{leaf.path} changes length between calls and the "
                                      "graph reads or rearranges it", "pass its items as a tensor"))


def _leaf_value(leaf, inputs):
    if leaf.kind is Feed.LIST:
        return list(leaf.value)     # the items the caller's list had at build time: never read
    if leaf.kind is Feed.TREE:
        n = len(leaf.value.columns)
        return Pointer(tf.constant(0), Tables(leaf.value, inputs[leaf.input_index:leaf.input_index + n]))
    if leaf.kind is Feed.FOREST:
        n = len(leaf.value.schema.columns)
        tables = Tables(leaf.value.schema, inputs[leaf.input_index:leaf.input_index + n])
        roots = tf.unstack(inputs[leaf.input_index + n], num=leaf.value.size)    # one op, not a slice each
        pointers = []
        for i in range(leaf.value.size):
            same = leaf.value.aliases[i] if leaf.value.aliases else i
            pointers.append(pointers[same] if same != i else Pointer(roots[i], tables))
        return leaf.value.container(pointers)
    if leaf.kind is Feed.COMPOSITE:
        n = len(components(leaf.value))
        return tf.nest.pack_sequence_as(leaf.value, list(inputs[leaf.input_index:leaf.input_index + n]),
                                        expand_composites=True)
    if leaf.kind is Feed.SCALAR_TENSOR and issubclass(leaf.value, np.generic):
        return PyArray(inputs[leaf.input_index], scalar=True)     # computes as NumPy's scalar does
    if leaf.kind is Feed.SCALAR_TENSOR:
        return PyNumber(inputs[leaf.input_index], leaf.value, bounded=leaf.value is int)   # (entry_guard)
    if leaf.kind is Feed.TENSOR and leaf.value is np.ndarray:
        return PyArray(inputs[leaf.input_index])
    return inputs[leaf.input_index] if leaf.input_index is not None else leaf.value


def _call_top(ctx, converted, args, kwargs):
    """The speculated function itself; a recursive one runs as a machine from its first call,
    speculated to return a Python number where the profiled calls did."""
    full = every_argument(converted.fn, args, kwargs)
    if full is not None and SERVICES.wants_machine(converted.fn, full):
        results = ctx.profile.results if ctx.profile is not None else None
        kind = None if results is None else "P" if results.only_numbers() else \
            "T" if results.only_tensors() else None
        return SERVICES.run_machine(converted.fn, [full], kind)[0]
    return converted.builder(*args, **kwargs)


def _staging_error(exc, converted) -> StagingError:
    """The builder failed while TensorFlow traced it: a typed error with the user's line.
    Python asking for a tensor's value is told apart by TensorFlow's words for it (the
    exception types are the generic TypeError/AttributeError)."""
    where = _user_frame(exc, converted)
    text = f"{type(exc).__name__}: {_first_line(exc)}"[:300]
    if ("SymbolicTensor" in text and any(f"{conv}()" in text for conv in ("float", "int", "bool", "len"))) \
            or "has no attribute 'numpy'" in text:
        return NeedsPythonValue(Reason("python-value-of-tensor", where, text))
    recursion = getattr(exc, "janus_recursion", None)
    if recursion is not None and _HELD.search(text):
        return ConversionError(Reason(
            "held-number", where, f"{recursion} runs Python code on a value its machine holds in the graph, which "
            f"Python code cannot take there ({text.split(' You can attempt')[0]})",
            "compute it with TensorFlow ops, or outside the recursion"))
    if "`merge_call` called while defining a new graph" in text:
        return ReplicaSync(Reason(
            "replica-sync", where, "the function runs on a replica thread of `strategy.run` and reaches a "
            "synchronisation point (`merge_call`, e.g. an optimizer's all-reduce); TensorFlow cannot build "
            "that into a graph of its own", "speculate the function that calls `strategy.run` instead"))
    return StagingError(Reason("staging", where, text, "this call runs imperatively"))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_HELD = re.compile(r"WeakNumber|SymbolicTensor|symbolic `tf\.Tensor`")    # the graph's stand-ins in an error


def _first_line(exc) -> str:
    """The error's own first line; Keras puts `Exception encountered when calling X.call().` above
    the message of the error it caught."""
    lines = [ln.strip() for ln in _ANSI.sub("", str(exc)).splitlines() if ln.strip()]
    own = [ln for ln in lines if not ln.startswith("Exception encountered when calling")]
    return (own or lines or [""])[0]


def _user_frame(exc, converted) -> str:
    """The innermost traceback frame in the user's code (any of their files, also behind a
    framework's frames, e.g. a Keras layer's `call`), following the exceptions it was raised
    from; the speculated function's file when there is none."""
    found = ""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            filename = tb.tb_frame.f_code.co_filename
            if not is_library_file(filename) and not filename.startswith("<"):
                found = f"{filename}:{tb.tb_lineno}"
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__
    return found or converted.filename
