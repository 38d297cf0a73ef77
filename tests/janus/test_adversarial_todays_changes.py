"""Adversarial tests of the day's changes: `assert` lowered to an `if`, a raising side of a tensor
`if` inside a loop or `tf.cond` body as an `Assert` op, read-only `tf.cond`s followed by guards,
partials' keywords checked at entry, resource handles captured by identity, graph segments of a
`try` in a loop.  Each program runs eagerly and through janus on fresh state, call by call, with
failing and passing inputs in different orders: result bits and Python types, exception type and
message, printed text and the state the program keeps.

PYTEST_DONT_REWRITE: the programs' own `assert` statements must keep Python's message."""
import contextlib
import functools
import io

import numpy as np
import tensorflow as tf

import janus

C = tf.constant


def norm(r, path="r"):
    if isinstance(r, BaseException):
        return ("exc", type(r).__name__, str(r),
                {k: v for k, v in vars(r).items() if isinstance(v, (int, str, float))})
    if isinstance(r, tf.Variable):
        return ("V", r.dtype.name, r.numpy().tobytes())
    if isinstance(r, tf.Tensor):
        assert not tf.is_symbolic_tensor(r), f"graph tensor leaked at {path}: {r!r}"
        return ("T", r.dtype.name, tuple(r.shape), r.numpy().tobytes())
    if isinstance(r, np.ndarray):
        return ("A", r.dtype.name, r.shape, r.tobytes())
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, tuple(norm(x, f"{path}[{i}]") for i, x in enumerate(r)))
    if isinstance(r, dict):
        return ("dict", tuple((k, norm(v, f"{path}[{k!r}]")) for k, v in r.items()))
    if isinstance(r, float):
        return ("float", repr(r))
    if isinstance(r, np.generic):
        return (type(r).__name__, r.tobytes())
    return (type(r).__name__, r)


def outcome(fn, args, capfd):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            res = ("return", norm(fn(*args)))
        except Exception as e:  # noqa: BLE001 - compared with eager's
            res = ("raise", norm(e))
    return res, out.getvalue(), capfd.readouterr() if capfd else ""


def compare(make, calls, capfd=None, min_graph=1, **options):
    """`make()` -> (function, state()[, changes]); eager and janus each on a fresh pair.  A call
    that is a string applies `changes[name]()` of both between calls."""
    fe, se, *me = make()
    fj, sj, *mj = make()
    spec = janus.speculate(fj, **options)
    for k, args in enumerate(calls):
        if isinstance(args, str):
            me[0][args](), mj[0][args]()
            continue
        e, j = outcome(fe, args, capfd), outcome(spec, args, capfd)
        assert e == j, f"call {k}: eager {e}\njanus {j}\n{spec.report()}"
        assert norm(se()) == norm(sj()), f"call {k}: state eager {norm(se())}\njanus {norm(sj())}"
    st = spec.stats()
    assert st["graph_runs"] + st["segment_graph_runs"] >= min_graph, spec.report()
    return spec


# -- 1. assert lowered to an if ---------------------------------------------------------------
def make_assert_walrus():
    log = []

    def seen(x):
        log.append(len(log))
        return x

    def f(x):
        assert (m := seen(tf.reduce_max(x))) > 0, f"max {len(log)}"
        return m * 2.0 + tf.reduce_sum(x)
    return f, lambda: list(log)


def test_assert_walrus_with_side_effect_in_the_test():
    compare(make_assert_walrus, [(C([v, 1.0]),) for v in [1., 2., 3., 4., 5., -7., 6., 7., -8., 2.]])


def make_assert_in_while():
    v = tf.Variable(0.0)

    def f(x, n):
        i = tf.constant(0)
        while i < n:
            v.assign_add(x)
            assert v < 20.0, "overflow"
            i += 1
        return v + 0.0
    return f, lambda: v


def test_assert_in_a_tensor_while_after_a_variable_write():
    compare(make_assert_in_while, [(C(1.0), C(n)) for n in [1, 2, 1, 3, 2, 20, 1, 2, 30, 1]])


# -- 2. a raising side inside a loop or tf.cond body: an Assert op ------------------------------
class BadStep(Exception):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


