"""State a class keeps, reached through an instance: a list defined on the class and appended
to through `self` is the class's own list (each call appends once, and only eager values land in
it), and a list a property hands out is never changed while the graph is built."""
import tensorflow as tf

import janus


class Buf:
    items = []                      # one buffer shared by every instance

    def push(self, v):
        self.items.append(v)


class Log:
    log = []
    count = 3

    def note(self, v):
        self.log.append(1)
        return v * 2


class Kept:
    def __init__(self):
        self._items = []

    @property
    def items(self):
        return self._items


def pushes(b, x):
    b.push(x * 2)
    return len(b.items)


def notes(k, x):
    return k.note(x) + len(k.log)


def appends_a_class_count(c, x):
    c.log.append(c.count)
    return x * len(c.log)


def appends_through_a_property(k, x):
    k.items.append(x)
    return x * len(k.items)


def _run(fn, make, state, calls=7):
    """Eagerly and speculated, each on fresh state: results and the state after every call."""
    out = []
    for f in (fn, janus.speculate(fn)):
        Buf.items, Log.log = [], []
        obj = make()
        run = []
        for _ in range(calls):
            r = f(obj, tf.constant(1.0))
            held = state(obj)
            assert all(not tf.is_symbolic_tensor(v) for v in held), f"a graph tensor in {held!r}"
            run.append((float(r), [float(v) for v in held]))
        out.append(run)
    assert out[0] == out[1]
    return f


def test_a_class_level_list_appended_through_self():
    spec = _run(pushes, Buf, lambda b: Buf.items)
    assert spec.stats()["graph_runs"] > 0


def test_a_class_level_list_of_ints_appended_in_a_method():
    spec = _run(notes, Log, lambda k: Log.log)
    assert spec.stats()["graph_runs"] > 0


def test_a_class_level_number_appended_to_a_class_level_list():
    spec = _run(appends_a_class_count, Log, lambda k: Log.log)
    assert all(type(v) is int for v in Log.log)
    assert spec.stats()["graph_runs"] > 0


def test_a_list_a_property_hands_out_is_appended_to():
    _run(appends_through_a_property, Kept, lambda k: k._items)


class A:
    def __init__(self):
        self.k = tf.constant(2.0)


class Slotted:
    __slots__ = ("k", "extra")

    def __init__(self):
        self.k = tf.constant(2.0)


def asks_hasattr(o, x):
    if hasattr(o, "extra"):
        return x + o.extra
    return x * o.k


def reads_with_a_default(o, x):
    extra = getattr(o, "extra", None)
    return x * o.k if extra is None else x + extra


def _added_later(fn, make, add):
    """Eagerly and speculated: the attribute is added before the fifth call."""
    out = []
    for f in (fn, janus.speculate(fn)):
        o = make()
        run = []
        for i in range(7):
            if i == 4:
                add(o)
            run.append(float(f(o, tf.constant(1.0))))
        out.append(run)
        if hasattr(A, "extra"):
            del A.extra
    assert out[0] == out[1]
    assert f.stats()["graph_runs"] > 0
    return f


def _on_instance(o):
    o.extra = tf.constant(50.0)


def _on_class(o):
    type(o).extra = tf.constant(50.0)


def test_hasattr_of_a_missing_attribute_added_to_the_instance_later():
    _added_later(asks_hasattr, A, _on_instance)


def test_hasattr_of_a_missing_attribute_added_to_the_class_later():
    _added_later(asks_hasattr, A, _on_class)


def test_getattr_with_a_default_of_an_attribute_added_later():
    _added_later(reads_with_a_default, A, _on_instance)


def test_hasattr_of_an_unset_slot_set_later():
    _added_later(asks_hasattr, Slotted, _on_instance)
