"""Run one generated program eagerly and under janus, each on its own fresh state, and compare
after every call: result, exception (type and message), printed text, and state (the box,
the module's list, dict and counter)."""
from __future__ import annotations

import collections
import gc
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import types
import weakref
from pathlib import Path

import numpy as np
import tensorflow as tf

import janus
from codegen.syntax import split
from tests.harness import run_capturing

# Generated statements are small: while a program runs, every run between graph breaks may be a
# segment, so the fuzzer checks the segment path (by default a run needs enough work to pay for
# a graph call).
FUZZ_MIN_WORK = 1

_DIR = Path(tempfile.mkdtemp(prefix="janus_fuzz_"))
# The programs import `toyenv`, a library that acts on the world (it lives under site-packages).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "janus" / "library" / "site-packages"))
COUNTER = {"programs": 0, "calls": 0, "graph_runs": 0}
# A long run appends its running totals to this file every 100 programs, so a run that is
# stopped early still tells how far it got.
_PROGRESS = os.environ.get("JANUS_FUZZ_PROGRESS")


def load(source: str, role: str):
    """The program as a module of its own (janus reads the source, so it lives in a file)."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    path = _DIR / f"fz_{digest}.py"
    if not path.exists():
        path.write_text(source)
    name = f"fz_{digest}_{role}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _same(a, b, where: str):
    if isinstance(a, (tf.Tensor, tf.Variable)) or isinstance(b, (tf.Tensor, tf.Variable)):
        assert isinstance(a, (tf.Tensor, tf.Variable)) and isinstance(b, (tf.Tensor, tf.Variable)), \
            f"{where}: eager {a!r}, janus {b!r}"
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: eager {a!r}, janus {b!r}"
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5, err_msg=where)
        return
    assert type(a) is type(b), f"{where}: eager {type(a).__name__} {a!r}, janus {type(b).__name__} {b!r}"
    if isinstance(a, (collections.deque, types.SimpleNamespace)):
        a, b = (list(a), list(b)) if isinstance(a, collections.deque) else (vars(a), vars(b))
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: eager {a!r}, janus {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: eager {a!r}, janus {b!r}"       # (in eager's order)
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (float, np.floating)):
        assert a == b or (a != a and b != b), f"{where}: eager {a!r}, janus {b!r}"
    else:
        assert a == b, f"{where}: eager {a!r}, janus {b!r}"


_NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?")


def _same_text(a: str, b: str) -> bool:
    """Equal printed text, where a graph kernel may round a float a tensor prints in its last
    digit (as under tf.function); everything else, Python numbers' text included, is exact."""
    if a == b:
        return True
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b) or "tf.Tensor" not in a:
        return False
    return all(np.isclose(float(x), float(y), rtol=1e-5, atol=1e-6)
               for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)))


def _state(module, box):
    return {"box.n": box.n, "box.t": box.t, "box.v": box.v.read_value(), "box.emb": box.emb.read_value(), "box.items": list(box.items),
            "box.hist": {hk: list(hv) for hk, hv in getattr(box, "hist", {}).items()},   # (older programs lack it)
            "box.losses": list(getattr(box, "losses", [])),
            "box.act": getattr(getattr(box, "act", None), "negative_slope", None),
            "box.acc": list(getattr(box, "acc", [])),
            "box.ds": repr(getattr(box, "ds", None)),
            "LOG": list(module.LOG), "LIMIT": list(module.LIMIT), "CAP": module.Node.CAP,
            "remember": [type(v).__name__ for v in module.remember.__defaults__[0]],
            "TABLE": dict(module.TABLE), "CONF": dict(module.CONF), "COUNT": module.COUNT, "Counter.n": module.Counter.n,
            "Box.hits": module.Box.hits, "box.lazy": None if box.lazy is None else box.lazy.read_value(),
            "ENV": (module.ENV.steps, module.ENV.state.tolist()), "RNG": module.RNG.getstate(),
            "SRC": module.SRC.calls, "BUF": (module.BUF.calls, module.BUF.array.tolist()),
            "SINK": module.SINK.getvalue(), "VAR": getattr(module, "VAR", tf.constant(0.0)).numpy()}


def run(source: str, calls: list) -> dict:
    """Compare eager and janus on `calls`; raises AssertionError naming the first difference."""
    eager_mod, janus_mod = load(source, "eager"), load(source, "janus")
    saved, split.MIN_WORK = split.MIN_WORK, FUZZ_MIN_WORK
    try:
        return _compare(eager_mod, janus_mod, calls)
    finally:                              # a long run keeps no program alive after it ran
        split.MIN_WORK = saved
        sys.modules.pop(eager_mod.__name__, None)
        sys.modules.pop(janus_mod.__name__, None)


