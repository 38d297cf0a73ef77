"""helper-103: the program's code that Python's C code calls back (re.sub's repl, a defaultdict's
factory, iter(f, sentinel), operator getters, min/max) and objects of program classes made in the
call (abc classes, dataclasses, metaclasses, exceptions, Generic/Protocol, Enum), compared with
eager call by call: results, Python types, printed text, exceptions and Python state, also of
objects that escape the call (a defaultdict and its factory, an iterator, a chosen function)."""
import abc
import collections
import contextlib
import dataclasses
import enum
import functools
import io
import itertools
import operator
import pickle
import re
import threading
import types
import typing

import numpy as np
import tensorflow as tf

import janus

# Program code that C code or another class's machinery calls while the graph is built (an
# itemgetter's `__getitem__`, `__missing__`, a default_factory, `_missing_`, a metaclass `__call__`,
# `__new__`, a builtin subclass's `__init__`, a generic alias's call) is refused before it runs: the
# statement runs in Python (`graphs=False`), with the values and prints eager gives.

XS = [tf.constant(float(i)) for i in range(10)]
G = [1, 2, 3, 4]
NAMES = [True]                  # (compare functions, a defaultdict's factory, by name and identity)


def norm(r):
    if isinstance(r, tf.Tensor):
        assert not tf.is_symbolic_tensor(r), r
        return ("T", r.dtype.name, tuple(r.shape), r.numpy().tobytes())
    if isinstance(r, np.ndarray):
        return ("A", r.dtype.name, r.shape, r.tobytes())
    if isinstance(r, types.FunctionType):           # (a module's function: itself, not a stand-in)
        return ("function", r.__qualname__ if NAMES[0] else None, globals().get(r.__name__) is r)
    if isinstance(r, collections.defaultdict):
        return ("defaultdict", norm(r.default_factory) if NAMES[0] else None, tuple((norm(k), norm(v)) for k, v in r.items()))
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, tuple(norm(x) for x in r))
    if isinstance(r, dict):
        return ("dict", tuple((norm(k), norm(v)) for k, v in r.items()))
    if isinstance(r, float):
        return ("float", repr(r))
    if type(r).__name__ == "callable_iterator" or type(r).__module__ == "itertools":
        return ("ITER",)                            # (consumed by `after`)
    if type(r).__module__ == __name__ and hasattr(r, "__dict__"):
        return (type(r).__name__, norm(dict(vars(r))))
    return (type(r).__name__, repr(r))


