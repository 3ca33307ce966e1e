"""The suite may skip only for "no PostgreSQL server" or "no zymi binary": any other skip fails the run."""

from __future__ import annotations

import pytest

INNER = """
import pytest

def test_runs():
    pass

def test_no_server():
    pytest.skip("no PostgreSQL server: none could be started")

@pytest.mark.skipif(True, reason="no zymi binary: not installed")
def test_no_zymi():
    pass
"""


def run(pytester: pytest.Pytester) -> pytest.RunResult:
    # in process; the snapshot plugin keeps one temporary folder per process, so it stays out of the inner run;
    # the inner tests run in file order, as the expected lines are listed
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester.runpytest("-p", "tests.skip_guard", "-p", "no:textual-snapshot", "-p", "no:randomly")


def test_allowed_skips_leave_the_run_green(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = run(pytester)
    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == pytest.ExitCode.OK


def test_any_other_skip_fails_the_run_and_is_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner=INNER
        + """
def test_data_missing():
    pytest.skip("../shared/oracle is not present beside the project")

@pytest.mark.skipif(True, reason="needs root")
def test_marked():
    pass
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*skips that are not allowed*",
            "*test_inner.py::test_data_missing: ../shared/oracle is not present beside the project",
            "*test_inner.py::test_marked: needs root",
        ]
    )
    assert "test_no_server:" not in result.stdout.str()


def test_a_module_skipped_at_collection_fails_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner='import pytest\npytest.skip("optional", allow_module_level=True)\n')
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_inner.py: optional"])
