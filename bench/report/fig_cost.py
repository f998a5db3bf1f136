"""What accuracy costs: accuracy against dollars and against prefill tokens (runs that see only the evidence are
a ceiling line, not frontier points; one panel, frontier and ceiling per dataset), and the cost of each model role."""

from __future__ import annotations

from pathlib import Path

from bench.report.data import ReportData
from bench.report.plotting import Figure, plt, save, skip


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of points not dominated (lower x and higher y are better), sorted by x."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], float("-inf")
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def _scatter(d: ReportData, out: Path, f: Figure, xs: dict[str, float], xlabel: str) -> Figure:
    """One panel per dataset, each with its own Pareto frontier and its own ceiling lines: runs measured on
    different data are never drawn as one frontier."""
    runs = {r.run_key: r for r in d.runs}
    ok = [r for r in d.runs if d.metrics[r.run_key].overall.n]
    panels = []
    for ds, group in d.by_dataset(ok).items():
        pts = [(r.run_key, xs[r.run_key], d.metrics[r.run_key].overall.acc) for r in group
               if r.run_key in xs and xs[r.run_key] == xs[r.run_key] and not r.is_ceiling]
        if pts:
            panels.append((ds, pts, [r for r in group if r.is_ceiling]))
    if not panels:
        return skip(f, f"no run (other than oracle ceilings) has both accuracy and {xlabel}")
    p = plt()
    fig, axes = p.subplots(1, len(panels), figsize=(6.5 * len(panels) + 1, 4.6), squeeze=False)
    for ax, (ds, pts, ceilings) in zip(axes[0], panels):
        kinds = [runs[k].kind for k, _, _ in pts]
        for k, x, y in pts:  # in a panel of one dataset the strategy names a point when it is unique there
            name = runs[k].kind if kinds.count(runs[k].kind) == 1 else runs[k].label
            ax.scatter([x], [y], color=runs[k].color, s=30, zorder=3)
            ax.annotate(name, (x, y), fontsize=7, xytext=(4, 3), textcoords="offset points")
        front = [pts[i] for i in pareto_front([(x, y) for _, x, y in pts])]
        ax.plot([q[1] for q in front], [q[2] for q in front], "k--", lw=1, label="Pareto frontier")
        for r in ceilings:
            ax.axhline(d.metrics[r.run_key].overall.acc, color=r.color, ls=":", lw=1.2,
                       label=f"{r.label}: ceiling (evidence only)")
        lo = min(x for _, x, _ in pts)
        ax.set_xlim(left=0 if lo >= 0 else None)
        ax.set_xlabel(xlabel)
        ax.set_title(f"dataset {ds or 'unknown (imported)'}", fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("overall accuracy (micro)")
    f.path = save(fig, out, f.name)
    if len(panels) > 1:
        f.note = f"One panel per dataset ({len(panels)}): a frontier and a ceiling compare runs on one dataset only."
    return f


def accuracy_vs_cost(d: ReportData, out: Path) -> Figure:
    f = Figure("accuracy_vs_cost", "Accuracy against cost per question (Pareto frontier dashed)")
    ext = {r.run_key for r in d.runs if r.external}
    xs = {r.run_key: float(r.cost_per_question) for r in d.cost.itertuples()
          if r.run_key not in ext and r.cost_per_question == r.cost_per_question and r.cost_per_question is not None}
    if not xs:
        return skip(f, "no cost recorded")
    if all(v == 0 for v in xs.values()):
        return skip(f, "every cost is $0 (offline engine or unpriced models): nothing to compare")
    return _scatter(d, out, f, xs, "cost per question (USD, list prices)")


def accuracy_vs_prefill(d: ReportData, out: Path) -> Figure:
    f = Figure("accuracy_vs_prefill",
               f"Accuracy against prefill tokens per question, cache profile {d.profile} (Pareto frontier dashed)")
    df = d.prefill[d.prefill.profile == d.profile] if not d.prefill.empty else d.prefill
    if df.empty:
        return skip(f, f"no prefill numbers for profile {d.profile}")
    return _scatter(d, out, f, dict(zip(df.run_key, df.prefill_per_question.astype(float))),
                    f"prefill tokens / question ({d.profile})")


def cost_by_role(d: ReportData, out: Path) -> Figure:
    f = Figure("cost_by_role", "Cost per question by model role (list prices, USD)")
    c = d.cost_by_role
    if c.empty or not (c.cost_usd.fillna(0) > 0).any():
        return skip(f, "every cost is $0 (offline engine or unpriced models)")
    runs = [r for r in d.runs if r.run_key in set(c.run_key)]
    nq = {r.run_key: max(1, d.metrics[r.run_key].n_rows) for r in runs}
    roles = sorted(set(c.role))
    p = plt()
    fig, ax = p.subplots(figsize=(max(5.0, 0.7 * len(runs) + 2.5), 4.0))
    bottom = [0.0] * len(runs)
    cmap = p.get_cmap("tab10")
    for j, role in enumerate(roles):
        vals = [float(c[(c.run_key == r.run_key) & (c.role == role)].cost_usd.sum()) / nq[r.run_key] for r in runs]
        ax.bar(range(len(runs)), vals, 0.7, bottom=bottom, label=role, color=cmap(j % 10))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(runs)), [r.label for r in runs], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("USD per question")
    ax.legend(fontsize=7, title="role")
    f.path = save(fig, out, f.name)
    return f
