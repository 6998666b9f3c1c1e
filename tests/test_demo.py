from __future__ import annotations

import pytest

from jupyter_aaep.demo import main


@pytest.mark.parametrize(
    ("flag", "expected"), [("--yes", "The report is saved"), ("--no", "I did not save the report")]
)
def test_offline_demo_runs_a_full_session(flag: str, expected: str, capsys) -> None:
    assert main([flag]) == 0
    out = capsys.readouterr().out
    assert "!! Approval needed, medium risk: Save a report titled Weekly climate" in out
    assert expected in out
    assert out.strip().splitlines()[-1].startswith("-- Done.")
