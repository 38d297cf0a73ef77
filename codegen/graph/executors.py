"""Which TensorFlow executor runs a graph: the default one, or the single-threaded one, chosen
by timing both on the graph's first direct runs.

The default executor hands ready ops to a thread pool and waits for the pool to finish.  On a
graph of a few hundred small ops (one tree's inference) those hand-offs cost a third of the
run, and more when the pool's threads have gone to sleep (after a stretch of eager code).
The single-threaded executor runs every kernel on one thread, one after another in topological
order, with no hand-offs.  Where a graph holds large independent ops (a batch's gradients), the
pool is faster.  So janus measures.

The single-threaded executor refuses TensorFlow's low-level control flow (`Switch`, `Merge`,
`Enter`, ...), into which the default executor lowers every `If`, `While` and `Case`.  The
variant it runs is therefore a copy of the graph's function definitions, renamed, with every
such op, in the graph and in every body it runs, marked to stay functional.  The graph's own
ops run the kernels they run on the default executor; a body run on its own does not get
oneDNN's, so a body holding an op oneDNN rewrites (`_REWRITTEN`) would round differently, and
such a graph has no variant, nor has one whose body may wait for the thread pool (`_WAITS`),
one holding an op the single-threaded executor refuses, or one that calls Python.
"""
from __future__ import annotations

import os
import statistics
import threading

import tensorflow as tf

from codegen.operators.failing_ops import BODY_ATTRS

WARM = 2            # direct runs before the trials (a graph's first runs fill caches)
TRIALS = 5          # counted runs of each executor at most, alternating (the first run of each is not counted)
EARLY, CLEAR = 3, 0.85      # after EARLY runs of each, a median below CLEAR times the other's decides
MARGIN = 0.95       # the single-threaded executor is kept when its median is below this share
LONG = 0.05         # graphs whose first runs take longer (seconds) keep the default executor untried
SINGLE = "SINGLE_THREADED_EXECUTOR"

_LOWERED = {"While", "StatelessWhile", "If", "StatelessIf", "Case", "StatelessCase"}
_REFUSED = {"Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
            "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger", "Send", "Recv", "_Send", "_Recv",
            "_HostSend", "_HostRecv", "PyFunc", "PyFuncStateless", "EagerPyFunc", "VariableV2", "Variable",
            "TemporaryVariable"}
# Kernels that may wait for other work on TensorFlow's thread pool (they run bodies, read
# datasets or queues, or receive).  The single-threaded executor holds its thread while such a
# kernel waits; in a body, that is a second pool thread held, and with nested bodies the pool
# can run out: such a graph keeps the default executor.  The graph's own may be any (`RUNNING`).
_WAITS = ("If", "While", "Case", "PartitionedCall", "SymbolicGradient", "RemoteCall", "MapDefun", "Iterator",
          "Dataset", "Queue", "Barrier", "Stage", "Recv", "Collective", "Nccl", "Xla", "TPU")
# Ops whose kernel in a functional body differs from the one eager and the lowered graph run:
# oneDNN rewrites them in a graph, not in a body run on its own (a 1x8 `MatMul`, a `matvec`, a
# batched `MatMul`, `Softmax` round differently there, measured).  A body holding one keeps the
# default executor, as janus gives eager's bits.
_REWRITTEN = ("MatMul", "Softmax", "Conv", "Einsum", "BatchNorm", "Pool", "LRN", "Quantize", "Mkl", "Fused")
_SUFFIX = "_janus_single"
# One single-threaded run at a time in the process.  That executor runs an `If` or `While` by
# holding its thread (a pool thread) until the body, run on another pool thread, is done: two
# such runs at once can hold both threads of a 2-thread pool, each waiting for the other's
# body.  A call that finds the lock taken runs on the default executor.
RUNNING = threading.Lock()
_REGISTERED: dict = {}           # a graph's function name -> its variant's name, or why it has none
_BODIES_DONE: set = set()        # bodies whose variants are registered (a body runs in no other role)
_LOCK = threading.Lock()


def pool_threads() -> int:
    """The threads of TensorFlow's inter-op pool (its default: one per usable core)."""
    n = tf.config.threading.get_inter_op_parallelism_threads()
    if n > 0:
        return n
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    env = os.environ.get("TF_NUM_INTEROP_THREADS", "")       # (read by TensorFlow when the pool is made)
    return min(cores, int(env)) if env.strip().isdigit() and int(env) > 0 else cores


