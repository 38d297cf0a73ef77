"""Special methods of the program's own classes (`__mul__`, `__len__`, `__bool__`, `__getitem__`,
`__contains__`, `__eq__`, `__iter__`) run as eager runs them on every call: their reads see the
state of that call and their writes are kept.  Attribute lookup that runs the program's code (a
descriptor's `__get__`, `__getattribute__`, `__getattr__`) runs once per read, as in eager."""
import tensorflow as tf

import janus
from tests.harness import assert_same, assert_same_outcome, run_capturing


class Scale:
    def __init__(self):
        self.k, self.on, self.uses, self.items = 2.0, False, 0, [1.0, 2.0]

    def __mul__(self, t):
        self.uses += 1
        return t * self.k

    def __rmul__(self, t):
        self.uses += 10
        return t * (self.k + 1.0)

    def __iadd__(self, t):
        self.k = self.k + 1.0
        return self

    def __len__(self):
        return int(self.k)

    def __bool__(self):
        return self.on

    def __getitem__(self, i):
        return self.items[i] * self.k

    def __contains__(self, v):
        return v == self.k

    def __eq__(self, other):
        return isinstance(other, Scale) and self.k == other.k

    def __iter__(self):
        return iter(self.items)

    def __lt__(self, v):
        self.uses += 1
        return self.k < v

    def __neg__(self):
        self.uses += 1
        return -self.k

    def __abs__(self):
        self.uses += 1
        return abs(self.k)

    def __float__(self):
        self.uses += 1
        return float(self.k)

    def __setitem__(self, i, v):
        self.uses += 1
        self.items[i] = v


def test_a_user_lt_decides_the_branch_of_each_call():
    _pair(lambda s, x: x * 2 if s < 3.0 else x)


def test_a_user_lt_in_a_chain():
    _pair(lambda s, x: x * 2 if s < 3.0 < 10.0 else x)


def test_a_user_neg_runs_on_every_call():
    _pair(lambda s, x: x * -s)


def test_user_abs_and_float_run_on_every_call():
    _pair(lambda s, x: x * abs(s) + float(s))


def test_a_user_setitem_writes_on_every_call():
    def f(s, x):
        s[0] = s.k
        return x
    _pair(f)


class Box:
    def __init__(self):
        self.n = 0


class Holder:
    def __init__(self):
        self.boxes = [Box()]

    def __getitem__(self, i):
        return self.boxes[i]


def _change(o, i):
    if i == 4:
        o.k, o.on = 5.0, True
        o.items.append(3.0)


def _pair(fn, make=Scale, between=_change, calls=7, graph_runs=1, state=vars):
    """`fn(obj, x)` on two equal objects, one eagerly and one speculated: same outcomes, same state."""
    eager_obj, janus_obj = make(), make()
    spec = janus.speculate(fn)
    for i in range(calls):
        if between is not None:
            between(eager_obj, i)
            between(janus_obj, i)
        x = tf.constant(1.0)
        assert_same_outcome(run_capturing(fn, (eager_obj, x)), run_capturing(spec, (janus_obj, x)))
        assert_same(state(eager_obj), state(janus_obj), "state")
    assert spec.stats()["graph_runs"] >= graph_runs, spec.report()
    return spec


def test_a_user_mul_runs_on_every_call_with_its_count():
    _pair(lambda s, x: s * x)


def test_a_user_rmul_runs_on_every_call():
    _pair(lambda s, x: 3.0 * s * x)


def test_a_user_iadd_writes_its_state():
    def f(s, x):
        s += x
        return s.k * x
    _pair(f)


def test_a_user_len_reads_the_state_of_each_call():
    _pair(lambda s, x: x * len(s))


def test_a_user_bool_decides_the_branch_of_each_call():
    _pair(lambda s, x: x * 10 if s else x)


def test_a_user_bool_in_an_if_statement():
    def f(s, x):
        if s:
            return x * 10
        return x
    _pair(f)


def test_a_user_getitem_reads_the_state_of_each_call():
    _pair(lambda s, x: x + s[1])


def test_a_user_contains_reads_the_state_of_each_call():
    _pair(lambda s, x: x * 2 if 5.0 in s else x)


def test_a_user_eq_sees_the_other_objects_change():
    other = Scale()

    def f(s, x):
        return x * 2 if s == other else x

    def change(o, i):
        if i == 4:
            other.k = 3.0
    _pair(f, between=change)