def make_raise_in_loop_state():
    v = tf.Variable(0.0)
    log = []

    def f(x):
        total = tf.constant(0.0)
        for i in tf.range(tf.size(x)):
            v.assign_add(1.0)
            if x[i] < 0.0:
                raise BadStep("negative element", code=7)
            if x[i] > 100.0:
                break
            if x[i] == 0.0:
                continue
            total += x[i]
        log.append("done")
        print("total", float(len(log)))
        return total
    return f, lambda: (v, list(log))


def test_raise_in_a_tensor_for_with_writes_break_continue(capfd):
    xs = [[1., 2.], [3., 0.], [1., 200., -1.], [2., 2.], [1., -1.], [4., 5.], [-3.], [0., 1.], [1., 2., -9.], [7.]]
    compare(make_raise_in_loop_state, [(C(v),) for v in xs], capfd=capfd)


def make_raise_caught_around_loop():
    def f(x):
        out, tag = tf.constant(0.0), 0
        try:
            acc = tf.constant(0.0)
            for i in tf.range(tf.size(x)):
                if x[i] < 0.0:
                    raise ValueError("negative")
                acc += tf.gather(x, i) * 2.0 + tf.exp(x[i]) * 0.5
            out = acc * 1.5 + tf.reduce_sum(x) * 0.25
        except tf.errors.InvalidArgumentError:
            tag = 1
        except ValueError:
            tag = 2
        return out, tag
    return f, lambda: None


def test_raise_in_a_loop_inside_try_is_not_caught_as_an_op_error():
    xs = [[1., 2.], [3., 4.], [5., 6.], [1., -2.], [2., 2.], [7., 1.], [-1., 0.], [1., 1.], [3., 3.]]
    compare(make_raise_caught_around_loop, [(C(v),) for v in xs])


def make_raise_in_cond_body():
    def inner(x):
        if tf.reduce_sum(x) < 0.0:
            raise ValueError("inner negative")
        return x * 2.0

    def f(x, p):
        return tf.cond(p, lambda: inner(x), lambda: x - 1.0)
    return f, lambda: None


def test_raise_in_a_helper_under_tf_cond():
    calls = [(C([1.0]), C(True)), (C([-1.0]), C(False)), (C([2.0]), C(True)), (C([3.0]), C(True)),
             (C([-4.0]), C(False)), (C([-5.0]), C(True)), (C([6.0]), C(True)), (C([-7.0]), C(False)),
             (C([-8.0]), C(True)), (C([9.0]), C(False))]
    compare(make_raise_in_cond_body, calls)


def make_raise_jit():
    def f(x):
        acc = tf.constant(0.0)
        for i in tf.range(tf.size(x)):
            if x[i] < 0.0:
                raise ValueError("negative under XLA")
            acc = acc * 0.5 + x[i]
        return acc
    return f, lambda: None


def test_raise_in_a_loop_with_jit_compile():
    xs = [[1., 2.], [3., 4.], [5., 6.], [7., 8.], [1., -2.], [2., 2.], [-1., 0.], [1., 1.], [3., -3.], [4., 4.]]
    compare(make_raise_jit, [(C(v),) for v in xs], jit_compile=True)


# -- 3. a tf.cond that only reads, then a guard ---------------------------------------------------
def make_read_only_cond_then_guard():
    v = tf.Variable(2.0)
    calls = []

    def record(a):
        calls.append(len(calls))
        return a * 2.0

    def f(x):
        if tf.reduce_sum(x) > v:
            y = tf.numpy_function(record, [x], tf.float32)
        else:
            y = x - v
        if tf.reduce_max(x) < 100.0:
            return y + 1.0
        return y - 1.0
    return f, lambda: (v, list(calls)), {"bump": lambda: v.assign(v + 1.0)}


def test_read_only_cond_with_numpy_function_then_a_failing_guard():
    xs = [[3.0], [1.0], [4.0], [0.5], [5.0], [1.5], [200.0], [6.0], "bump", [3.5], [300.0], [-400.0], [7.0]]
    compare(make_read_only_cond_then_guard, [x if isinstance(x, str) else (C(x),) for x in xs])


