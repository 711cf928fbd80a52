"""Shared fixtures for het's Python tests.

Tools are found like the package finds them ($HET_TOOLS_DIR, <repo>/build/bin,
PATH). A test that needs het-opt or het-eval FAILS when the tool is missing:
those checks are the point of the suite and must not pass by skipping. Only
the het-plan wrapper test skips without het-plan (issue 6 builds it).
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))  # the package, even if not installed

import het  # noqa: E402


def need_tool(name):
    """Path of a tool; fails the test (does not skip) when it is missing."""
    try:
        return het.find_tool(name)
    except het.HetToolError as e:
        pytest.fail(f"{e}. This check needs {name}; it cannot pass without it.")


@pytest.fixture
def het_eval():
    return need_tool("het-eval")


@pytest.fixture
def het_opt():
    return need_tool("het-opt")
