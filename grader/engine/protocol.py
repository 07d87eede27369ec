"""What a child reports about each case, and how the grader reads it back.

A child answers a bundle of cases with one report per case (its status, its error words) and
arrays named by `output_key` and `grad_key`; `read_case_outputs` turns them into `CaseOutput`s
and treats anything malformed as a crash. The child writes with the same key functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grader.engine.text import printable
from grader.sandbox.child import NOT_IMPLEMENTED as CASE_NOT_IMPLEMENTED
from grader.sandbox.child import OK
from grader.sandbox.processes import Outcome


@dataclass
class CaseOutput:
    status: str
    output: np.ndarray | None = None
    grads: dict[str, np.ndarray] = field(default_factory=dict)
    dtype: str = ""
    exception: str = ""
    message: str = ""
    where: str = ""


def read_case_outputs(outcome: Outcome, count: int) -> list[CaseOutput]:
    """Parse a child's report; anything malformed raises ValueError (treated as a crash)."""
    reports = outcome.meta.get("cases")
    if not isinstance(reports, list) or len(reports) != count:
        raise ValueError("the process reported a malformed result")
    outputs = []
    for index, report in enumerate(reports):
        if not isinstance(report, dict) or report.get("status") not in (
            OK,
            CASE_NOT_IMPLEMENTED,
            "error",
        ):
            raise ValueError("the process reported a malformed result")
        text = {key: printable(report.get(key, "")) for key in ("exception", "message", "where")}
        if report["status"] != OK:
            outputs.append(CaseOutput(report["status"], **text))
            continue
        prefix = f"case{index}/grad/"
        outputs.append(
            CaseOutput(
                OK,
                output=outcome.arrays.get(f"case{index}/output"),
                grads={
                    k[len(prefix) :]: v for k, v in outcome.arrays.items() if k.startswith(prefix)
                },
                dtype=str(report.get("output_dtype", "")),
            )
        )
    return outputs
