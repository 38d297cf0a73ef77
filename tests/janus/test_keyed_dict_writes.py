"""`d[n] = v` on an outside dict with a Python int `n` that varies between calls (`self.losses[self.step]
= loss`, `log[len(log)] = y`): one graph serves every call, the write-back assigns the item with the
number itself, and every call returns, prints and leaves what eager does, also where the call uses
the dict again after such a write (the build then specialises on the number)."""
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, run_capturing


class Trainer:
    def __init__(self, step=0, losses=None):
        self.step = step
        self.losses = {} if losses is None else losses


def by_step(t, x):
    loss = tf.reduce_sum(x * 2.0)
    t.losses[t.step] = loss
    t.step += 1
    return loss


LOG = {}


def by_length(x):
    y = x * 2.0
    LOG[len(LOG)] = y
    return y + 1.0


def by_argument(d, k, x):
    d[k] = x * 3.0
    return x


def _items(d):
    """A dict's items in order, with each key's type (`True` and `1` are one key)."""
    return [(type(k), k, v.numpy().tolist() if isinstance(v, tf.Tensor) else v) for k, v in d.items()]


def _compare(fn, make, calls, graph_hits=True):
    """`fn(state, *args)` eagerly and speculated on equal states, one argument tuple per call."""
    eager_s, spec_s = make(), make()
    spec = janus.speculate(fn)
    for i, args in enumerate(calls):
        (ek, ev), eout = run_capturing(fn, (eager_s, *args))
        (jk, jv), jout = run_capturing(spec, (spec_s, *args))
        assert (ek, eout) == (jk, jout), f"call {i}: eager {ek}s {ev!r} {eout!r}, janus {jk}s {jv!r} {jout!r}"
        if ek == "raise":
            assert type(ev) is type(jv) and str(ev) == str(jv), f"call {i}: eager {ev!r}, janus {jv!r}"
        else:
            assert_same(ev, jv, f"call {i}")
        for name in vars(eager_s):
            e, j = getattr(eager_s, name), getattr(spec_s, name)
            assert _items(e) == _items(j) if type(e) is dict else (type(e), e) == (type(j), j), f"call {i}: {name}"
    if graph_hits:
        assert spec.stats()["cache_hits"] > 0, spec.report()
    return spec


def _xs(n):
    return [(tf.constant([float(i), 1.0]),) for i in range(n)]


def test_a_loss_kept_by_step_keeps_one_graph():
    spec = _compare(by_step, Trainer, _xs(10))
    assert spec.stats()["graphs_built"] <= 2, spec.report()


def test_a_step_that_meets_a_key_already_there_replaces_its_value_in_place():
    make = lambda: Trainer(step=0, losses={3: "old", 0: "first", "k": 1})   # noqa: E731
    _compare(by_step, make, _xs(8))


def test_an_item_keyed_by_the_dicts_length_is_written_every_call():
    LOG.clear()
    eager = [by_length(x) for (x,) in _xs(10)]
    eager_log = dict(LOG)
    LOG.clear()
    spec = janus.speculate(by_length)
    got = [spec(x) for (x,) in _xs(10)]
    assert [v.numpy().tolist() for v in got] == [v.numpy().tolist() for v in eager]
    assert _items(LOG) == _items(eager_log)
    assert spec.stats()["cache_hits"] > 0, spec.report()
    LOG.clear()


class Holder:
    def __init__(self):
        self.d = {1: "one", 0: "zero"}


def then_len(h, k, x):
    h.d[k] = x
    return len(h.d)


def then_item(h, k, x):
    h.d[k] = x
    return h.d[0]


def then_get(h, k, x):
    h.d[k] = x
    return h.d.get(1)


def then_contains(h, k, x):
    h.d[k] = x
    return 0 in h.d


def then_iterate(h, k, x):
    h.d[k] = x
    return [key for key in h.d]


def then_sorted(h, k, x):
    h.d[k] = x
    return sorted(h.d)


def then_str(h, k, x):
    h.d[k] = x
    return str(h.d)


def then_print(h, k, x):
    h.d[k] = x
    print(h.d)


def then_delete(h, k, x):
    h.d[k] = x
    del h.d[0]


def then_write(h, k, x):
    h.d[k] = x
    h.d[0] = 'written'


def then_update(h, k, x):
    h.d[k] = x
    h.d.update({1: 'updated'})


def then_pop(h, k, x):
    h.d[k] = x
    return h.d.pop(1, None)


def then_values(h, k, x):
    h.d[k] = x
    return list(h.d.values())


def then_return(h, k, x):
    h.d[k] = x
    return h.d


def then_keyed_twice(h, k, x):
    h.d[k] = x
    h.d[k + 1] = 'second'


def then_items_view(h, k, x):
    h.d[k] = x
    print(h.d.items())


def then_copy(h, k, x):
    h.d[k] = x
    return dict(h.d)


_USES = [then_len, then_item, then_get, then_contains, then_iterate, then_sorted, then_str, then_print, then_delete, then_write, then_update, then_pop, then_values, then_return, then_keyed_twice, then_items_view, then_copy]


@pytest.mark.parametrize("fn", _USES, ids=lambda f: f.__name__)
def test_the_dict_used_after_a_keyed_write_gives_eagers_outcome(fn):
    calls = [(k, tf.constant(float(k))) for k in (2, 0, 1, 5, 0, 7, 1, 3, 0, 2)]
    _compare(fn, Holder, calls, graph_hits=False)