def _mutate(mutation: str, module, box):
    """Apply `mutation` to `box`; the type of what it raised, or None.  A mutation may raise (a
    string assigned to a node whose `w` property adds to it): both sides must then raise alike."""
    try:
        exec(mutation, {"box": box, "tf": tf, "np": module.np, "LOG": module.LOG, "TABLE": module.TABLE,
                        "Node": module.Node, "Stale": module.Stale, "Doubling": module.Doubling,
                        "Plus": module.Plus, "SHOWN": module.SHOWN, "Shown": module.Shown, "CONF": module.CONF,
                        "scaled": module.scaled, "SCALER_CFG": getattr(module, "SCALER_CFG", {})})
    except Exception as exc:              # noqa: BLE001 - compared between the two sides
        return type(exc)
    return None


def watched(fn, outside=None):
    """`fn`, called under the caller's derivatives of its result's float tensors by `x`: nested
    tapes (a second derivative), one persistent tape taking both, or a forward accumulator.
    Returns the result and the derivatives (None where eager's tape finds no connection)."""
    if outside is None:
        return fn

    def call(x, *rest):
        floats = lambda r: [t for t in tf.nest.flatten(r) if isinstance(t, tf.Tensor) and t.dtype.is_floating]  # noqa: E731
        if outside == "accumulator":
            with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
                r = fn(x, *rest)
            return r, [acc.jvp(t) for t in floats(r)]
        with tf.GradientTape(persistent=outside == "persistent") as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                r = fn(x, *rest)
            tape = outer if outside == "persistent" else inner
            d1 = tape.gradient(floats(r), x) if floats(r) else None
        return r, d1, (outer.gradient(d1, x) if d1 is not None else None)
    return call


def _compare(eager_mod, janus_mod, calls: list) -> dict:
    # 1 to 3 profiled calls, chosen by the program: with one, graphs (and graph segments, which
    # profile after the function did) run within a short call sequence, on a one-call profile.
    digest = int(hashlib.sha1(janus_mod.__name__.encode()).hexdigest(), 16)
    profile_runs = 1 + digest % 3
    eager_box, janus_box = eager_mod.Box(), janus_mod.Box()
    spec = method = janus.speculate(janus_mod.f, profile_runs=profile_runs)
    if digest // 3 % 3 == 0 and hasattr(janus_mod, "Stepper"):     # (a stored program may predate it)
        # As a method of an instance, speculated in its class; the instance must go when dropped.
        janus_mod.Stepper.f = method = janus.speculate(janus_mod.Stepper.f, profile_runs=profile_runs)
        stepper = janus_mod.Stepper(janus_box)
        spec = lambda x, n, box, tree: stepper.f(x, n, tree)      # noqa: E731
    for i, (values, dtype, n, mutation, *outside) in enumerate(calls):
        if mutation:                      # state changed from outside, before this call
            raised = [_mutate(mutation, module, box)
                      for module, box in ((eager_mod, eager_box), (janus_mod, janus_box))]
            assert raised[0] == raised[1], f"call {i}: the mutation {mutation!r} raised {raised}"
        x = tf.constant(values, getattr(tf, dtype))
        if isinstance(n, tuple):                  # ("tensor" or a NumPy type, int): eager's result follows its kind
            n = tf.constant(n[1]) if n[0] == "tensor" else getattr(np, n[0])(n[1])
        (ek, ev), eout = run_capturing(watched(eager_mod.f, *outside), (x, n, eager_box, eager_box.tree))
        (jk, jv), jout = run_capturing(watched(spec, *outside), (x, n, janus_box, janus_box.tree))
        where = f"call {i} (x={values} {dtype}, n={n}, before it: {mutation}, derivatives: {outside})"
        assert ek == jk, f"{where}: eager {ek}s {ev!r}, janus {jk}s {jv!r}"
        if ek == "raise":
            # (RecursionError's text names the kind of frame that hit the limit, which depends on
            # how deep the caller's stack already was: the type is what the program sees.)
            assert type(ev) is type(jv) and (str(ev) == str(jv) or type(ev) is RecursionError), \
                f"{where}: eager raised {ev!r}, janus {jv!r}"
        else:
            _same(ev, jv, f"{where} result")
        assert _same_text(eout, jout), f"{where}: printed\neager: {eout!r}\njanus: {jout!r}"
        _same(_state(eager_mod, eager_box), _state(janus_mod, janus_box), f"{where} state")
    stats = method.stats()
    if method is not spec:
        gone = weakref.ref(stepper)
        del stepper, spec, jv, ev         # (an exception raised holds the frames, the method's with it)
        gc.collect()
        gc.collect()                      # (TensorFlow's finalizers of its graphs release in a second round)
        assert gone() is None, "the instance whose speculated method ran is kept alive after the program dropped it"
    COUNTER["programs"] += 1
    COUNTER["calls"] += len(calls)
    COUNTER["graph_runs"] += stats["graph_runs"] + stats.get("segment_graph_runs", 0)
    if _PROGRESS and COUNTER["programs"] % 100 == 0:
        with open(_PROGRESS, "a") as out:
            out.write("{programs} programs, {calls} calls, {graph_runs} graph runs\n".format(**COUNTER))
    return stats