def test_a_user_iter_walks_the_items_of_each_call():
    def f(s, x):
        for t in s:
            x = x + t
        return x
    _pair(f)


def test_a_write_through_a_user_getitem_is_kept():
    def f(h, x):
        h[0].n += 1
        return x * h[0].n
    _pair(f, make=Holder, between=None, state=lambda h: [b.n for b in h.boxes])


# -- attribute lookup that runs the program's code ----------------------------------------------
class Counted:
    def __get__(self, obj, typ=None):
        if obj is None:
            return self
        obj.reads += 1
        return obj._w


class Described:
    w = Counted()

    def __init__(self):
        self.reads, self._w = 0, tf.constant(1.0)


class Logged:
    def __init__(self):
        object.__setattr__(self, "log", [])
        object.__setattr__(self, "w", tf.constant(2.0))

    def __getattribute__(self, name):
        object.__getattribute__(self, "log").append(name)
        return object.__getattribute__(self, name)


class Fallback:
    def __init__(self):
        self.misses = 0

    def __getattr__(self, name):
        self.misses += 1
        return tf.constant(3.0)


def test_a_descriptors_get_runs_once_per_read():
    _pair(lambda d, x: d.w * x, make=Described, between=None, graph_runs=0)


def test_a_logging_getattribute_runs_once_per_read():
    eager_obj, janus_obj = Logged(), Logged()
    spec = janus.speculate(lambda o, x: o.w * x)
    for _ in range(6):
        x = tf.constant(1.0)
        assert_same_outcome(run_capturing(lambda o, x: o.w * x, (eager_obj, x)), run_capturing(spec, (janus_obj, x)))
        assert object.__getattribute__(eager_obj, "log") == object.__getattribute__(janus_obj, "log")


def test_a_getattr_runs_once_per_missing_read():
    _pair(lambda o, x: o.w * x, make=Fallback, between=None, graph_runs=0)


class Keyed:
    def __init__(self):
        self.n = 0

    def __hash__(self):
        return self.n

    def __eq__(self, other):
        return self is other


def test_a_dict_keyed_by_a_user_hash_hashes_the_state_of_each_call():
    def f(pair, x):
        key, table = pair
        table[key] = table.get(key, 0) + 1
        return x + len(table)

    def change(pair, i):
        pair[0].n += 0 if i < 4 else 1
    _pair(f, make=lambda: (Keyed(), {}), between=change, graph_runs=0, state=lambda p: (p[0].n, len(p[1])))



class Tag:
    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return self.n == other.n


def test_membership_in_a_list_compares_by_the_user_eq_of_each_call():
    def f(pair, x):
        tag, tags = pair
        return x * 2 if tag in tags else x

    def change(pair, i):
        if i == 4:
            pair[0].n = 1
    _pair(f, make=lambda: (Tag(0), [Tag(1)]), between=change, graph_runs=0, state=lambda p: p[0].n)


class Lazy:
    __slots__ = ("log",)

    def __init__(self):
        self.log = []

    def __getattr__(self, name):
        self.log.append(name)
        return tf.constant(4.0)


def test_a_getattr_on_a_class_with_slots_runs_once_per_read():
    _pair(lambda o, x: o.w * x, make=Lazy, between=None, graph_runs=0, state=lambda o: list(o.log))


class Unordered:
    def __lt__(self, other):
        return NotImplemented


def test_an_order_no_method_answers_raises_as_eager():
    _pair(lambda o, x: x * 2 if o < 1.0 else x, make=Unordered, between=None, graph_runs=0, state=lambda o: 0)


class Ranked:
    def __init__(self, k=2.0):
        self.k, self.uses = k, 0

    def __lt__(self, other):
        self.uses += 1
        return self.k < other.k

    def __hash__(self):
        self.uses += 1
        return int(self.k)

    def __index__(self):
        self.uses += 1
        return int(self.k)


def _rank_change(o, i):
    if i == 4:
        o.k = 5.0


def test_builtins_calling_user_methods_see_the_state_of_each_call():
    def f(r, x):
        for _ in range(r):
            x = x + 1.0
        return x * max(r, Ranked(3.0)).k + hash(r)
    _pair(f, make=Ranked, between=_rank_change, graph_runs=0)
