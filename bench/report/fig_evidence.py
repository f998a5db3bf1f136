"""Where the gold evidence sessions went, per run: shares of sessions in the Actor's prompt, in memory only, lost
and not known (bench.report.session_trace, as the viewer's question page traces them), beside its wrong answers by
where their evidence went."""

from __future__ import annotations

from pathlib import Path

from bench.report.data import ReportData
from bench.report.plotting import Figure, plt, save, skip

_PARTS = (("in Actor prompt", "#2a7"), ("in memory only", "#e9b44c"), ("lost", "#c33"), ("not known", "#bbb"))


def evidence_sessions(d: ReportData, out: Path) -> Figure:
    from bench.report.session_trace import ALL_IN, NONE_IN, SOME_IN, wrong_split

    f = Figure("evidence_sessions", "Where the gold evidence sessions went, and the wrong answers by where their "
                                    "evidence went (share of each run's)")
    st = d.session_traces
    runs = [r for r in d.runs if not st.empty and (st.run_key == r.run_key).any()]
    if not runs:
        return skip(f, "no judged question with gold evidence sessions (a dataset without them, or not readable)")
    p = plt()
    fig, (a1, a2) = p.subplots(1, 2, figsize=(10.0, 1.2 + 0.42 * len(runs)), sharey=True)
    ys = list(range(len(runs)))
    for y, r in zip(ys, runs):
        a = st[st.run_key == r.run_key]
        n = len(a)
        in_p = int((a.in_prompt == True).sum())  # noqa: E712 (object column of True/False/None)
        mem_only = int(((a.reached_memory == True) & (a.in_prompt != True) & ~a.lost).sum())  # noqa: E712
        lost = int(a.lost.sum())
        parts = [in_p, mem_only, lost, n - in_p - mem_only - lost]
        left = 0.0
        for (name, color), k in zip(_PARTS, parts):
            a1.barh(y, k / n, left=left, color=color, label=name if y == 0 else None)
            left += k / n
        a1.text(1.01, y, f"n={n}", va="center", fontsize=7)
        w = wrong_split(a)
        total = sum(w.values())
        left = 0.0
        for (_name, color), key in zip(_PARTS, (ALL_IN, SOME_IN, NONE_IN, "unknown")):
            share = w[key] / total if total else 0.0
            a2.barh(y, share, left=left, color=color, label=key if y == 0 else None)
            left += share
        a2.text(1.01, y, f"wrong={total}", va="center", fontsize=7)
    a1.set_yticks(ys, [r.label for r in runs], fontsize=7)
    a1.invert_yaxis()
    for ax, title in ((a1, "evidence sessions"), (a2, "wrong answers: their evidence")):
        ax.set_xlim(0, 1.15)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6.5, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.12 if len(runs) > 2 else -0.3),
                  frameon=False)
    f.path = save(fig, out, f.name)
    f.note = "Over the judged questions with gold evidence sessions; the table and rule: \"Where the evidence sessions went\"."
    return f
