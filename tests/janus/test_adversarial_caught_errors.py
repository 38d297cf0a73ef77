"""Adversarial tests: user programs that catch, raise and inspect exceptions around TensorFlow
ops (a `try` kept in Python, its body split into graph segments; `contextlib.suppress` and
`assert` kept in the graph).  Each program runs eagerly and through janus on fresh state, call
by call, with inputs that make an op fail early in the profile, only after graphs ran, or
alternately: result bits and Python types, exception type, message and cause, printed text,
and the state the program keeps (variables, attributes, stored exception objects), with no
graph tensor leaking anywhere.

PYTEST_DONT_REWRITE: the programs' own `assert` statements must keep Python's message (pytest's
rewrite reaches the eager run only, janus compiles the function's source again)."""
import contextlib
import io
import math
import sys

import pytest
import tensorflow as tf

import janus

X = tf.constant([1.0, 2.0, 3.0])
I = tf.constant


def norm(r, path="r"):
    if isinstance(r, BaseException):
        return ("exc", type(r).__name__, str(r))
    if isinstance(r, tf.Variable):
        return ("V", r.dtype.name, r.numpy().tobytes())
    if isinstance(r, tf.Tensor):
        assert not tf.is_symbolic_tensor(r), f"graph tensor leaked at {path}: {r!r}"
        return ("T", r.dtype.name, tuple(r.shape), r.numpy().tobytes())
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, tuple(norm(x, f"{path}[{i}]") for i, x in enumerate(r)))
    if isinstance(r, dict):
        return ("dict", tuple((k, norm(v, f"{path}[{k!r}]")) for k, v in r.items()))
    if isinstance(r, float):
        return ("float", repr(r))
    return (type(r).__name__, r)


def outcome(fn, args, capfd):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            res = ("return", norm(fn(*args)))
        except Exception as e:  # noqa: BLE001 - compared with eager's
            cause = type(e.__cause__).__name__ if e.__cause__ is not None else None
            res = ("raise", type(e).__name__, str(e), cause)
    return res, out.getvalue(), capfd.readouterr().out if capfd else ""


def compare(make, calls, capfd=None, min_graph=1):
    """`make()` -> (function, state()); eager and janus each on a fresh pair."""
    fe, se = make()
    fj, sj = make()
    spec = janus.speculate(fj)
    for k, args in enumerate(calls):
        e, j = outcome(fe, args, capfd), outcome(spec, args, capfd)
        assert e == j, f"call {k}: eager {e}\njanus {j}\n{spec.report()}"
        assert norm(se()) == norm(sj()), f"call {k}: state eager {norm(se())}\njanus {norm(sj())}"
    st = spec.stats()
    assert st["graph_runs"] + st["segment_graph_runs"] >= min_graph, spec.report()
    return spec


def W(x):
    return tf.reduce_max(x) * tf.reduce_min(x) + tf.reduce_mean(x) * tf.exp(-tf.reduce_sum(x))


class Box:
    def __init__(self):
        self.errors, self.n, self.last, self.log = 0, 0, None, []


GATHER = {  # indices 5..9 are out of range for X
    "early": [(X, I(i)) for i in [0, 5, 1, 2, 0, 1, 2, 0, 7, 1, 2, 9, 0]],
    "late": [(X, I(i)) for i in [0, 1, 2, 0, 1, 2, 0, 1, 5, 2, 8, 0]],
    "alternating": [(X, I(i)) for i in [0, 5, 1, 6, 2, 7, 0, 8, 1, 9, 2, 4]],
}
LOOP_IDX = [(X, [I(0), I(i), I(1)]) for i in [0, 1, 2, 0, 1, 2, 5, 0, 7, 1]]


# ---- FAILING: a local carried around a loop, updated in a try body before the raise ---------
# The segment that holds `acc = ...; out.append(<fails>)` hands on its outputs only when it
# returns; eager had already rebound `acc` when the op raised, and the next iteration reads it.

def loop_acc_before_op_error():
    def f(x, idx):
        acc = tf.constant(1.0)
        out = []
        for i in idx:
            try:
                acc = acc * 2.0 + tf.reduce_sum(x) * tf.reduce_mean(x) - tf.reduce_max(x)
                out.append(tf.gather(x, i) + acc)
            except tf.errors.InvalidArgumentError:
                out.append(tf.constant(-1.0))
        return out
    return f, lambda: None


