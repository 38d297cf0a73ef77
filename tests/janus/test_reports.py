"""Reports, explain, JANUS_LOG, the CLI, and the errors users see."""
import json
import os
import subprocess
import sys
import textwrap
import traceback

import pytest
import tensorflow as tf

import janus
from janus.report import SCHEMA

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = __file__


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def sign_branch(x):
    if tf.reduce_sum(x) > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def _guard_failed_function():
    f = janus.speculate(sign_branch, profile_runs=2)
    for _ in range(3):
        f(tf.ones([3]))
    assert f.stats()["graph_runs"] == 1
    out = f(-tf.ones([3]))                     # the branch assumption breaks
    assert out.numpy().tolist() == [1.0, 1.0, 1.0]
    return f


def test_report_after_guard_failure_names_assumption_line_and_count():
    f = _guard_failed_function()
    line = _line_of(sign_branch, "if tf.reduce_sum(x) > 0")
    text = f.report()
    assert f"{HERE}:{line}" in text
    [row] = [r for r in text.splitlines() if r.strip().startswith("BRANCH")]
    assert f"{HERE}:{line}" in row and "FAILED 1x" in row
    assert "guard-failed:branch" in text and "hint:" in text
    data = f.report(format="json")
    [a] = [a for a in data["assumptions"] if a["kind"] == "BRANCH"]
    assert a["where"] == f"{HERE}:{line}" and a["failures"] == 1 and a["status"] == "failed"
    assert a["guard"] == "in-graph"
    assert data["counters"]["guard_failures"] == 1
    [fb] = data["fallbacks"]
    assert fb["kind"] == "guard-failed:branch" and fb["count"] == 1 and fb["where"] == f"{HERE}:{line}"


def test_json_report_round_trips_with_documented_keys():
    f = _guard_failed_function()
    f(-tf.ones([3]))                           # rebuilds with tf.cond
    data = f.report(format="json")
    assert json.loads(json.dumps(data)) == data
    assert set(data) == {"schema", "function", "file", "line", "where", "options", "counters", "time_ms",
                         "imperative", "graphs", "assumptions", "entry_checks", "relaxed", "misses", "recursion",
                         "state", "fallbacks", "instances", "segments"}
    assert data["schema"] == SCHEMA and data["function"] == "sign_branch" and data["file"] == HERE
    assert set(data["time_ms"]) == {"graph", "eager", "profile", "build", "segmented", "total"}
    assert set(data["graphs"][0]) == {"op_count", "build_ms", "executor", "inputs", "assumptions"}
    assert data["graphs"][0]["inputs"] == [{"path": "args[0]", "kind": "tensor", "dtype": "float32", "shape": [3]}]
    everything = janus.report(format="json")
    assert json.loads(json.dumps(everything)) == everything
    with pytest.raises(ValueError):
        f.report(format="yaml")


def uses_import(x):
    import math
    return x * math.pi


def test_imperative_function_report_and_json():
    f = janus.speculate(uses_import, profile_runs=1)
    for _ in range(3):
        f(tf.ones([2]))
    data = f.report(format="json")
    assert data["imperative"]["kind"] == "import"
    assert data["imperative"]["where"] == f"{HERE}:{_line_of(uses_import, 'import math')}"
    assert data["imperative"]["hint"]
    assert "RUNS IMPERATIVELY: [import]" in f.report()


def test_janus_report_lists_every_function_most_time_first():
    a = janus.speculate(sign_branch, profile_runs=1)
    b = janus.speculate(uses_import, profile_runs=1)
    a(tf.ones([3]))
    b(tf.ones([3]))
    a.time_in["eager"] += 100.0                 # make the order deterministic
    b.time_in["eager"] += 200.0
    names = [d["function"] for d in janus.report(format="json")["functions"]]
    assert names.index("uses_import") < names.index("sign_branch")
    text = janus.report()
    assert text.index("janus report: uses_import") < text.index("janus report: sign_branch")


def test_explain_profiles_and_converts_without_touching_fn():
    f = janus.speculate(sign_branch)
    e = janus.explain(f, tf.ones([3]))
    assert f.stats()["calls"] == 0 and not f.graphs and not f.profile.functions
    assert all(g is f or g.python_function is not sign_branch or g.stats()["calls"] for g in janus.function.REGISTRY)
    assert e.converted and e.op_count > 0
    line = _line_of(sign_branch, "if tf.reduce_sum(x) > 0")
    [branch] = [a for a in e.assumptions if a["kind"] == "BRANCH"]
    assert branch["where"] == f"{HERE}:{line}" and branch["guard"] == "in-graph" and "reduce_sum" in branch["source"]
    assert any(a["kind"] == "TENSOR_MATCH" and a["source"] == "args[0]" for a in e.assumptions)
    assert "jn.if_stmt" in e.builder_source
    text = str(e)
    assert text.startswith("janus explain: sign_branch") and "ops" in text and f"{HERE}:{line}" in text
    assert e.result.numpy().tolist() == [2.0, 2.0, 2.0]
    assert json.loads(json.dumps(e.to_dict())) == e.to_dict()