# -- 4. partials held outside ---------------------------------------------------------------------
def _g(x, scale=1.0, bias=None, items=()):
    y = x * scale
    if bias is not None:
        y = y + bias
    return y + float(len(items))


def make_partial_mutations():
    items = [1]
    p = functools.partial(_g, C(1.0), items=items)
    w = tf.Variable(3.0)

    def f(x):
        return p(scale=x) + 1.0

    def drop():
        p.keywords.pop("bias", None)
    return f, lambda: None, {
        "append": lambda: items.append(2), "bias": lambda: p.keywords.update(bias=C(5.0)),
        "bias_var": lambda: p.keywords.update(bias=w), "drop": drop, "assign": lambda: w.assign_add(1.0),
        "items": lambda: p.keywords.update(items=[7, 8, 9])}


def test_partial_keywords_and_args_changed_between_calls():
    calls = [(C(2.0),)] * 5 + ["append", (C(2.0),), (C(3.0),), "bias", (C(2.0),), (C(2.0),), "bias_var",
                                (C(2.0),), "assign", (C(2.0),), "drop", (C(2.0),), "items", (C(2.0),), (C(4.0),)]
    compare(make_partial_mutations, calls)


class Scaler:
    def __init__(self):
        self.k = 2.0

    def apply(self, x, shift=0.0):
        return x * self.k + shift


def make_partial_of_method_nested():
    s = Scaler()
    inner = functools.partial(s.apply, shift=1.0)
    outer = functools.partial(inner, shift=3.0)

    def f(x):
        return outer(x) + inner(x)
    return f, lambda: s.k, {"k": lambda: setattr(s, "k", 5.0), "inner": lambda: inner.keywords.update(shift=9.0),
                            "outer": lambda: outer.keywords.update(shift=-1.0)}


def test_nested_partial_of_a_method_whose_object_and_keywords_change():
    calls = [(C(1.0),)] * 5 + ["k", (C(1.0),), (C(2.0),), "inner", (C(1.0),), (C(1.0),), "outer", (C(1.0),)]
    compare(make_partial_of_method_nested, calls)


# -- 6. run_functions_eagerly -------------------------------------------------------------------------
def make_eagerly_toggled():
    v = tf.Variable(0.0)
    log = []

    def f(x):
        v.assign_add(tf.reduce_sum(x))
        if v > 10.0:
            log.append(len(log))
        return v * 2.0, len(log)
    return f, lambda: (v, list(log)), {"on": lambda: tf.config.run_functions_eagerly(True),
                                       "off": lambda: tf.config.run_functions_eagerly(False)}


def test_run_functions_eagerly_toggled_mid_sequence():
    try:
        calls = [(C([1.0]),), "on", (C([2.0]),), "off", (C([1.0]),), (C([1.0]),), (C([1.0]),), (C([1.0]),),
                 "on", (C([3.0]),), (C([1.0]),), "off", (C([1.0]),), (C([2.0]),), (C([1.0]),)]
        compare(make_eagerly_toggled, calls)
    finally:
        tf.config.run_functions_eagerly(False)


# -- 7. resource handles held outside -----------------------------------------------------------------
def make_raw_handle_write():
    v = tf.Variable([1.0, 2.0, 3.0])
    other = tf.Variable([10.0, 20.0, 30.0])
    held = {"h": v.handle}

    def f(x, i):
        tf.raw_ops.AssignAddVariableOp(resource=held["h"], value=x)
        r = tf.raw_ops.ReadVariableOp(resource=held["h"], dtype=tf.float32)
        return tf.gather(r, i) * 2.0
    return f, lambda: (v, other), {"swap": lambda: held.update(h=other.handle)}


def test_raw_write_through_a_held_handle_before_a_failing_gather():
    one = C([1.0, 1.0, 1.0])
    calls = [(one, C(i)) for i in [0, 1, 2, 5, 0, 1, 2, 0, 7, 1]] + ["swap"] + [(one, C(i)) for i in [0, 9, 1, 2]]
    compare(make_raw_handle_write, calls, min_graph=0)


