"""The facts probes record: branch outcomes, loop trips, callees, attributes,
returns and arguments, each at the span codegen will look for."""

import inspect

import numpy as np
import pytest
import tensorflow as tf

from profiler import Profile, SiteKind, code_key, profile_call


def span_of(fn, text, occurrence=0):
    """Absolute source span of the ``occurrence``-th ``text`` in ``fn``."""
    lines, first = inspect.getsourcelines(fn)
    seen = 0
    for i, line in enumerate(lines):
        col = line.find(text)
        while col >= 0:
            if seen == occurrence:
                return (first + i, col, first + i, col + len(text))
            seen += 1
            col = line.find(text, col + 1)
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def run_many(fn, arg_lists):
    profile = Profile()
    for args in arg_lists:
        outcome, returned = profile_call(fn, args, {}, profile=profile)
        assert outcome[0] == "return"
        assert returned is profile
    return profile.get(fn)


def sign(x):
    if x > 0:
        return 1
    return -1


def test_if_outcomes_counted_over_calls():
    fp = run_many(sign, [(1,), (2,), (-1,), (5,)])
    site = fp.site(SiteKind.BRANCH, span_of(sign, "x > 0"))
    assert site.outcomes() == (3, 1)
    assert site.count == 4 and len(site.instances) == 1
    assert site.value.types == {"bool": 4}
    assert fp.calls == 4


def count_up(n):
    i = 0
    while i < n:
        i += 1
    return i


def test_while_trip_counts():
    fp = run_many(count_up, [(3,), (0,), (5,)])
    site = fp.site(SiteKind.BRANCH, span_of(count_up, "i < n"))
    assert site.trips == [3, 0, 5]
    assert [i.offset for i in site.instances] == sorted(i.offset for i in site.instances)
    entry, bottom = site.instances
    assert (entry.true, entry.false) == (2, 1)  # n=0 fails at the entry test
    assert (bottom.true, bottom.false) == (6, 2)
    assert site.constant_trips() is None


def loop_sum(xs):
    total = 0
    for x in xs:
        total += x
    return total


def test_for_trip_counts_and_iterable():
    fp = run_many(loop_sum, [([1, 2, 3],), ([4] * 7,), ((5, 6, 7),)])
    lines, first = inspect.getsourcelines(loop_sum)
    (site,) = fp.sites_of(SiteKind.LOOP)
    assert site.span[0] == first + 2 and site.span[2] == first + 3  # `for` .. body
    assert site.trips == [3, 7, 3]
    assert site.value.types == {"list": 2, "tuple": 1}
    assert site.value.lengths == {3, 7}
    assert run_many(loop_sum, [([1, 1],)] * 3).sites_of(SiteKind.LOOP)[0].constant_trips() == 2


def nested_for(n):
    out = 0
    for i in range(n):
        for j in range(i):
            out += j
    return out


def test_nested_for_counts_each_entry():
    fp = run_many(nested_for, [(4,)])
    outer, inner = fp.sites_of(SiteKind.LOOP)
    assert outer.trips == [4]
    assert inner.trips == [0, 1, 2, 3]
    assert inner.value.lengths == {0, 1, 2, 3}


def double(x):
    return 2 * x


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return self.k * x


def caller(s, x):
    a = double(x)
    b = s.apply(x=a)
    return a + b


def test_callees_recorded_at_call_span():
    outcome, profile = profile_call(caller, (Scaler(3), 2), {})
    assert outcome == ("return", 16)
    fp = profile.get(caller)
    call_double = fp.site(SiteKind.CALL, span_of(caller, "double(x)"))
    call_apply = fp.site(SiteKind.CALL, span_of(caller, "s.apply(x=a)"))
    assert call_double.callees == {code_key(double): 1}
    assert call_apply.callees == {code_key(Scaler.apply): 1}
    assert call_double.value.values == [4]
    assert profile.get(Scaler.apply).args["self"].types == {f"{__name__}.Scaler": 1}


def factorial(n):
    if n == 0:
        return 1
    return n * factorial(n - 1)


def test_recursion_records_every_call():
    n = 6
    outcome, profile = profile_call(factorial, (n,), {})
    assert outcome == ("return", 720)
    fp = profile.get(factorial)
    assert fp.calls == n + 1
    site = fp.site(SiteKind.CALL, span_of(factorial, "factorial(n - 1)"))
    assert site.callees == {code_key(factorial): n}
    assert fp.site(SiteKind.BRANCH, span_of(factorial, "n == 0")).outcomes() == (1, n)
    assert sorted(fp.args["n"].values) == list(range(0, n + 1))


