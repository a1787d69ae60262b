"""Book <-> library links: every public docstring names the chapter deriving it.

Each public function and class of refimpl carries ``Derived in:
book/<chapter>.md#<label>`` (STYLE.md (b) 5); this test checks that the chapter
exists and defines the MyST label ``(<label>)=``.
"""

import inspect
import re
from pathlib import Path

import pytest

import refimpl
import refimpl.__main__
import refimpl.experiments

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"Derived in:\s*(book/[\w./-]+\.md)#([\w-]+)")
MODULES = [
    refimpl.data,
    refimpl.datasets,
    refimpl.pairs,
    refimpl.metrics,
    refimpl.losses,
    refimpl.solvers,
    refimpl.sv_stats,
    refimpl.estimators,
    refimpl.penalties,
    refimpl.fsmrank,
    refimpl.nonconvex,
    refimpl.liferank,
    refimpl.experiments,
    refimpl.experiments.registry,
    refimpl.experiments.runner,
    refimpl.experiments.report,
    refimpl.__main__,
]


def public_objects():
    for module in MODULES:
        exported = getattr(module, "__all__", None)
        names = exported or [n for n in dir(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            # names merely imported into a module are checked where defined
            if exported is None and obj.__module__ != module.__name__:
                continue
            yield f"{obj.__module__}.{obj.__qualname__}", obj


OBJECTS = dict(public_objects())


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_docstring_links_to_an_existing_label(name):
    doc = inspect.getdoc(OBJECTS[name]) or ""
    module_doc = inspect.getdoc(inspect.getmodule(OBJECTS[name])) or ""
    links = LINK.findall(doc) or LINK.findall(module_doc)
    assert links, f"{name}: no 'Derived in: book/...md#label' line"
    for path, label in links:
        chapter = ROOT / path
        assert chapter.exists(), f"{name}: {path} does not exist"
        assert f"({label})=" in chapter.read_text(), f"{name}: no label {label} in {path}"


def test_every_chapter_in_toc_exists():
    toc = (ROOT / "_toc.yml").read_text()
    for name in re.findall(r"file:\s*(\S+)", toc):
        assert (ROOT / f"{name}.md").exists(), name
