"""What every figure shares: the palette and look, the bandwidth label,
SVG text with ids of its own, the figure that says there is nothing to
draw. Every figure module draws through this one."""

from __future__ import annotations

import io
import re
from contextlib import contextmanager

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GBPS_LABEL = "bandwidth (GB/s = 1e9 B/s)"

# seaborn's "colorblind" palette and its whitegrid/paper look, set without
# importing seaborn: it imports scipy.stats, seconds of every figure job.
COLORBLIND = ["#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133", "#56b4e9"]
THEME = {
    "axes.facecolor": "white", "axes.edgecolor": "#cccccc", "axes.grid": True, "axes.axisbelow": True,
    "grid.color": "#cccccc", "grid.linewidth": 0.8, "axes.spines.right": True, "axes.spines.top": True,
    "font.size": 9.6, "axes.labelsize": 9.6, "axes.titlesize": 9.6, "xtick.labelsize": 8.8, "ytick.labelsize": 8.8,
    "legend.fontsize": 8.8, "legend.title_fontsize": 9.6, "lines.linewidth": 1.2, "lines.markersize": 4.8,
    "xtick.bottom": False, "ytick.left": False, "legend.frameon": True,
}  # fmt: skip


def colours(n: int) -> list[str]:
    return [COLORBLIND[i % len(COLORBLIND)] for i in range(n)]


class _Seaborn:
    """seaborn, imported by the figures that draw with it, on first use."""

    def __getattr__(self, name):
        import seaborn

        return getattr(seaborn, name)


sns = _Seaborn()


@contextmanager
def fixed_jitter(seed: int = 0):
    """numpy's global generator seeded for one drawing and restored after:
    seaborn's stripplot jitters its dots with np.random.uniform and takes
    no generator, so without this two identical runs place the dots (and
    write the SVG) differently."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


# Every figure is also a PNG at slide size (people put PNGs in slides): the
# figures stage asks for it (membench.figures.plot), the report inlines SVG.
SLIDE_PIXELS = (1920, 1080)
PNGS: dict[str, bytes] = {}
want_png = False


def slide_png(fig) -> bytes:
    """The figure filling a 1920 x 1080 slide as far as its shape allows."""
    width, height = fig.get_size_inches()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight", metadata={"Software": None},
                dpi=min(SLIDE_PIXELS[0] / width, SLIDE_PIXELS[1] / height))  # fmt: skip
    return buffer.getvalue()


def to_svg(fig, name: str, dpi: float | None = None) -> str:
    """SVG text whose ids (and the references to them) carry the figure's
    name, so several figures can be inlined in one HTML page: matplotlib
    numbers its groups the same way in every figure (axes_1, patch_1, ...)."""
    if want_png:
        PNGS[name] = slide_png(fig)
    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": name, "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None}, dpi=dpi or "figure")
    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r'(\bid="|url\(#|href="#)([^"\)]+)', lambda m: f"{m.group(1)}{name}-{m.group(2)}", text)


def empty(message: str, name: str) -> str:
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return to_svg(fig, name)