def loop_int_counter_before_op_error():
    def f(x, idx):
        n = 0
        out = []
        for i in idx:
            try:
                n = n + 1
                out.append(tf.gather(x, i) * float(n) + W(x) * tf.reduce_sum(x))
            except tf.errors.InvalidArgumentError:
                pass
        return out
    return f, lambda: None


def loop_acc_before_python_raise():
    def f(x, idx):
        acc = tf.constant(1.0)
        out = []
        for i in idx:
            try:
                acc = acc * 2.0 + tf.reduce_sum(x) * tf.reduce_mean(x) - tf.reduce_max(x)
                if tf.reduce_sum(x) * i > 10.0:
                    raise ValueError("big")
                out.append(acc * tf.reduce_min(x) + tf.exp(-acc))
            except ValueError:
                out.append(tf.constant(-1.0))
        return out
    return f, lambda: None


def while_acc_before_op_error():
    def f(x, idx):
        acc, k, res = tf.constant(1.0), 0, tf.constant(0.0)
        while k < len(idx):
            try:
                acc = acc * 1.5 + tf.reduce_sum(x) * tf.reduce_mean(x) - tf.reduce_max(x)
                res = res + tf.gather(x, idx[k]) * acc
            except tf.errors.InvalidArgumentError:
                res = res - 1.0
            k += 1
        return res
    return f, lambda: None


class Swallow:
    def __init__(self):
        self.caught = []

    def __enter__(self):
        return self

    def __exit__(self, t, e, tb):
        if t is not None:
            self.caught.append(t.__name__)
        return True


def swallowing_with_in_loop():
    sw = Swallow()

    def f(x, idx):
        acc = tf.constant(1.0)
        out = []
        for i in idx:
            with sw:
                acc = acc * 2.0 + tf.reduce_sum(x) * tf.reduce_mean(x) - tf.reduce_max(x)
                out.append(tf.gather(x, i) + acc)
        return out
    return f, lambda: list(sw.caught)


@pytest.mark.parametrize("make, calls", [
    (loop_acc_before_op_error, LOOP_IDX),
    (loop_acc_before_op_error, [(X, [I(0), I(i), I(1)]) for i in [0, 5, 2, 7, 1, 2, 5, 0, 7, 1]]),
    (loop_int_counter_before_op_error, LOOP_IDX),
    (loop_acc_before_python_raise, [(X, [0, i, 1]) for i in [0, 1, 0, 1, 0, 1, 5, 0, 7, 1]]),
    (while_acc_before_op_error, LOOP_IDX),
    (swallowing_with_in_loop, LOOP_IDX),
], ids=["op-error", "op-error-in-profile-too", "int-counter", "python-raise", "while", "with-exit-swallows"])
def test_loop_local_rebound_before_a_caught_error_keeps_its_new_value(make, calls):
    compare(make, calls)


# ---- passing: regression cases --------------------------------------------------------------

def var_else_finally():
    v = tf.Variable(0.0)
    c = Box()

    def f(x, i):
        w = tf.reduce_sum(x * 2.0) + tf.reduce_mean(x)
        w = w * tf.exp(-w) + tf.sqrt(w)
        try:
            v.assign_add(tf.reduce_sum(x) * 0.5)
            y = tf.gather(x, i) * tf.reduce_max(x) + tf.reduce_min(x) * w
            c.log.append("body")
        except tf.errors.InvalidArgumentError as e:
            c.errors += 1
            c.last = e
            y = v * 1.0 + w
        else:
            c.log.append("else")
            y = y * tf.reduce_sum(x) + tf.square(y)
        finally:
            print("finally", c.errors)
        return y * tf.reduce_sum(x) + tf.exp(-y) * tf.reduce_mean(x) + v
    return f, lambda: (v, c.errors, c.last, list(c.log))


def message_returned():
    def f(x, i):
        try:
            a = tf.reduce_sum(x * 3.0) + tf.reduce_max(x) * tf.reduce_min(x)
            return tf.gather(x, i) * a + tf.reduce_mean(x)
        except tf.errors.InvalidArgumentError as e:
            return type(e).__name__, e.message, str(e)
    return f, lambda: None


def writes_before_failure():
    c, v = Box(), tf.Variable(0.0)

    def f(x, i):
        out, d = [], {}
        try:
            c.n += 1
            c.log.append(c.n)
            v.assign_add(1.0)
            out.append(x * 2.0 + W(x))
            d["a"] = tf.reduce_sum(x) * W(x)
            y = tf.gather(x, i) * W(x)
        except tf.errors.InvalidArgumentError:
            c.errors += 1
            y = tf.constant(-1.0)
        return y, out, d
    return f, lambda: (v, c.n, c.errors, list(c.log))


