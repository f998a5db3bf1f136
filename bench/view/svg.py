"""Small inline SVG charts for the viewer's pages (no script, no external file): series over the replay turns."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Sequence


@dataclass
class Series:
    name: str
    xs: Sequence[float]
    ys: Sequence[float]
    color: str
    fill: bool = False  # draw as a filled band from the series below it (stacked areas)


@dataclass
class Marks:
    """Points marked on a series (memory events): x, y and a label shown on hover."""

    points: list[tuple[float, float, str]] = field(default_factory=list)
    color: str = "#000"


def line_chart(series: Sequence[Series], marks: Marks | None = None, *, width: int = 720, height: int = 240,
               x_label: str = "turn", y_label: str = "tokens", stacked: bool = False) -> str:
    """An SVG line chart (or stacked areas with `stacked`), axes with min/max ticks, a legend. '' without data."""
    series = [s for s in series if len(s.xs)]
    if not series:
        return ""
    pad_l, pad_r, pad_t, pad_b = 60, 10, 10, 34
    xs_all = [x for s in series for x in s.xs]
    if stacked:
        tops = [sum(v) for v in zip(*(s.ys for s in series))]
        y_max = max(tops) if tops else 1.0
    else:
        y_max = max((y for s in series for y in s.ys), default=1.0)
    x_min, x_max = min(xs_all), max(xs_all)
    y_max = y_max or 1.0
    span = (x_max - x_min) or 1.0

    def px(x: float) -> float:
        return pad_l + (x - x_min) / span * (width - pad_l - pad_r)

    def py(y: float) -> float:
        return height - pad_b - y / y_max * (height - pad_t - pad_b)

    e = html.escape
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height + 18 * len(series)}' "
           f"class='chart' role='img' aria-label='{e(y_label)} over {e(x_label)}'>",
           f"<line x1='{pad_l}' y1='{height - pad_b}' x2='{width - pad_r}' y2='{height - pad_b}' stroke='#888'/>",
           f"<line x1='{pad_l}' y1='{pad_t}' x2='{pad_l}' y2='{height - pad_b}' stroke='#888'/>",
           f"<text x='{pad_l - 4}' y='{pad_t + 8}' text-anchor='end' font-size='10'>{y_max:,.0f}</text>",
           f"<text x='{pad_l - 4}' y='{height - pad_b}' text-anchor='end' font-size='10'>0</text>",
           f"<text x='{pad_l}' y='{height - pad_b + 14}' font-size='10'>{x_min:g}</text>",
           f"<text x='{width - pad_r}' y='{height - pad_b + 14}' text-anchor='end' font-size='10'>{x_max:g}</text>",
           f"<text x='{(pad_l + width) / 2}' y='{height - 6}' text-anchor='middle' font-size='11'>{e(x_label)}</text>",
           f"<text x='12' y='{height / 2}' transform='rotate(-90 12 {height / 2})' text-anchor='middle' "
           f"font-size='11'>{e(y_label)}</text>"]
    base = [0.0] * len(series[0].xs)
    for s in series:
        if stacked:
            top = [b + y for b, y in zip(base, s.ys)]
            up = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(s.xs, top))
            down = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in reversed(list(zip(s.xs, base))))
            out.append(f"<polygon points='{up} {down}' fill='{s.color}' fill-opacity='0.75' stroke='none'>"
                       f"<title>{e(s.name)}</title></polygon>")
            base = top
        else:
            pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(s.xs, s.ys))
            out.append(f"<polyline points='{pts}' fill='none' stroke='{s.color}' stroke-width='1.5'>"
                       f"<title>{e(s.name)}</title></polyline>")
    if marks:
        for x, y, label in marks.points:
            out.append(f"<circle cx='{px(x):.1f}' cy='{py(y):.1f}' r='3' fill='{marks.color}'>"
                       f"<title>turn {x:g}: {e(label)}</title></circle>")
    for i, s in enumerate(series):
        y = height + 12 + 18 * i
        out.append(f"<rect x='{pad_l}' y='{y - 9}' width='12' height='10' fill='{s.color}'/>"
                   f"<text x='{pad_l + 18}' y='{y}' font-size='11'>{e(s.name)}</text>")
    out.append("</svg>")
    return "".join(out)
