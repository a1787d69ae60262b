"""Draw the book's logo and favicon into book/_static/ (run by hand, output committed).

A ranked list drawn as bars in decreasing order, most of them grey and a few
coloured: a ranking that uses only a few features.  Run from the repository
root: ``.venv/bin/python book/_ext/draw_logo.py``.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

STATIC = Path(__file__).resolve().parents[1] / "_static"
HEIGHTS = [1.0, 0.82, 0.66, 0.52, 0.40, 0.30, 0.22]
COLOURED = {0: "#0072B2", 2: "#E69F00", 5: "#009E73"}  # Okabe-Ito, colour-blind safe


def draw(path, *, size, metadata=None, **savefig):
    """Draw the bars on a transparent square canvas of ``size`` inches."""
    plt.rcParams["svg.hashsalt"] = "sparse-ltr"  # stable ids: a redraw is a no-op diff
    fig = plt.figure(figsize=(size, size))
    ax = fig.add_axes([0.06, 0.06, 0.88, 0.88])
    for i, h in enumerate(HEIGHTS):
        ax.barh(-i, h, height=0.72, color=COLOURED.get(i, "#BBBBBB"), linewidth=0)
    ax.set_xlim(0, 1.0)
    ax.set_ylim(-len(HEIGHTS) + 0.5, 0.5)
    ax.axis("off")
    fig.savefig(path, transparent=True, metadata=metadata, **savefig)
    plt.close(fig)


if __name__ == "__main__":
    draw(STATIC / "logo.svg", size=2.0, metadata={"Date": None, "Creator": None})
    draw(STATIC / "favicon.png", size=0.32, dpi=100, metadata={"Software": None})
    for name in ("logo.svg", "favicon.png"):
        print(name, (STATIC / name).stat().st_size, "bytes")