def locals_at_the_raise():
    def f(x, i):
        a, b = tf.constant(0.0), tf.constant(1.0)
        try:
            a = tf.reduce_sum(x * 3.0) + tf.reduce_max(x) * tf.reduce_min(x)
            b = tf.gather(x, i) * tf.reduce_mean(x) + tf.exp(a) + tf.sqrt(a)
        except tf.errors.InvalidArgumentError:
            b = b + a
        return a, b
    return f, lambda: None


def unmatched_handler_finally():
    v, c = tf.Variable(0.0), Box()

    def f(x, i):
        try:
            v.assign_add(tf.reduce_sum(x))
            y = tf.gather(x, i) * W(x)
            c.log.append(1)
        except ValueError:
            y = None
        finally:
            c.log.append("fin")
            v.assign_add(100.0)
        return y
    return f, lambda: (v, list(c.log))


def raise_from():
    def f(x, i):
        try:
            y = tf.gather(x, i) * W(x) + tf.reduce_sum(x)
        except tf.errors.InvalidArgumentError as e:
            raise IndexError(f"bad index {i}") from e
        return y
    return f, lambda: None


def nested_try():
    log = []

    def f(x, i, j):
        try:
            a = tf.gather(x, i) * W(x) + tf.reduce_sum(x)
            try:
                b = tf.gather(x, j) * W(x) + a
            except tf.errors.InvalidArgumentError:
                log.append("inner")
                b = tf.gather(x, j + 100) + W(x)
        except tf.errors.InvalidArgumentError as e:
            log.append("outer " + e.message[:40])
            b = tf.constant(0.0)
        return b
    return f, lambda: list(log)


def suppress_with_state():
    v, c = tf.Variable(0.0), Box()

    def f(x, i):
        r = tf.constant(0.0)
        with contextlib.suppress(tf.errors.InvalidArgumentError):
            v.assign_add(1.0)
            c.n += 1
            print("in", c.n)
            r = tf.gather(x, i) * W(x)
            v.assign_add(2.0)
            c.log.append("after")
        return r, v.read_value()
    return f, lambda: (v, c.n, list(c.log))


@pytest.mark.parametrize("make", [var_else_finally, message_returned, writes_before_failure, locals_at_the_raise,
                                  unmatched_handler_finally, raise_from, suppress_with_state])
@pytest.mark.parametrize("order", list(GATHER))
def test_gather_errors_caught_around_state(make, order):
    # (the whole function runs in Python: the try body is too small to split)
    compare(make, GATHER[order], min_graph=0 if make is unmatched_handler_finally else 1)


def test_nested_try_inner_and_outer_handlers():
    calls = [(X, I(i), I(j)) for i, j in [(0, 1), (1, 2), (0, -3), (2, 0), (1, 1), (0, 2), (5, 1), (0, 9), (1, 2)]]
    compare(nested_try, calls)


def tf_print_then_failure():
    def f(x, i):
        try:
            a = tf.reduce_sum(x * 3.0) + tf.reduce_max(x) * tf.reduce_min(x)
            tf.print("before", a, output_stream=sys.stdout)
            b = tf.gather(x, i) * a + tf.reduce_mean(x)
        except tf.errors.InvalidArgumentError:
            b = tf.constant(-1.0)
        return b
    return f, lambda: None


def test_tf_print_before_a_caught_failure_prints_once(capfd):
    capfd.readouterr()
    compare(tf_print_then_failure, GATHER["late"], capfd=capfd)


def check_numerics_unused():
    c = Box()

    def f(x, d):
        y = x / d + tf.reduce_sum(x) * tf.reduce_mean(x) - tf.reduce_max(x)
        try:
            tf.debugging.check_numerics(y, "nonfinite")
            r = tf.sqrt(tf.abs(y)) * tf.reduce_sum(y) + tf.reduce_max(y)
        except tf.errors.InvalidArgumentError as e:
            c.errors += 1
            c.log.append(e.message)
            r = tf.zeros_like(x)
        return r
    return f, lambda: (c.errors, list(c.log))


def singular_inverse():
    log = []

    def f(m):
        try:
            r = tf.linalg.inv(m) @ m + tf.reduce_sum(m) * tf.eye(2) - tf.reduce_max(m)
            log.append("ok")
        except tf.errors.InvalidArgumentError as e:
            log.append(str(e).splitlines()[0])
            r = tf.eye(2)
        return r
    return f, lambda: list(log)


