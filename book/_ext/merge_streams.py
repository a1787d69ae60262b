"""Let myst-nb merge a cell's stream outputs without rewriting the notebook.

With ``nb_merge_streams: true`` myst-nb 1.4 (``myst_nb.core.render``) calls
``coalesce_streams(outputs)`` on the notebook's own output objects: the first
stream output of each name is edited in place to hold the merged text, and the
later ones stay in the notebook.  The notebook is then written to
``_build/jupyter_execute``, where the text therefore appears twice (merged,
then piece by piece), and nbval, which merges the stored and the fresh outputs
itself before comparing, reports a difference for every cell whose output came
in more than one message.

Handing myst-nb a deep copy keeps the written notebook exactly as the kernel
produced it; the HTML still shows one merged box per stream.  If myst-nb no
longer calls ``coalesce_streams`` from that module, the build stops here
rather than silently writing doubled outputs again.
"""

import copy

from sphinx.errors import ExtensionError

try:
    from myst_nb.core import render as _render
except ImportError as exc:  # pragma: no cover - myst-nb is pinned
    raise ExtensionError(f"merge_streams: cannot import myst_nb.core.render: {exc}")

if not hasattr(_render, "coalesce_streams"):
    raise ExtensionError(
        "merge_streams: myst_nb.core.render.coalesce_streams is gone; check "
        "whether myst-nb still merges stream outputs in place and update "
        "book/_ext/merge_streams.py (or drop it) accordingly"
    )

_coalesce_in_place = getattr(
    _render.coalesce_streams, "__wrapped__", _render.coalesce_streams
)


def coalesce_copy(outputs):
    """myst-nb's ``coalesce_streams`` applied to a copy of ``outputs``."""
    return _coalesce_in_place(copy.deepcopy(outputs))


coalesce_copy.__wrapped__ = _coalesce_in_place
_render.coalesce_streams = coalesce_copy


def setup(app):
    """The patch is applied on import; nothing to connect."""
    return {"parallel_read_safe": True, "parallel_write_safe": True}
