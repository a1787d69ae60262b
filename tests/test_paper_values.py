"""results/paper_values.csv: well-formed, and every value is in its paper.

The values are typed in from the papers' texts (``../shared/papers/*.md``,
next to the repository, never inside it); a mistyped digit would make a
chapter compare our numbers with a number no paper printed.
"""

import csv
import json
import re
from pathlib import Path

import pytest

from refimpl.experiments import METHODS

REPO = Path(__file__).resolve().parents[1]
CSV = REPO / "results" / "paper_values.csv"
PAPERS = REPO.parent / "shared" / "papers"
HEADER = ["dataset", "method", "paper_method", "paper", "table", "folds",
          "params", "metric", "value", "note"]
# the bibliography key of each paper, and its text in ../shared/papers
SOURCES = {"lai2013fenchelrank": "fenchelrank-lai2012.md",
           "lai2013fsmrank": "fsmrank-lai2013.md",
           "laporte2014nonconvex": "nonconvex-sparse-ranksvm-laporte2014.md",
           "lee2014largescale": "large-scale-linear-ranksvm-lee-lin2014.md",
           "pandey2018liferank": "liferank-pandey2018.md"}
# how each paper spells the data set in its text
SPELLING = {"MQ2008": ("MQ2008",), "OHSUMED": ("OHSUMED", "Ohsumed")}
METRICS = ({f"NDCG@{k}" for k in range(1, 11)} | {"MAP", "MeanNDCG",
           "PairwiseAccuracy", "sparsity", "sparsity_all", "cpu_time",
           "Imp", "Rdd"}
           | {f"p({m})" for m in ("NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10",
                                  "MAP")})
TABLE = re.compile(r"Table (\d+|[IVX]+)")


def _rows():
    with open(CSV, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        assert next(reader) == HEADER
        return [dict(zip(HEADER, r), line=i) for i, r in enumerate(reader, 2)]


ROWS = _rows()


def _where(r):
    return f"{CSV.name} line {r['line']}"


def test_every_row_is_well_formed():
    seen = {}
    for r in ROWS:
        where = _where(r)
        assert len(r) == len(HEADER) + 1, f"{where}: {len(r) - 1} fields"
        assert r["dataset"] in SPELLING, where
        assert r["paper"] in SOURCES, where
        assert TABLE.fullmatch(r["table"]), f"{where}: table {r['table']!r}"
        assert r["folds"] in ("1", "1-5"), where
        assert r["metric"] in METRICS, f"{where}: metric {r['metric']!r}"
        assert r["paper_method"], where
        value = float(r["value"])
        if r["metric"] != "cpu_time":
            assert 0 <= value <= 1, f"{where}: {value} outside [0, 1]"
        if r["method"]:
            assert r["method"] in METHODS, f"{where}: {r['method']!r}"
        if r["params"]:
            assert r["method"], f"{where}: params without a method"
            params = json.loads(r["params"])
            grid = METHODS[r["method"]].grid
            assert isinstance(params, dict) and set(params) <= set(grid), \
                f"{where}: {params} not in {r['method']}'s grid"
        key = (r["dataset"], r["paper"], r["table"], r["paper_method"],
               r["params"], r["metric"])
        assert key not in seen, f"{where} repeats line {seen[key]}"
        seen[key] = r["line"]


def test_each_data_set_has_each_papers_rows():
    combos = {(r["dataset"], r["paper"]) for r in ROWS}
    for paper in ("lai2013fenchelrank", "lai2013fsmrank",
                  "laporte2014nonconvex", "pandey2018liferank"):
        for dataset in SPELLING:
            assert (dataset, paper) in combos, (dataset, paper)


@pytest.fixture(scope="module")
def texts():
    if not PAPERS.is_dir():
        pytest.skip(f"the papers' texts are not available at {PAPERS}")
    return {k: (PAPERS / f).read_text(encoding="utf-8")
            for k, f in SOURCES.items()}


def _table_names(text):
    # "Table 5", "TABLE II" and the PDF-extracted "TABLE I R ANKING ..."
    return {m.group(1) for m in re.finditer(
        r"\btable\s+(\d+|[IVX]+)\b", text, flags=re.IGNORECASE)}


def test_every_value_is_printed_in_its_paper(texts):
    # every number of each text, as printed (a percentage with its sign)
    printed = {k: set(re.findall(r"(?<![\d.])\d+(?:\.\d+)?%?", t))
               for k, t in texts.items()}
    for r in ROWS:
        # the digits exactly as printed; a paper printing a percentage
        # (Lee & Lin's "82.70%") has it here as the fraction with the same
        # digits (0.8270)
        digits = len(r["value"].partition(".")[2])
        forms = {r["value"]}
        if digits >= 2:
            forms.add(f"{float(r['value']) * 100:.{digits - 2}f}%")
        assert forms & printed[r["paper"]], \
            f"{_where(r)}: {r['value']} not in {SOURCES[r['paper']]}"


def test_every_table_and_data_set_is_in_its_paper(texts):
    for r in ROWS:
        text = texts[r["paper"]]
        name = TABLE.fullmatch(r["table"]).group(1)
        assert name in _table_names(text), \
            f"{_where(r)}: {SOURCES[r['paper']]} has no {r['table']}"
        assert any(s in text for s in SPELLING[r["dataset"]]), _where(r)