def make_raw_handle_and_variable():
    v = tf.Variable([1.0, 2.0, 3.0])
    box = type("Box", (), {})()
    box.h = v.handle

    def f(x, i):
        v.assign_add(x)
        tf.raw_ops.AssignSubVariableOp(resource=box.h, value=x * 0.5)
        return tf.gather(v.read_value(), i) + tf.raw_ops.ReadVariableOp(resource=box.h, dtype=tf.float32)[0]
    return f, lambda: v


def test_variable_and_its_held_handle_both_written_before_a_failing_gather():
    one = C([1.0, 2.0, 4.0])
    compare(make_raw_handle_and_variable, [(one, C(i)) for i in [0, 1, 2, 0, 1, 6, 2, 0, 8, 1, 2]])


# -- 8. graph segments in a try inside a loop ------------------------------------------------------
def make_try_in_loop():
    v = tf.Variable(0.0)

    def f(x, idx):
        total = tf.constant(1.0)
        seen, errs = [], 0
        for i in idx:
            try:
                total = total + 1.0
                seen.append(total * 1.0)
                v.assign_add(1.0)
                a, total = total * 3.0, total * tf.gather(x, i)
                b = a + tf.gather(x, i + 1)
                total = total + b * 0.0
            except tf.errors.InvalidArgumentError:
                errs += 1
        return total, seen, errs
    return f, lambda: v


def test_try_in_a_loop_keeps_each_rebinding_before_the_failure():
    x = C([1.0, 2.0, 3.0])
    calls = [(x, idx) for idx in ([0, 1], [0, 1], [1, 0], [0, 1], [0, 2], [0, 1], [2, 0], [3, 0], [1, 1], [0, 0])]
    compare(make_try_in_loop, calls)


def make_assert_shadowed_by_a_cell():
    AssertionError = KeyError             # noqa: A001, N806 - a free variable of f; eager's assert ignores it
    log = []

    def f(x, n, flag):
        log.append(AssertionError.__name__)
        assert n > 0 and flag, "n"
        assert tf.reduce_sum(x) > 0 or flag, "x"
        return x * float(n)
    return f, lambda: list(log)


def test_assert_with_assertion_error_shadowed_by_a_closure_cell():
    calls = [(C(1.0), n, b) for n, b in [(1, True), (2, True), (3, True), (4, True), (5, True), (-1, True),
                                         (6, False), (7, True), (-2, True), (8, True)]]
    calls += [(C(-1.0), 1, True), (C(-1.0), 2, False), (C(2.0), 3, True)]
    compare(make_assert_shadowed_by_a_cell, calls)


def _h(x, n=1, k=None):
    return x * n, n + 1, k


def make_partial_number_types():
    p = functools.partial(_h, n=2.0, k=0)

    def f(x):
        return p(x)
    return f, lambda: None, {"int": lambda: p.keywords.update(n=2), "bool": lambda: p.keywords.update(n=True),
                             "one": lambda: p.keywords.update(n=1.0), "k": lambda: p.keywords.update(k=False),
                             "nan": lambda: p.keywords.update(n=float("nan"))}  # (-0.0: eager's scalar cache, README)


def test_partial_keyword_changes_between_equal_numbers_of_other_types():
    x = C(3.0)
    calls = [(x,)] * 5 + ["int", (x,), (x,), "one", (x,), "bool", (x,), (x,), "k", (x,), "nan", (x,), (x,),
                          "int", (x,)]
    compare(make_partial_number_types, calls)


class Counter:
    def __init__(self):
        self.count, self.seen = 0, []
        self.v = tf.Variable(0.0)

    def step(self, x):
        self.count += 1
        self.v.assign_add(tf.reduce_sum(x))
        if tf.reduce_sum(x) > 0.0:
            self.seen.append(self.count)
            if x[0] > 10.0:
                raise BadStep("first too big", code=self.count)
            y = x * 2.0
        else:
            y = x
        assert tf.reduce_min(y) > -50.0, f"min after {self.count}"
        return y + self.v


def make_method_nested_raise():
    c = Counter()
    return c.step, lambda: (c.count, list(c.seen), c.v)