def once(f, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            r = ("ok", norm(f(*args)))
        except Exception as e:  # noqa: BLE001 - compared with eager's
            r = ("exc", type(e).__name__, str(e))
    return r, out.getvalue()


def compare(fn, between=None, graphs=True, after=None, names=True):
    """fn(state, x) eagerly and speculated on states of their own; G changes from call 5 on."""
    se, sj = S(), S()
    spec = janus.speculate(fn)
    NAMES[0] = names
    try:
        for i, x in enumerate(XS):
            G[:] = [1, 2, 3, 4] if i < 5 else [i, 0, 2 * i, 1]
            between and between(se, i)
            e = once(fn, se, x)
            between and between(sj, i)
            j = once(spec, sj, x)
            assert e == j, f"call {i}: eager {e}\njanus {j}\n{spec.report()}"
            assert norm(se) == norm(sj), f"state after call {i}: eager {norm(se)}\njanus {norm(sj)}\n{spec.report()}"
            if after:
                e, j = once(after, se), once(after, sj)
                assert e == j, f"after call {i}: eager {e}\njanus {j}\n{spec.report()}"
    finally:
        NAMES[0] = True
    if graphs:
        assert spec.stats()["graph_runs"] > 0, spec.report()


class S:
    def __init__(self):
        self.count, self.log, self.w, self.d = 0, [], [3, 1, 2, 0], None


def fac():
    return G[0] * 10


def fac2():
    return G[1] * 10


# ==== FAIL: stand-ins escaping the call =============================================================

def k_dd_returned(s, x):
    d = collections.defaultdict(fac)
    d["a"] += 1
    return x + 1.0, d
def test_defaultdict_returned_keeps_program_factory():
    """eager: the returned dict's default_factory IS `fac` (same repr, picklable)."""
    compare(k_dd_returned)
def test_defaultdict_returned_pickles():
    spec = janus.speculate(k_dd_returned)
    for x in XS[:8]:
        d = spec(None, x)[1]
    assert spec.stats()["graph_runs"] > 0
    assert pickle.loads(pickle.dumps(d)) == d and d.default_factory is fac

def k_dd_stored(s, x):
    s.d = collections.defaultdict(lambda: (s.log.append("f"), G[0])[1])
    s.d["a"]
    return x
def test_defaultdict_stored_missing_key_after_call():
    """eager: s.d[new] after the call runs the lambda; janus gave RuntimeError (janus operators run
    only while a graph is being built): the factory the build made left the call.  It runs in Python."""
    compare(k_dd_stored, names=False, after=lambda s: (s.d["new" + str(len(s.log))], list(s.log)), graphs=False)

def k_dd_identity(s, x):
    d = collections.defaultdict(fac, {"a": fac}, b=fac)
    return x + 1.0, d.default_factory is fac, d["a"] is fac, d["b"] is fac, d.default_factory(), d["c"]
def test_defaultdict_factory_and_items_identity_inside_call():
    compare(k_dd_identity)

def k_dd_lambda_item(s, x):
    s.d = collections.defaultdict(list, f=lambda: G[0] + 1)
    return x + 1.0
def test_defaultdict_lambda_item_called_after_call():
    compare(k_dd_lambda_item, names=False, after=lambda s: s.d["f"](), graphs=False)   # (the lambda: Python)

def k_max_of_functions(s, x):
    s.best = max(fac, fac2, key=lambda f: f())
    return x * 2.0, s.best is fac, s.best.__name__
def test_max_of_program_functions_returns_the_function():
    compare(k_max_of_functions, after=lambda s: s.best())

def k_min_of_lambdas(s, x):
    s.best = min(lambda: G[0] + 1, lambda: G[1] + 2, key=lambda f: -f())
    return x + 1.0
def test_min_of_lambdas_called_after_call():
    compare(k_min_of_lambdas, names=False, after=lambda s: s.best(), graphs=False)   # (a lambda made: Python)


# ==== FAIL: program code called by C or by library code, run once at build time ====================

class Cell:
    def __init__(self, r):
        self.r = r
    def __getitem__(self, k):
        return G[self.r] + k

CELLS = [Cell(0), Cell(3), Cell(2)]

def k_itemgetter(s, x):
    return x + 1.0, operator.itemgetter(1)(CELLS[0]), list(map(operator.itemgetter(0), CELLS))
def test_itemgetter_program_getitem():
    compare(k_itemgetter, graphs=False)

class Missing(dict):
    def __missing__(self, k):
        print("missing", k)
        return G[0] + len(k)

def k_dict_missing(s, x):
    return x * 2.0, Missing(a=1)["bb"]
def test_dict_subclass_missing():
    compare(k_dict_missing, graphs=False)

@dataclasses.dataclass
class DC:
    a: int = 0
    xs: list = dataclasses.field(default_factory=lambda: [G[0], G[2]])

def k_dataclass(s, x):
    return x + 1.0, DC(), DC(5).xs
def test_dataclass_default_factory_reads_global():
    compare(k_dataclass, graphs=False)

class Color(enum.Enum):
    RED = 1
    BLUE = 2
    @classmethod
    def _missing_(cls, value):
        print("missing", value)
        return cls.BLUE if G[3] > 1 else cls.RED

def k_enum_missing(s, x):
    return x, Color(G[0] % 3 + 1).name, Color(99).name
def test_enum_missing_hook():
    compare(k_enum_missing, graphs=False)

class Meta(type):
    def __call__(cls, *a):
        print("meta", a)
        obj = super().__call__(*a)
        obj.tag = G[0]
        return obj

class Tagged(metaclass=Meta):
    def __init__(self, v):
        self.v = v * G[2]

def k_metaclass_call(s, x):
    t = Tagged(2)
    return x * 2.0, t.v, t.tag
def test_metaclass_with_call():
    compare(k_metaclass_call, graphs=False)

class Own:
    def __new__(cls, v):
        obj = super().__new__(cls)
        obj.n = G[1]
        return obj
    def __init__(self, v):
        self.v = v + G[3]

def k_own_new(s, x):
    o = Own(1)
    return x, o.n, o.v
def test_class_with_own_new():
    compare(k_own_new, graphs=False)

class Bad(Exception):
    def __init__(self, v):
        super().__init__(v)
        self.v = v * G[2]
        print("bad", self.v)

def k_exception_made(s, x):
    e = Bad(2)
    return x + 1.0, e.v, e.args
def test_exception_subclass_init_reads_global():
    compare(k_exception_made, graphs=False)

class Bag(list):
    def __init__(self, v):
        super().__init__([v, G[0]])

def k_list_subclass_made(s, x):
    return x + 1.0, list(Bag(3))
def test_list_subclass_init_reads_global():
    compare(k_list_subclass_made, graphs=False)

T = typing.TypeVar("T")

class Box(typing.Generic[T]):
    def __init__(self, v):
        print("box", v)
        self.v = v * G[0]

def k_generic_alias(s, x):
    return x * 2.0, Box[int](3).v
def test_generic_alias_made():
    compare(k_generic_alias, graphs=False)


# ==== passing: regression tests ====================================================================

def k_sub_count_flags(s, x):
    def repl(m):
        s.count += 1
        print("repl", m.group())
        return str(G[0]) + m.group().upper()
    return x + 1.0, re.sub(r"[a-c]", repl, "aBcDa", count=2, flags=re.I), re.compile(r"\d").subn(repl, "1x2y3", 2)
def test_re_sub_count_flags_prints_writes():
    compare(k_sub_count_flags)

def k_sub_non_str(s, x):
    def repl(m):
        s.log.append(m.group())
        return G[1] or "z"                  # an int on calls 0-4: re's TypeError
    try:
        r = re.sub("a", repl, "aa")
    except TypeError as e:
        r = "caught " + str(e)
    return x * 2.0, r
def test_re_sub_repl_returns_non_str_caught():
    compare(k_sub_non_str, graphs=False)            # (try/except: runs in Python)

def k_sub_raises(s, x):
    def repl(m):
        s.log.append(G[0])
        print("repl", G[0])
        if G[0] > 6:
            raise ValueError("big %d" % G[0])
        return "-" * G[1]
    s.count += 1
    return x, re.sub("a", repl, "aaa")
def test_re_sub_repl_raises_uncaught():
    compare(k_sub_raises)

class Repl:
    n = 0
    def __call__(self, m):
        Repl.n += 1
        return str(G[0])

def k_sub_callable_object(s, x):
    return x, re.sub("a", Repl(), "aXa"), Repl.n
def test_re_sub_callable_object_repl():
    compare(k_sub_callable_object, between=lambda s, i: setattr(Repl, "n", 0))

def k_sub_in_tensor_if(s, x):
    def repl(m):
        print("sub", G[0])
        s.log.append(G[0])
        return str(G[0])
    if x > 3.0:
        s.count += len(re.sub("a", repl, "aa"))
    return tf.cond(x > 5.0, lambda: x + float(operator.attrgetter("child.rank")(NODES[0])), lambda: x)
def test_re_sub_in_tensor_if_and_attrgetter_in_tf_cond():
    compare(k_sub_in_tensor_if, graphs=False)

class Made:
    n = 0
    def __init__(self):
        Made.n += 1
        self.v = G[2]
        print("made", self.v)

def k_dd_class_factory(s, x):
    d = collections.defaultdict(Made)
    s.count = Made.n
    return x * 3.0, d["p"].v, d["q"].v, d["p"].v
def test_defaultdict_program_class_factory():
    compare(k_dd_class_factory, between=lambda s, i: setattr(Made, "n", 0))

def k_dd_in_tensor_if(s, x):
    d = collections.defaultdict(lambda: (s.log.append(G[0]), G[0])[1])
    y = x + float(d["a"]) if x > 4.0 else x - float(d["b"] + d["c"])
    if x > 6.0:
        y = tf.cond(x > 7.0, lambda: y + float(collections.defaultdict(fac)["k"]), lambda: y)
    return y
def test_defaultdict_factory_in_tensor_if_and_tf_cond():
    compare(k_dd_in_tensor_if)

def k_iter_stored(s, x):
    src = iter(range(10))
    def f():
        s.log.append("f")
        return next(src) * G[3]
    s.it = iter(f, 3)
    s.g = itertools.groupby([1, 1, 2, 3], key=lambda v: (s.log.append(v), v * G[0] // 4)[1])
    return x + 1.0
def test_iter_sentinel_and_groupby_stored_unconsumed():
    compare(k_iter_stored, graphs=False, after=lambda s: (list(s.it), [k for k, _ in s.g], list(s.log)))

def k_iter_loops(s, x):
    acc = x
    for i in tf.range(2):
        it = iter([1, 2, 3, 4])
        acc = acc + float(sum(iter(lambda: next(it) * G[3], G[2])))
    s.w = [3, 1, G[0], 0]
    return acc, list(iter(s.w.pop, G[1])), list(s.w)
def test_iter_sentinel_in_tf_range_loop_and_bound_pop():
    compare(k_iter_loops)

class Node:
    def __init__(self, r, child=None):
        self.r, self.child = r, child
    @property
    def rank(self):
        print("rank", self.r)
        return G[self.r]
    def score(self, k=1):
        return G[self.r] * k

NODES = [Node(0, Node(1, Node(2))), Node(3, Node(0)), Node(2, Node(3, Node(1)))]

def k_getters(s, x):
    g = operator.attrgetter("child.rank", "r")
    return x, [g(n) for n in NODES], [n.r for n in sorted(NODES, key=operator.attrgetter("child.rank"))], \
        list(map(operator.methodcaller("score", k=G[1]), NODES)), operator.methodcaller("get", "a", G[0])({}), \
        operator.attrgetter("dtype.name", "shape.rank")(x), operator.methodcaller("__mul__", 3.0)(x)
def test_attrgetter_dotted_methodcaller_kwargs_and_tensors():
    compare(k_getters)

def k_getter_errors(s, x):
    try:
        v = operator.attrgetter("child.child.rank")(NODES[G[1] % 3])
    except AttributeError as e:
        v = str(e)
    return x, v, operator.methodcaller("numpy")(x)
def test_attrgetter_missing_caught_and_methodcaller_numpy():
    compare(k_getter_errors, graphs=False)          # (graph segments)

def k_mc_list(s, x):
    v = operator.methodcaller("pop")(s.w)
    operator.methodcaller("append", v * G[0])(s.w)
    operator.methodcaller("insert", 0, G[1])(s.w)
    operator.methodcaller("append", x * 2.0)(s.log)
    return x + float(v)
def test_methodcaller_mutates_program_lists():
    compare(k_mc_list, graphs=False)
def test_threads_re_sub():
    spec = janus.speculate(k_sub_raises)
    errors, states = [], [S() for _ in range(3)]
    G[:] = [1, 2, 3, 4]
    def work(s):
        try:
            for x in XS:
                with contextlib.redirect_stdout(io.StringIO()):
                    assert spec(s, x)[1] == "------", "wrong"
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(s,)) for s in states]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert all(s.log == [1] * 30 and s.count == 10 for s in states), [len(s.log) for s in states]

class Base(abc.ABC):
    def __init__(self):
        print("base", G[0])
        self.b = G[0]
    @abc.abstractmethod
    def area(self):
        ...

class Full(Base):
    def __init__(self, v):
        super().__init__()
        self.v = v * G[2]
    def area(self):
        return self.v * self.b

class Half(Base):
    pass

def k_abc(s, x):
    acc = x
    for i in tf.range(2):
        acc = acc + float(Full(1).area())
    return acc, Full(2).area() if G[1] else Half()
def test_abc_chain_abstract_by_global_and_in_tf_range():
    compare(k_abc)

REGISTRY = []

class Plugin:
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        REGISTRY.append(G[0])

def k_subclass_in_call(s, x):
    class Local(Plugin):
        def __init__(self):
            self.v = G[3]
    return x, Local().v, len(REGISTRY)
def test_init_subclass_of_class_defined_in_call():
    compare(k_subclass_in_call, graphs=False, between=lambda s, i: REGISTRY.clear())

class Pt(typing.NamedTuple):
    a: int
    b: int = 7
    @property
    def s(self):
        return self.a + self.b * G[1]

class Proto(typing.Protocol):
    def area(self) -> int:
        ...

class Impl(Proto):
    def __init__(self, v):
        self.v = v + G[1]
    def area(self):
        return self.v

def k_namedtuple_generic_protocol(s, x):
    return x * 2.0, Pt(G[0]), Pt(1).s, Box(2).v, Impl(1).area()
def test_namedtuple_generic_protocol_made():
    compare(k_namedtuple_generic_protocol, graphs=False)     # (`Pt.s`, a NamedTuple's property: Python)

def k_dd_tensor_values(s, x):
    s.d = collections.defaultdict(lambda: x * 2.0)
    return s.d["a"] + 1.0, len(s.d)
def test_defaultdict_of_tensors_escapes():
    compare(k_dd_tensor_values, names=False, after=lambda s: dict(s.d), graphs=False)   # (its factory: Python)

def k_repl_reads_tensor(s, x):
    return x, re.sub("a", lambda m: str(int(x)), "aXa"), sorted([2, 1], key=lambda v: float(x) * v)
def test_re_sub_repl_reads_tensor_value():
    compare(k_repl_reads_tensor, graphs=False)

class Held(abc.ABC):
    def __init__(self, t):
        self.t = t * float(G[0])
        Made.n += 1
    @property
    def twice(self):
        Repl.n += 1
        return self.t * 2.0

def k_abc_holds_tensor(s, x):
    s.obj = Held(x)
    return operator.attrgetter("twice")(s.obj), Made.n, Repl.n
def test_abc_object_holding_tensor_escapes_and_property_writes():
    def between(s, i):
        Made.n = Repl.n = 0
    compare(k_abc_holds_tensor, between=between)

class Fresh:
    def __call__(self):
        Repl.n += 1
        return [G[0]]

FRESH = Fresh()

def k_dd_callable_instance(s, x):
    s.d = collections.defaultdict(FRESH)
    s.d["a"].append(G[1])
    return x + 1.0, s.d.default_factory is FRESH, Repl.n
def test_defaultdict_callable_instance_factory():
    compare(k_dd_callable_instance, between=lambda s, i: setattr(Repl, "n", 0), after=lambda s: s.d["b"])

class Fails:
    @property
    def p(self):
        if G[0] > 6:
            raise KeyError(G[0])
        return G[0]
    def m(self, k):
        if G[0] > 7:
            raise ValueError(k)
        return k * G[2]

def k_getters_raise(s, x):
    sub = functools.partial(re.sub, "a", lambda m: str(G[1]))
    return x * 2.0, operator.attrgetter("p")(Fails()), operator.methodcaller("m", 3)(Fails()), sub("aa")
def test_getters_raise_uncaught_and_partial_of_re_sub():
    compare(k_getters_raise)

def k_lambda_stored(s, x):
    s.best = lambda: G[0] + 1
    return x + 1.0
def test_lambda_stored_called_after_call():
    compare(k_lambda_stored, names=False, graphs=False, after=lambda s: s.best())    # (runs in Python)

def k_lambda_in_containers(s, x):
    s.d = {"f": lambda: G[0] + 1}
    s.log.append(lambda: G[1] + 1)
    s.w = (lambda: G[2],)
    return x + 1.0
def test_lambdas_in_containers_called_after_call():
    compare(k_lambda_in_containers, names=False, graphs=False, after=lambda s: (s.d["f"](), s.log[-1](), s.w[0]()))