def several_imperative(x):
    import math
    try:
        y = x * math.pi
    except ValueError:
        y = x
    return y


def test_explain_lists_every_imperative_line():
    e = janus.explain(several_imperative, tf.ones([2]))
    assert not e.converted and e.builder_source is None
    kinds = {(r.kind, r.where) for r in e.imperative}
    assert ("import", f"{HERE}:{_line_of(several_imperative, 'import math')}") in kinds
    assert ("try-except", f"{HERE}:{_line_of(several_imperative, 'try:')}") in kinds
    assert "stays imperative" in str(e)


class Counter:
    def __init__(self):
        self.w = tf.constant([1.0, 2.0])

    @janus.speculate
    def scale(self, x):
        return x * self.w


def test_explain_a_method():
    c = Counter()
    e = janus.explain(c.scale, tf.ones([2]))
    assert e.converted and e.function == "Counter.scale"
    assert Counter.scale.stats()["calls"] == 0


def uses_match(x):
    match x.shape[0]:
        case 3:
            return x
    return -x


def test_strict_error_names_user_line_with_hint_and_no_internal_chain():
    f = janus.speculate(uses_match, profile_runs=1, strict=True)
    f(tf.ones([3]))
    with pytest.raises(janus.ConversionError) as info:
        f(tf.ones([3]))
    line = _line_of(uses_match, "match x.shape[0]")
    assert f"{HERE}:{line}" in str(info.value) and "hint:" in str(info.value)
    shown = "".join(traceback.format_exception(info.value))
    assert "During handling of the above exception" not in shown
    assert shown.startswith("Traceback") and "codegen/lowering" not in shown


def reads_numpy(x):
    n = int(x.numpy().sum())
    return x * n


def test_strict_build_failure_names_user_line_not_tensorflow():
    f = janus.speculate(reads_numpy, profile_runs=1, strict=True)
    with pytest.raises(janus.ConversionError) as info:
        for _ in range(6):
            f(tf.ones([4]))
    assert f"{HERE}:{_line_of(reads_numpy, 'x.numpy()')}" in str(info.value)
    shown = "".join(traceback.format_exception(info.value))
    assert "tensorflow/python" not in shown and "direct cause" not in shown
    assert info.value.reason.hint


def test_bad_speculate_option_names_it():
    with pytest.raises(TypeError, match="profile_rnus"):
        janus.speculate(sign_branch, profile_rnus=2)


def _run(args, env_extra=None, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("JANUS_LOG", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=240)


SCRIPT = textwrap.dedent('''\
    import sys
    import tensorflow as tf
    import janus


    @janus.speculate(profile_runs=2)
    def step(x):
        if tf.reduce_sum(x) > 0:
            y = x * 2.0
        else:
            y = -x
        return y


    for _ in range(int(sys.argv[1])):
        step(tf.ones([3]))
    step(-tf.ones([3]))
    print("script ran with", sys.argv[1:], "as", __name__)
    sys.exit(int(sys.argv[2]))
''')


def test_cli_runs_script_prints_report_and_writes_json(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "report.json"
    proc = _run(["-m", "janus", "--json", str(out), str(script), "4", "3"])
    assert proc.returncode == 3, proc.stderr
    assert "script ran with ['4', '3'] as __main__" in proc.stdout
    assert f"janus report: step  ({script}:6)" in proc.stdout
    assert f"at {script}:8" in proc.stdout and "FAILED 1x" in proc.stdout
    data = json.loads(out.read_text())
    [step] = [f for f in data["functions"] if f["function"] == "step"]
    assert step["counters"]["guard_failures"] == 1 and step["counters"]["calls"] == 5


def test_cli_reports_even_when_the_script_raises(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("import janus\n\n@janus.speculate\ndef f(x):\n    return x\n\nf(1)\nraise RuntimeError('boom')\n")
    proc = _run(["-m", "janus", str(script)])
    assert proc.returncode == 1
    assert "RuntimeError: boom" in proc.stderr and "janus report: f" in proc.stdout


def test_janus_log_topics(tmp_path):
    script = tmp_path / "logged.py"
    script.write_text(SCRIPT)
    proc = _run([str(script), "3", "0"], {"JANUS_LOG": "guards,graphs"})
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("janus[")]
    assert any(line.startswith(f"janus[graphs] step ({script}:6): built graph #1") for line in lines), lines
    [failed] = [line for line in lines if "failed; falling back" in line]
    assert failed.startswith(f"janus[guards] step ({script}:6): ") and f"({script}:8)" in failed
    assert not any(line.startswith("janus[fallbacks]") for line in lines)
    everything = _run([str(script), "3", "0"], {"JANUS_LOG": "all"})
    assert any(line.startswith(f"janus[fallbacks] step ({script}:6): [guard-failed:branch] {script}:8")
               for line in everything.stderr.splitlines())
    quiet = _run([str(script), "3", "0"])
    assert "janus[" not in quiet.stderr


def test_log_topic_parsing():
    from janus.log import TOPICS, parse
    assert parse("all") == set(TOPICS)
    assert parse(" guards , State,bogus") == {"guards", "state"}
    assert parse("") == set()