def test_method_with_attribute_writes_and_a_raise_nested_in_a_tensor_if():
    xs = [[1., 2.], [-1., -2.], [3., 1.], [-3., 1.], [2., 2.], [20., 1.], [-1., 0.], [1., 1.], [-60., 1.],
          [11., -1.], [2., 3.], [-2., -1.]]
    compare(make_method_nested_raise, [(C(v),) for v in xs])


def make_assert_after_early_return():
    log = []

    def f(x, items):
        if tf.reduce_sum(x) > 5.0:
            return x
        assert (n := len(items)) > 0, "no items"
        assert tf.reduce_min(x) > -float(n), f"min below -{n}"
        return -x * float(n)
    return f, lambda: list(log)


def test_assert_after_an_early_return_on_a_tensor():
    calls = [(C([1.0, 1.0]), [1]), (C([9.0, 1.0]), [1]), (C([0.5, 1.0]), [1, 2]), (C([3.0, 4.0]), []),
             (C([1.0, -1.5]), [1]), (C([1.0, 2.0]), [1, 2]), (C([1.0, 1.0]), []), (C([2.0, -3.0]), [1, 2]),
             (C([7.0, 0.0]), []), (C([0.0, 0.0]), [3]), (C([-5.0, 0.0]), [1, 2, 3])]
    compare(make_assert_after_early_return, calls)


def make_aliasing_handle():
    v = tf.Variable(0.0)
    alias = tf.identity(v.handle)         # the same resource as `v`, another handle tensor

    def f(x):
        tf.raw_ops.AssignAddVariableOp(resource=alias, value=x)
        a = v.read_value() * 1.0
        v.assign_add(x * 10.0)
        b = tf.raw_ops.ReadVariableOp(resource=alias, dtype=tf.float32) * 1.0
        return a, b
    return f, lambda: v, {"reset": lambda: v.assign(0.0)}


def test_a_held_handle_aliasing_a_used_variable_keeps_program_order():
    """Eager returns (1, 11) after each reset.  A graph would capture `alias` and `v.handle` as two
    inputs, and order the raw ops through `alias` with none of `v`'s own reads and writes: a
    handle kept outside beside another resource, with writes, runs the call in Python."""
    calls = [c for _ in range(12) for c in ("reset", (C(1.0),))]
    spec = compare(make_aliasing_handle, calls, min_graph=0)
    assert "resource-write" in spec.report(), spec.report()


def make_raw_write_then_guard():
    w = tf.Variable(0.0)
    held = type("Held", (), {})()
    held.h = w.handle

    def f(x):
        tf.raw_ops.AssignAddVariableOp(resource=held.h, value=tf.reduce_sum(x))
        if tf.reduce_sum(x) > 0.0:
            return x * 2.0
        return x - 1.0
    return f, lambda: w


def test_raw_write_through_a_held_handle_before_a_guard_that_fails():
    xs = [[1., 2.], [3., 4.], [1., 1.], [2., 2.], [5., 6.], [4., 4.], [-7., 1.], [1., 2.], [-2., -9.], [1.]]
    compare(make_raw_write_then_guard, [(C(v),) for v in xs])


# -- 5. pickling ---------------------------------------------------------------------------------------
def test_pickle_of_a_speculated_partial_and_of_an_unnamed_speculated_function():
    """A partial pickles its function by name; `janus.speculate(partial)` (and any speculated
    function not bound to a module name, held in an object) pickles as a new speculated function
    of the module's plain function (it had pickled as that function's name, which pickle refused
    as not the same object)."""
    import pickle
    for make in (lambda d: d(functools.partial(_h, n=2.0)), lambda d: {"fn": d(_h)}):
        plain = pickle.loads(pickle.dumps(make(lambda f: f)))
        spec = pickle.loads(pickle.dumps(make(janus.speculate)))
        assert isinstance(spec, type(plain))
        call = (lambda f: f(tf.constant(3.0))) if callable(plain) else (lambda d: d["fn"](tf.constant(3.0), n=2.0))
        assert call(plain)[0].numpy() == call(spec)[0].numpy() and call(plain)[1:] == call(spec)[1:]
