"""Profiles are data: JSON round trip, merge, readable dump; and library
frames (Keras ``__call__``) are looked through to find user callees."""

import tensorflow as tf

from profiler import Profile, SiteKind, ValueFact, code_key, profile_call


def work(xs, t):
    total = 0
    for x in xs:
        if x % 2:
            total += x
    k = 0
    while k < len(xs):
        k += 1
    return total, t * 2


def profiled(*calls):
    profile = Profile()
    for xs in calls:
        profile_call(work, (xs, tf.constant([1.0, 2.0])), {}, profile=profile)
    return profile


def test_json_round_trip():
    profile = profiled([1, 2, 3], [5, 7], [])
    text = profile.to_json()
    again = Profile.from_json(text)
    assert again == profile
    assert again.to_json() == text
    fp = again.get(work)
    assert fp.sites_of(SiteKind.LOOP)[0].trips == [3, 2, 0]
    assert fp.args["t"].shapes == {(2,)}


def test_merge_equals_profiling_everything_at_once():
    a = profiled([1, 2, 3])
    b = profiled([5, 7], [])
    merged = Profile().merge(a).merge(b)
    together = profiled([1, 2, 3], [5, 7], [])
    assert merged == together
    # merging copies: later changes to `b` do not leak into `merged`
    b.get(work).calls += 100
    assert merged.get(work).calls == 3


def test_value_fact_merge_and_constants():
    a, b = ValueFact(), ValueFact()
    for v in (1, 1):
        a.observe(v)
    assert a.is_constant
    b.observe(1.0)
    b.observe(None)
    a.merge(b)
    assert a.count == 4 and a.types == {"int": 2, "float": 1, "NoneType": 1}
    assert a.values == [1, 1.0, None] and not a.is_constant
    many = ValueFact()
    for v in range(20):
        many.observe(v)
    assert len(many.values) == 8 and many.overflow


def test_readable_dump():
    text = str(profiled([1, 2, 3]))
    assert "work" in text and "LOOP" in text and "trips=[3]" in text
    assert "BRANCH" in text and "RETURN" in text
    assert str(Profile()) == "Profile(empty)"


class Dense2(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 2), initializer="ones")

    def call(self, x):
        if x.shape[0] > 1:
            return tf.matmul(x, self.w)
        return x


def keras_step(layer, x):
    y = layer(x)
    return tf.reduce_sum(y)


def test_keras_call_is_user_code_reached_through_keras():
    layer = Dense2()
    x = tf.ones([3, 4])
    layer(x)  # build outside the profiled call
    outcome, profile = profile_call(keras_step, (layer, x), {})
    assert outcome[0] == "return" and float(outcome[1]) == 24.0
    call_fp = profile.get(Dense2.call)
    assert call_fp is not None and call_fp.calls == 1
    assert call_fp.args["x"].single_shape == (3, 4)
    branch = call_fp.sites_of(SiteKind.BRANCH)[0]
    assert branch.outcomes() == (1, 0)
    site = profile.get(keras_step).sites_of(SiteKind.CALL)[0]
    assert site.callees == {code_key(Dense2.call): 1}
    assert Dense2.call.__code__ is not None and layer(x).shape == (3, 2)