def recursive_loops(n):
    trips = 0
    for _ in range(n):
        trips += 1
        if n > 1:
            recursive_loops(n - 1)
    return trips


def test_recursion_keeps_loop_entries_apart():
    _, profile = profile_call(recursive_loops, (3,), {})
    (site,) = profile.get(recursive_loops).sites_of(SiteKind.LOOP)
    # one entry at n=3 (3 trips), three at n=2 (2 trips), six at n=1 (1 trip)
    assert sorted(site.trips) == [1] * 6 + [2] * 3 + [3]
    assert site.trips[0] == 3 and site.count == 10


class Model:
    def __init__(self):
        self.weight = tf.constant([[1.0, 2.0]])
        self.steps = 0

    def step(self, x):
        self.steps = self.steps + 1
        return self.weight * x


def test_attribute_loads_and_stores():
    m = Model()
    _, profile = profile_call(m.step, (3.0,), {})
    fp = profile.get(Model.step)
    store = fp.site(SiteKind.ATTR_STORE, span_of(Model.step, "self.steps"))
    assert store.attr == "steps"
    assert store.owner_types == {f"{__name__}.Model": 1}
    assert store.value.values == [1]
    load = fp.site(SiteKind.ATTR_LOAD, span_of(Model.step, "self.weight"))
    assert load.attr == "weight" and load.count == 1
    assert load.value.dtypes == {"float32"} and load.value.single_shape == (1, 2)
    assert m.steps == 1


def make_tensor(n):
    return tf.ones([n, 3], dtype=tf.float64)


def test_return_tensor_dtype_and_shape():
    fp = run_many(make_tensor, [(2,), (5,)])
    (site,) = fp.sites_of(SiteKind.RETURN)
    assert site.value.types == {"tensorflow.python.framework.ops.EagerTensor": 2}
    assert site.value.dtypes == {"float64"}
    assert site.value.shapes == {(2, 3), (5, 3)}
    assert site.value.single_shape is None
    assert not site.value.is_constant


def takes_args(x, n, flag, *rest, arr=None, **extra):
    return n


def test_argument_facts():
    x = tf.zeros([4, 2], dtype=tf.int32)
    profile = Profile()
    for n in (1, 1):
        profile_call(takes_args, (x, n, True, "r"), {"arr": np.zeros((3,), np.float32), "k": 1},
                     profile=profile)
    args = profile.get(takes_args).args
    assert list(args) == ["x", "n", "flag", "arr", "rest", "extra"]
    assert args["x"].dtypes == {"int32"} and args["x"].single_shape == (4, 2)
    assert args["n"].is_constant and args["n"].values == [1] and args["n"].count == 2
    assert args["flag"].values == [True]
    assert args["arr"].types == {"numpy.ndarray": 2} and args["arr"].single_shape == (3,)
    assert args["rest"].lengths == {1}
    assert not args["x"].is_constant


def tensor_branch(x):
    if tf.reduce_sum(x) > 0:
        return 1
    if x is None:
        return 2
    return 0


def test_tensor_branch_truth_and_none_test():
    fp = run_many(tensor_branch, [(tf.constant([1.0]),), (tf.constant([-1.0, -2.0]),)])
    site = fp.site(SiteKind.BRANCH, span_of(tensor_branch, "tf.reduce_sum(x) > 0"))
    assert site.outcomes() == (1, 1)
    assert site.value.dtypes == {"bool"} and site.value.shapes == {()}
    none_site = fp.site(SiteKind.BRANCH, span_of(tensor_branch, "x is None"))
    assert none_site.outcomes() == (0, 1)


class Truthy:
    def __init__(self):
        self.calls = 0

    def __bool__(self):
        self.calls += 1
        return True


def user_bool(t):
    return 1 if t else 0


def test_user_bool_is_not_called_by_the_probe():
    t = Truthy()
    _, profile = profile_call(user_bool, (t,), {})
    assert t.calls == 1
    (site,) = profile.get(user_bool).sites_of(SiteKind.BRANCH)
    assert site.instances[0].unknown == 1 and site.outcomes() == (0, 0)


def test_code_key_of_functions_methods_and_code():
    assert code_key(double) == code_key(double.__code__)
    assert code_key(Scaler(1).apply) == code_key(Scaler.apply)
    assert code_key(double).endswith(":double")


def test_unknown_python_version_is_a_clear_error():
    from profiler import versions
    with pytest.raises(versions.UnsupportedPythonVersion, match="3.99"):
        versions.current((3, 99))
