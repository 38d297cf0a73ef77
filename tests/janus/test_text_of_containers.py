"""The text of a list or dict (printed, `str`, an f-string, `%`) shows what eager shows: the items
the caller's container holds at that call, and the values (not the graph's names) of the tensors
the call put in it."""
import pytest
import tensorflow as tf

from tests.harness import run_capturing

LOG = {"a": 1}
ROWS = [1]


def prints_a_global_dict(x):
    y = x * 2.0
    print(LOG, ROWS)
    return y + 1.0


class Holder:
    def __init__(self):
        self.d = {1: "one"}


def str_after_a_tensor_write(h, x):
    h.d[0] = x * 2.0
    return str(h.d)


def prints_items_after_a_tensor_write(h, x):
    h.d[0] = x * 2.0
    print(h.d.items())


def f_string_after_a_tensor_write(h, x):
    h.d[0] = x * 2.0
    return f"{h.d}"


def percent_after_a_tensor_write(h, x):
    h.d[0] = x * 2.0
    return "%s" % (h.d,)


def prints_a_list_holding_the_calls_tensor(h, x):
    rows = [x * 2.0, 1]
    print(rows, str(rows[1:]))
    return len(rows)


def test_a_printed_outside_dict_and_list_show_their_items_at_each_call():
    import janus
    spec = janus.speculate(prints_a_global_dict)
    for i in range(8):
        LOG["a"] = i
        ROWS.append(i)
        if i == 6:
            LOG["b"] = 5
        (_, eager_value), eager_text = run_capturing(prints_a_global_dict, (tf.constant(float(i)),))
        (_, value), text = run_capturing(spec, (tf.constant(float(i)),))
        assert text == eager_text, f"call {i}"


@pytest.mark.parametrize("fn", [str_after_a_tensor_write, prints_items_after_a_tensor_write, f_string_after_a_tensor_write,
                                percent_after_a_tensor_write, prints_a_list_holding_the_calls_tensor],
                         ids=lambda f: f.__name__)
def test_the_text_of_a_container_shows_the_values_of_the_calls_tensors(fn):
    import janus
    spec = janus.speculate(fn)
    eager_h, spec_h = Holder(), Holder()
    for i in range(7):
        x = tf.constant(float(i))
        (ek, ev), eager_text = run_capturing(fn, (eager_h, x))
        (jk, jv), text = run_capturing(spec, (spec_h, x))
        assert (jk, text) == (ek, eager_text), f"call {i}: {jv!r} {text!r}"
        assert type(jv) is type(ev) and (jv == ev if isinstance(ev, (str, int)) else True), f"call {i}: {jv!r}"
        assert "shape=()" not in repr(jv) or "numpy=" in repr(jv), f"call {i}: a graph tensor's text {jv!r}"
        assert str(spec_h.d) == str(eager_h.d)
