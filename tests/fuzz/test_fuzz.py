"""The differential fuzzer: generated programs and call sequences, eagerly and under janus.

The default budget keeps CI short; `pytest tests/fuzz --fuzz-long` (or
`JANUS_FUZZ_EXAMPLES=20000`) runs as many programs as asked, and
`--fuzz-open` (or `JANUS_FUZZ_OPEN=1`) also generates the rules of
`grammar.OPEN_BUG_RULES`.  The number of programs, calls and graph runs is
printed at the end of the session, and every 100 programs appended to the file
`JANUS_FUZZ_PROGRESS` names, if set.
"""
import os

from hypothesis import HealthCheck, given, settings

from tests.fuzz import grammar, runner

EXAMPLES = int(os.environ.get("JANUS_FUZZ_EXAMPLES", "60"))
OPEN = os.environ.get("JANUS_FUZZ_OPEN", "") not in ("", "0")


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("JANUS_FUZZ_RANDOM"),
          suppress_health_check=list(HealthCheck), database=None)
@given(source=grammar.program(open_rules=OPEN), calls=grammar.calls())
def test_generated_programs_match_eager(source, calls):
    runner.run(source, calls)