def shape_checks_caught():
    def f(a, b):
        try:
            tf.debugging.assert_less(tf.shape(a)[0], 3, message="too long")
            r = tf.matmul(a, b) * W(a)
        except (tf.errors.InvalidArgumentError, ValueError) as e:
            r = type(e).__name__
        return r
    return f, lambda: None


def tensor_test_raise_caught():
    log = []

    def f(x):
        try:
            s = tf.reduce_sum(x * 2.0) + tf.reduce_max(x) * tf.reduce_min(x)
            if s > 10.0:
                raise ValueError("too big")
            assert s > 0, "sum must be positive"
            y = x * s + tf.reduce_mean(x) * tf.exp(-s)
        except (ValueError, AssertionError) as e:
            log.append(f"{type(e).__name__}: {e}")
            y = x * 0.0
        return y
    return f, lambda: list(log)


TABLE = {0: 10.0, 1: 20.0, 2: 30.0}


def python_values_of_tensors():
    log = []

    def f(x):
        k = int(tf.reduce_sum(x))
        try:
            w = TABLE[k] + 100 // (k - 1)
        except (KeyError, ZeroDivisionError) as e:
            log.append(repr(e))
            w = 0.0
        with contextlib.suppress(ValueError):
            w = w + math.log(float(tf.reduce_sum(x)) - 0.5)
        return x * w + W(x), w
    return f, lambda: list(log)


M_OK, M_BAD = tf.constant([[2.0, 0.0], [0.0, 3.0]]), tf.constant([[1.0, 2.0], [2.0, 4.0]])


@pytest.mark.parametrize("make, calls", [
    (check_numerics_unused, [(X, I(d)) for d in [1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 0.0, 1.0, 4.0, 0.0]]),
    (singular_inverse, [(m,) for m in [M_OK] * 6 + [M_BAD, M_OK, M_BAD, M_OK]]),
    (shape_checks_caught, [(tf.ones([2, 3]), tf.ones([3, 2]))] * 6 + [(tf.ones([2, 3]), tf.ones([2, 2])),
                           (tf.ones([3, 3]), tf.ones([3, 2])), (tf.ones([2, 3]), tf.ones([3, 2]))]),
    (tensor_test_raise_caught, [(X * s,) for s in [0.5] * 6 + [2.0, 0.5, -3.0, 0.5, 3.0]]),
    (python_values_of_tensors, [(tf.constant([a, 0.0]),) for a in [0., 2., 0., 2., 0., 2., 1., 5., 2., 0.]]),
], ids=["check_numerics", "inverse", "shape-checks", "tensor-raise-and-assert", "python-values"])
def test_failing_ops_and_python_errors_caught(make, calls):
    # (segments too small to be graphs in some: only eager's behaviour is checked there)
    compare(make, calls, min_graph=0 if make in (singular_inverse, tensor_test_raise_caught,
                                                 python_values_of_tensors) else 1)


def assert_escapes():
    def f(x):
        s = tf.reduce_sum(x * 2.0) + tf.reduce_max(x) * tf.reduce_min(x)
        assert s > 0, f"bad sum {s}"
        return x * s + tf.reduce_mean(x) * tf.exp(-s)
    return f, lambda: None


def test_assert_on_a_tensor_escapes_with_eager_message():
    # (runs in Python: the graph build of `assert t > 0` fails three times, report `keeps-failing`)
    compare(assert_escapes, [(X * s,) for s in [1.0] * 6 + [-1.0, 1.0, -2.0, 1.0]], min_graph=0)


def suppress_in_loop():
    def f(x, idx):
        acc, out = tf.constant(1.0), []
        for i in idx:
            with contextlib.suppress(tf.errors.InvalidArgumentError):
                acc = acc * 2.0 + tf.reduce_sum(x) * tf.reduce_mean(x) - tf.reduce_max(x)
                out.append(tf.gather(x, i) + acc)
        return out
    return f, lambda: None


def test_suppress_in_a_loop_keeps_the_update_before_the_error():
    compare(suppress_in_loop, LOOP_IDX)


def test_never_failing_calls_run_as_graphs_without_changing_results():
    spec = compare(var_else_finally, [(X, I(i % 3)) for i in range(10)])
    assert spec.stats()["segment_graph_runs"] >= 5, spec.report()
