"""docs/results/ is made from stored JSON only (training/tools/results.py): every table names
its command, date and machine once, the sidecars' evaluations become the shipped policies'
tables, and `run` stores what the command wrote."""

from __future__ import annotations

import json

import pytest

from training.tools import results

ROW = {
    "agent": "kd_value", "games": 10, "win_share": 0.4, "win_lo95": 0.2, "win_hi95": 0.6,
    "mean_score": 1.5, "advantage": 0.7, "adv_lo95": 0.1, "adv_hi95": 1.3,
}  # fmt: skip


def _evaluation(deals: int = 2) -> dict:
    other = {**ROW, "agent": "random", "games": 40, "win_share": 0.15, "advantage": -0.7,
             "adv_lo95": -1.3, "adv_hi95": -0.1}  # fmt: skip
    return {"game": "kentucky_derby", "lineup": ["kd_value", "random", "random", "random",
            "random"], "deals": deals, "games": 10, "score_mode": "chips", "rows": [ROW, other]}  # fmt: skip


def test_pages_come_from_the_stored_records(tmp_path):
    data, side = tmp_path / "data", tmp_path / "pretrained"
    data.mkdir()
    side.mkdir()
    record = {"name": "kd_value_vs_random", "command": "derby-envs evaluate --x",
              "date": "2030-01-02", "machine": "a test box", "result": _evaluation()}  # fmt: skip
    (data / "kd_value_vs_random.json").write_text(json.dumps(record))
    (data / "unknown.json").write_text(json.dumps({**record, "name": "gone"}))  # ignored
    sidecar = {"game": "kentucky_derby", "steps": 1234, "shipped": "2030-01-03", "machine": "m",
               "results": {"vs_field": {**_evaluation(), "command": "derby-envs evaluate --y"},
                           "note": "text, not a table"}}  # fmt: skip
    (side / "kd.json").write_text(json.dumps(sidecar))
    pages = results.render(data, side)
    assert set(pages) == set(results.PAGES)
    strength = pages["strength"]
    assert strength.count("`derby-envs evaluate --x` · 2030-01-02 · a test box") == 1
    assert (
        "| `kd_value` | 10 | 0.400 | [0.200, 0.600] | 1.50 | +0.70 | [+0.10, +1.30] |" in strength
    )
    assert "5 seats: fair share 0.200" in strength and "mean chips" in strength
    assert "gone" not in strength
    pretrained = pages["pretrained"]
    assert "## `kd.zip` (kentucky_derby, 1,234 training steps)" in pretrained
    assert pretrained.count("shipped 2030-01-03 · m") == 1
    assert "`derby-envs evaluate --y`" in pretrained
    # the results' note is shown as a paragraph under the sidecar line, not as a table
    assert "shipped 2030-01-03 · m\n\ntext, not a table\n" in pretrained
    assert "### note" not in pretrained
    assert "No measurement stored yet." in pages["bench"]
    for text in pages.values():
        assert text.startswith(results.HEADER)


def test_the_shipped_pages_are_the_generated_ones():
    """docs/results/*.md is what `make results` writes from the stored data (regenerate after
    a new measurement or a new sidecar)."""
    for page, text in results.render().items():
        path = results.RESULTS / f"{page}.md"
        assert path.read_text() == text, f"{path} is stale: run `make results`"


def test_run_stores_the_command_its_date_machine_and_result(tmp_path, monkeypatch):
    cmd = "derby-envs evaluate --game kentucky_derby --players 3 --lineup random --deals 1"
    monkeypatch.setitem(results.MEASUREMENTS, "tiny", results.Measurement("strength", "tiny", cmd))
    path = results.run("tiny", data_dir=tmp_path)
    record = json.loads(path.read_text())
    assert record["command"] == cmd and record["name"] == "tiny"
    assert record["date"].count("-") == 2 and "CPUs" in record["machine"]
    assert record["result"]["games"] >= 1 and record["result"]["rows"]
    page = results.render(tmp_path, tmp_path / "none")["strength"]
    assert f"`{cmd}`" in page


def test_cli_lists_and_refuses_unknown_names(capsys):
    assert results.main(["list"]) == 0
    assert "derby-envs bench" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        results.main(["run", "no_such_measurement"])
