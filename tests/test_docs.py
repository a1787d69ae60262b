"""Book <-> library links: every public docstring names the chapter deriving it.

Each public function and class of refimpl carries ``Derived in:
book/<chapter>.md#<label>`` (STYLE.md (b) 5); this test checks that the chapter
exists and defines the section-level MyST target ``(<label>)=`` on a line of its
own (a label merely mentioned in the text does not count).  And every
``{literalinclude}`` of the book names a file that exists, a ``:pyobject:``
defined in it, and ``:start-at:`` / ``:end-at:`` / ``:end-before:`` text found
in it, so that moving code cannot silently empty a listing.
"""

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import refimpl

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"Derived in:\s*(book/[\w./-]+\.md)#([\w-]+)")
def _public_modules():
    """Every module of the package whose dotted name has no private part.

    Walked, not listed, so that a new module is checked without an edit
    here.  ``refimpl.__main__`` (the command line) is public too.
    """
    names = [m.name for m in pkgutil.walk_packages(refimpl.__path__, "refimpl.")
             if not any(p.startswith("_") for p in m.name.split(".")[1:])]
    return [importlib.import_module(n)
            for n in ["refimpl", *names, "refimpl.__main__"]]


MODULES = _public_modules()


# every estimator module, so that a new one's docstrings are checked too
MODULES += sorted({inspect.getmodule(cls) for _, cls in refimpl.estimators.all_estimators()}
                  - set(MODULES), key=lambda m: m.__name__)


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
        assert label in section_labels(chapter), f"{name}: no label ({label})= in {path}"


def section_labels(chapter):
    """The MyST targets ``(label)=`` of a chapter, each on a line of its own."""
    return set(re.findall(r"^\(([\w-]+)\)=\s*$", chapter.read_text(), flags=re.MULTILINE))


INCLUDE = re.compile(r"^```\{literalinclude\}\s+(\S+)\n((?::[\w-]+:.*\n)*)", re.MULTILINE)


def literal_includes():
    for chapter in sorted((ROOT / "book").glob("*.md")):
        for m in INCLUDE.finditer(chapter.read_text()):
            options = dict(re.findall(r"^:([\w-]+):\s*(.*)$", m.group(2), flags=re.MULTILINE))
            yield f"{chapter.name}:{m.group(1)}:{options.get('pyobject', '')}", m.group(1), options


def defined_names(source):
    """Dotted names of the classes, functions and methods a module defines."""
    names = set()

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(prefix + child.name)
                visit(child, prefix + child.name + ".")

    visit(ast.parse(source), "")
    return names


INCLUDES = {key: (path, options) for key, path, options in literal_includes()}


@pytest.mark.parametrize("key", sorted(INCLUDES))
def test_literalinclude_resolves(key):
    path, options = INCLUDES[key]
    target = ROOT / path.lstrip("/")
    assert target.exists(), f"{key}: {path} does not exist"
    source = target.read_text()
    if "pyobject" in options:
        assert options["pyobject"] in defined_names(source), (
            f"{key}: {options['pyobject']} is not defined in {path}")
    for option in ("start-at", "start-after", "end-at", "end-before"):
        if option in options:
            text = options[option].strip()
            if len(text) >= 2 and text[0] == text[-1] == '"':
                text = text[1:-1]
            assert text in source, f"{key}: {option} text {text!r} not in {path}"


def test_literalincludes_found():
    # the pattern above must keep matching the book's listings
    assert len(INCLUDES) >= 5


def test_every_chapter_in_toc_exists():
    toc = (ROOT / "_toc.yml").read_text()
    for name in re.findall(r"file:\s*(\S+)", toc):
        assert (ROOT / f"{name}.md").exists(), name
