"""The learner's evaluation curve as a dependency-free SVG (``eval_curve.svg``)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from training.files import write_text_atomic


def write_curve_svg(csv_path: Path, svg_path: Path, fair: float) -> None:
    """A dependency-free SVG plot of the evaluation win share (with its 95% band) per field."""
    rows = list(csv.DictReader(csv_path.open())) if csv_path.is_file() else []
    if not rows:
        return
    fields = list(dict.fromkeys(r["field"] for r in rows))
    steps = [int(r["step"]) for r in rows]
    x0, x1 = 0, max(max(steps), 1)
    W, H, L, B = 640, 360, 50, 40
    ymax = min(1.0, max(0.5, max(float(r["win_hi95"]) for r in rows) * 1.1))

    def px(s: float) -> float:
        return L + (W - L - 10) * (s - x0) / (x1 - x0)

    def py(v: float) -> float:
        return H - B - (H - B - 10) * v / ymax

    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<line x1="{L}" y1="{py(0)}" x2="{W - 10}" y2="{py(0)}" stroke="black"/>',
        f'<line x1="{L}" y1="{py(0)}" x2="{L}" y2="10" stroke="black"/>',
        f'<line x1="{L}" y1="{py(fair)}" x2="{W - 10}" y2="{py(fair)}" stroke="gray" stroke-dasharray="4"/>',
        f'<text x="{W - 10}" y="{py(fair) - 3}" text-anchor="end" fill="gray">fair share 1/n</text>',
        f'<text x="{(W + L) / 2}" y="{H - 8}" text-anchor="middle">env steps (max {x1:,})</text>',
        f'<text x="12" y="{(H - B) / 2}" transform="rotate(-90 12 {(H - B) / 2})" text-anchor="middle">win share vs field</text>',
    ]
    for v in np.linspace(0, ymax, 5):
        parts.append(f'<text x="{L - 4}" y="{py(v) + 4}" text-anchor="end">{v:.2f}</text>')
    for i, f in enumerate(fields):
        c = colors[i % len(colors)]
        pts = [(int(r["step"]), r) for r in rows if r["field"] == f]
        band = [f"{px(s)},{py(float(r['win_hi95']))}" for s, r in pts] + [
            f"{px(s)},{py(float(r['win_lo95']))}" for s, r in reversed(pts)
        ]
        parts.append(f'<polygon points="{" ".join(band)}" fill="{c}" opacity="0.15"/>')
        line = " ".join(f"{px(s)},{py(float(r['win_share']))}" for s, r in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{c}" stroke-width="2"/>')
        parts.append(f'<text x="{L + 8}" y="{20 + 14 * i}" fill="{c}">vs {f}</text>')
    parts.append("</svg>")
    write_text_atomic(svg_path, "\n".join(parts) + "\n")
