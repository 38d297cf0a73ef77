"""Python library objects and idioms inside a speculated function: `__slots__` objects the function
makes, `functools.singledispatch` on a Python number argument, `x.__class__` of a Python number,
`copy.copy` of a user object whose list is then appended to, and keyword arguments named `f`.
Each call must give eager's values, types and state changes."""
import copy
import dataclasses
import functools

import tensorflow as tf

import janus


class Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def make_slotted(x):
    return Slotted(x * 2.0)


def test_an_object_with_slots_the_function_makes_holds_eager_tensors():
    """The function returns a new `__slots__` object holding `x * 2.0`: eager returns a new object
    per call holding an EagerTensor [2i]."""
    spec = janus.speculate(make_slotted)
    results = []
    for i in range(6):
        got = spec(tf.constant([float(i)]))
        results.append(got)
        assert type(got.v) is type(make_slotted(tf.constant([0.0])).v), f"call {i}: {type(got.v).__name__}"
        assert float(got.v[0]) == 2.0 * i
    assert len({id(r) for r in results}) == len(results)


def make_slotted_number(x):
    return [Slotted(int(x[0]) + 1)]


def test_an_object_with_slots_holds_a_python_int_computed_from_a_tensor():
    """`Slotted(int(x[0]) + 1)` in a returned list: eager's attribute is the Python int i + 1."""
    spec = janus.speculate(make_slotted_number)
    for i in range(6):
        got = spec(tf.constant([i]))
        assert type(got[0].v) is int and got[0].v == i + 1, f"call {i}: {type(got[0].v).__name__}"


def store_slotted(x, log):
    log.append(Slotted(x * 2.0))
    return x


def test_an_object_with_slots_stored_into_an_argument_list_holds_eager_tensors():
    """Each call appends a new `Slotted(x * 2.0)` to the caller's list: eager's list holds six
    distinct objects, each with an EagerTensor."""
    spec = janus.speculate(store_slotted)
    log = []
    for i in range(6):
        spec(tf.constant([float(i)]), log)
    assert len({id(o) for o in log}) == 6
    for i, o in enumerate(log):
        assert type(o.v) is type(tf.constant(0.0)), f"item {i}: {type(o.v).__name__}"
        assert float(o.v[0]) == 2.0 * i


@functools.singledispatch
def describe(v):
    return ("other", v)


@describe.register
def _(v: int):
    return ("int", v * 10)


def dispatch(n):
    return describe(n)


def test_singledispatch_on_a_python_int_argument_takes_the_int_implementation():
    """`describe(n)` with n = 1..8: eager always takes the `int` implementation, ("int", 10 * n)."""
    spec = janus.speculate(dispatch)
    for n in range(1, 9):
        assert spec(n) == ("int", 10 * n), f"n={n}: {spec(n)!r}"


def class_of_int(n):
    return n.__class__ is int, n.__class__.__name__


def test_the_class_of_a_python_int_argument_is_int():
    """`n.__class__` of a Python int argument (1..8): eager gives (True, 'int')."""
    spec = janus.speculate(class_of_int)
    for n in range(1, 9):
        assert spec(n) == (True, "int"), f"n={n}: {spec(n)!r}"


def class_of_float(x):
    return float(x[0]).__class__.__name__


def test_the_class_of_a_float_computed_from_a_tensor_is_float():
    """`float(x[0]).__class__.__name__`: eager gives 'float' on every call."""
    spec = janus.speculate(class_of_float)
    for i in range(6):
        assert spec(tf.constant([float(i)])) == "float"


class Holder:
    def __init__(self):
        self.hist = []


def append_through_copy(x, b):
    b2 = copy.copy(b)
    b2.hist.append(x * 2.0)         # the copy shares `hist` with the caller's object
    return x


def test_appending_through_a_shallow_copy_reaches_the_callers_list():
    """`copy.copy(b).hist.append(x * 2.0)`: the copy's list is the caller's, so after six calls
    eager's `b.hist` holds six EagerTensors [0], [2], ..., [10]."""
    spec = janus.speculate(append_through_copy)
    b = Holder()
    for i in range(6):
        spec(tf.constant([float(i)]), b)
    assert len(b.hist) == 6, f"{len(b.hist)} items: {[type(v).__name__ for v in b.hist]}"
    for i, v in enumerate(b.hist):
        assert type(v) is type(tf.constant(0.0)), f"item {i}: {type(v).__name__}"
        assert float(v[0]) == 2.0 * i


def append_number_through_copy(x, b):
    b2 = copy.copy(b)
    b2.hist.append(float(x[0]))
    return x


def test_a_float_appended_through_a_shallow_copy_is_a_python_float():
    """As above with `float(x[0])`: eager's `b.hist` is [0.0, 1.0, ..., 5.0], Python floats."""
    spec = janus.speculate(append_number_through_copy)
    b = Holder()
    for i in range(6):
        spec(tf.constant([float(i)]), b)
    assert [type(v).__name__ for v in b.hist] == ["float"] * 6
    assert b.hist == [float(i) for i in range(6)]


class Scale:
    def __init__(self):
        self.n = 1.0


def scale_through_copy(x, s):
    return x * copy.copy(s).n


def test_an_attribute_read_through_a_shallow_copy_is_the_calls_value():
    """`s.n` is set to i before call i; `x * copy.copy(s).n` gives [i] eagerly on every call."""
    spec = janus.speculate(scale_through_copy)
    s = Scale()
    for i in range(6):
        s.n = float(i)
        got = spec(tf.constant([1.0]), s)
        assert float(got[0]) == float(i), f"call {i}: {got!r}"


@dataclasses.dataclass
class Record:
    v: float
    items: list = dataclasses.field(default_factory=list)


def append_through_replace(x, r):
    r2 = dataclasses.replace(r, v=1.0)
    r2.items.append(x * 2.0)        # `replace` shares `items` with the caller's record
    return x


def test_appending_to_a_list_a_replaced_dataclass_shares_reaches_the_callers_list():
    """`dataclasses.replace(r, v=1.0).items.append(x * 2.0)`: after six calls eager's `r.items`
    holds six EagerTensors [0], [2], ..., [10]."""
    spec = janus.speculate(append_through_replace)
    r = Record(0.0)
    for i in range(6):
        spec(tf.constant([float(i)]), r)
    assert [type(v).__name__ for v in r.items] == ["EagerTensor"] * 6
    assert [float(v[0]) for v in r.items] == [2.0 * i for i in range(6)]


def affine(x, f=1.0, b=0.0):
    return x * f + b


def keyword_f(x):
    return affine(x, f=3.0)


def test_a_keyword_argument_named_f_runs_in_the_graph():
    """`affine(x, f=3.0)` gives x * 3 (eager); a keyword named `f` is an ordinary keyword and the
    function has nothing that needs Python."""
    spec = janus.speculate(keyword_f)
    for i in range(6):
        assert float(spec(tf.constant([float(i)]))[0]) == 3.0 * i
    assert spec.stats()["graph_runs"] >= 2, spec.report()
