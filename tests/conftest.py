import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def pytest_addoption(parser):
    parser.addoption("--fuzz-long", action="store_true",
                     help="run the differential fuzzer for 20,000 programs (or JANUS_FUZZ_EXAMPLES)")
    parser.addoption("--fuzz-open", action="store_true",
                     help="also generate the fuzzer rules of known, still open bugs")


def pytest_configure(config):
    if config.getoption("--fuzz-long"):
        os.environ.setdefault("JANUS_FUZZ_EXAMPLES", "20000")
    if config.getoption("--fuzz-open"):
        os.environ["JANUS_FUZZ_OPEN"] = "1"


def pytest_terminal_summary(terminalreporter):
    from tests.fuzz import runner      # only when the fuzzer ran
    if runner.COUNTER["programs"]:
        terminalreporter.write_line("janus fuzzer: {programs} programs, {calls} calls, "
                                    "{graph_runs} graph runs".format(**runner.COUNTER))
