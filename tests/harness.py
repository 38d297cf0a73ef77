"""Differential harness: the same Python, eagerly and under janus, must agree.

`differential(fn, calls, mode)` calls the plain function and its speculated
twin on each argument tuple and asserts equal results (values, dtypes,
Python types), equal exceptions (type and message) and equal printed text.
Modes: "speculative" (normal), "fallback" (every graph run is treated as a
failed speculation, so the fallback path must give the same answers).
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import tensorflow as tf

import janus

MODES = ("speculative", "fallback")


def run_capturing(fn, args, kwargs=None):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            return ("return", fn(*args, **(kwargs or {}))), out.getvalue()
        except Exception as exc:  # noqa: BLE001 - compared below
            return ("raise", exc), out.getvalue()


def assert_same(a, b, path="result"):
    if isinstance(a, (tf.Tensor, tf.Variable)):
        assert isinstance(b, (tf.Tensor, tf.Variable)), f"{path}: eager gave a tensor, janus {type(b).__name__}"
        assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"{path}: shape {a.shape} != {b.shape}"
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=path)
        return
    assert type(a) is type(b), f"{path}: eager gave {type(a).__name__}, janus {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=path)
        return
    if isinstance(a, tf.__internal__.CompositeTensor):
        # Ragged, sparse: the same components; static shapes may be less specific after a relaxed
        # input spec, as under tf.function (README, differences).
        spec_a, spec_b = tf.type_spec_from_value(a), tf.type_spec_from_value(b)
        assert spec_a._with_tensor_ranks_only() == spec_b._with_tensor_ranks_only(), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(tf.nest.flatten(a, expand_composites=True),
                                       tf.nest.flatten(b, expand_composites=True))):
            assert_same(x, y, f"{path}.component{i}")
        return
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{path}: keys differ"
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif type(a) is float:              # exactly: -0.0 is not 0.0, nan is nan
        assert repr(a) == repr(b), f"{path}: {a!r} != {b!r}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def assert_same_outcome(eager, spec):
    (ek, ev), eprint = eager
    (jk, jv), jprint = spec
    assert ek == jk, f"eager {ek}s {ev!r}, janus {jk}s {jv!r}"
    if ek == "raise":
        assert type(ev) is type(jv) and str(ev) == str(jv), f"eager raised {ev!r}, janus {jv!r}"
    else:
        assert_same(ev, jv)
    assert eprint == jprint, f"printed text differs:\neager: {eprint!r}\njanus: {jprint!r}"


def compare_call(fn, spec, *args, **kwargs):
    """One call of `fn` and of its speculated `spec` with the same arguments: the same result or
    exception, and the same printed text."""
    assert_same_outcome(run_capturing(fn, args, kwargs), run_capturing(spec, args, kwargs))


def compare_on_states(fn, make, xs, between=None, graph_runs=True, state=vars):
    """`fn(state, x)` eagerly and speculated on two equal states from `make()`, one `x` per
    call; `between(state, i)` changes both before call `i`.  Each call gives the same result
    (or exception) and leaves `state(...)` the same; `graph_runs`: graphs ran.  Returns the
    speculated function and its state."""
    eager_s, spec_s = make(), make()
    spec = janus.speculate(fn)
    for i, x in enumerate(xs):
        if between is not None:
            between(eager_s, i)
            between(spec_s, i)
        (ek, ev), _ = run_capturing(fn, (eager_s, x))
        (jk, jv), _ = run_capturing(spec, (spec_s, x))
        assert ek == jk, f"call {i}: eager {ek}s {ev!r}, janus {jk}s {jv!r}"
        if ek == "raise":
            assert type(ev) is type(jv) and str(ev) == str(jv), f"call {i}: eager raised {ev!r}, janus {jv!r}"
        else:
            assert_same(ev, jv, f"call {i}")
        assert_same(state(eager_s), state(spec_s), f"state after call {i}")
    if graph_runs:
        assert spec.stats()["graph_runs"] > 0, spec.report()
    return spec, spec_s


def differential(fn, calls, mode="speculative", **options):
    """Run every call eagerly and speculated; returns the SpeculativeFunction for stats."""
    spec = janus.speculate(fn, **options)
    for call in calls:
        args, kwargs = (call, {}) if isinstance(call, tuple) else (call["args"], call.get("kwargs", {}))
        eager = run_capturing(fn, args, kwargs)
        ctx = janus.testing.forced_fallback() if mode == "fallback" else contextlib.nullcontext()
        with ctx:
            result = run_capturing(spec, args, kwargs)
        assert_same_outcome(eager, result)
    return spec


def run_script(tmp_path, source: str, log_level: str = "2", timeout: int = 600):
    """Run `source` as a script in a fresh Python process with janus importable (for what only a
    new process shows: device setup before TensorFlow starts, what reaches stderr); asserts it
    exits cleanly and returns the finished process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "script.py"
    script.write_text(source)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), TF_CPP_MIN_LOG_LEVEL=log_level)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc
