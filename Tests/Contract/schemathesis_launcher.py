"""Runs schemathesis's command line with one workaround for the Python it runs on.

Hypothesis describes the lambdas inside its strategies by parsing their source with `ast`, and
on the CPython 3.11 the contract test runs on (3.11.7 here) `ast.parse`, called that deep in the
stack, can raise "SystemError: AST constructor recursion depth mismatch" (a CPython bug). The
description is only text for reports; when parsing fails this way the lambda is described the
way Hypothesis describes one it cannot read, and the run goes on. Without this the
whole pass ended as a schemathesis "Runtime Error" with every check passing (make test,
2026-11-26: with seed 1, and again with seed 2).
"""

import sys

from hypothesis.internal import lambda_sources

_describe = lambda_sources.lambda_description


def _lambda_description(f):
    try:
        return _describe(f)
    except SystemError:
        return "lambda: <unknown>"


lambda_sources.lambda_description = _lambda_description

from schemathesis.cli import schemathesis  # noqa: E402 (after the patch it needs)

if __name__ == "__main__":
    sys.argv[0] = "schemathesis"
    sys.exit(schemathesis())