def variant(ctx, name: str):
    """The name of the single-threaded variant of function `name`, registered in the eager
    context `ctx`; or a string starting with "no:" saying why there is none."""
    if pool_threads() < 2:
        return "no: TensorFlow's thread pool has one thread, which a body's run would wait for"
    with _LOCK:
        if name in _REGISTERED:
            return _REGISTERED[name]
        order: list = []
        why = _collect(ctx, name, {}, order, top=True)
        if why is not None:
            _REGISTERED[name] = why
            return why
        for fdef in order:                      # bodies before the functions that run them
            ctx.add_function_def(fdef)
        _BODIES_DONE.update(fdef.signature.name[:-len(_SUFFIX)] for fdef in order[:-1])
        _REGISTERED[name] = order[-1].signature.name
        return _REGISTERED[name]


def _collect(ctx, name: str, seen: dict, order: list, top: bool = False):
    """Copy `name` and every function it runs into `order` (post-order), renamed and with their
    control flow kept functional; a reason string where one cannot run single-threaded.  `top`:
    the graph itself, whose kernels run on the caller's thread."""
    if not top and name in _REGISTERED:
        return f"no: {name} is a graph and a body"
    if name in seen or (not top and name in _BODIES_DONE):
        return None
    seen[name] = True
    try:
        fdef = ctx.get_function_def(name)
    except Exception:                           # noqa: BLE001 - a function only TensorFlow knows
        return f"no: the definition of {name} cannot be read"
    copy = type(fdef)()
    copy.CopyFrom(fdef)
    copy.signature.name = name + _SUFFIX
    for node in copy.node_def:
        if node.op in _REFUSED or node.op.startswith("Collective"):
            return f"no: {node.op} runs only on the default executor"
        if not top and any(word in node.op for word in _WAITS):
            return f"no: a body holds {node.op}, which may wait for TensorFlow's thread pool"
        if not top and any(word in node.op for word in _REWRITTEN):
            return f"no: a body holds {node.op}, which a body run on its own computes with another kernel"
        for attr in BODY_ATTRS.get(node.op, ()):
            value = node.attr.get(attr)
            funcs = [] if value is None else ([value.func] if value.HasField("func") else list(value.list.func))
            for func in funcs:
                why = _collect(ctx, func.name, seen, order)
                if why is not None:
                    return why
                func.name = func.name + _SUFFIX
        if node.op in _LOWERED:
            node.attr["_lower_using_switch_merge"].b = False
    order.append(copy)
    return None


class Choice:
    """The trials of one graph and, once they are over, the executor it keeps."""

    def __init__(self):
        self.variant_name: str | None = None    # the single-threaded variant, once made
        self.runs = 0
        self.warm: list = []
        self.times: dict = {False: [], True: []}
        self.single: bool | None = None         # None while trying
        self.note = "trying both executors"
        self._lock = threading.Lock()

    def next_run(self) -> tuple[bool, str | None]:
        """Whether this run uses the single-threaded executor, and what its time counts for:
        "warm" (a first run on the default executor), "trial", or None (not timed)."""
        if self.single is not None:
            return self.single, None
        with self._lock:
            k = self.runs - WARM
            self.runs += 1
        if k < 0:
            return False, "warm"
        return k % 2 == 1, "trial" if k >= 2 else None      # (the first run of each instantiates it)

    def record(self, single: bool, phase: str, seconds: float) -> None:
        with self._lock:
            if self.single is not None:
                return
            if phase == "warm":
                self.warm.append(seconds)
                if len(self.warm) >= WARM and min(self.warm) > LONG:       # (the first run instantiates)
                    self.single = False
                    self.note = (f"default executor (a run takes {min(self.warm) * 1e3:.0f} ms: "
                                 "the executor's own cost matters little there)")
                return
            self.times[single].append(seconds)
            n = min(len(t) for t in self.times.values())
            if n < EARLY:
                return
            default, alone = (statistics.median(self.times[k]) for k in (False, True))
            if n >= TRIALS or min(default, alone) < CLEAR * max(default, alone):
                self.single = alone < MARGIN * default
                self.note = (f"{'single-threaded' if self.single else 'default'} executor (median run "
                             f"{alone * 1e3:.2f} ms single-threaded, {default * 1e3:.2f} ms default)")

    def refuse(self, why: str) -> None:
        """The variant cannot run: the default executor from now on."""
        self.single, self.note = False, f"default executor ({why})"
