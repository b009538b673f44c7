"""``report.md``: the figures and the claims table of a reproduction, side by side."""

from __future__ import annotations

from shallowflow.reproductions.claims import Claim


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value).replace("|", "/").replace("\n", " ")


def claims_table(claims: list[Claim]) -> str:
    rows = ["| claim | paper | measured | interval | verdict |", "|---|---|---|---|---|"]
    for c in claims:
        interval = "" if c.interval is None else _fmt(list(c.interval))
        rows.append(f"| **{c.id}**: {_fmt(c.statement)} | {_fmt(c.paper_value)} | "
                    f"{_fmt(c.measured)} | {interval} | {c.verdict} |")
    return "\n".join(rows)


def render(title: str, summary: str, figures: list[tuple[str, str]], claims: list[Claim],
           sections: list[tuple[str, str]], preset: str, params: dict, wall_s: float,
           precision: str) -> str:
    """The Markdown report: summary, figures with captions, claims table, claim notes,
    further sections, the preset's parameters and the precision the runs were trained in."""
    out = [f"# {title}", "", summary.strip(), ""]
    for path, caption in figures:
        out += [f"![{path}]({path})", "", f"*{caption.strip()}*", ""]
    if claims:
        out += ["## Claims", "", claims_table(claims), ""]
        noted = [c for c in claims if c.notes or c.variants]
        if noted:
            out += ["### Notes", ""]
            for c in noted:
                text = c.notes.strip()
                if c.variants:
                    text += " Variants: " + "; ".join(f"{k}: {_fmt(v)}" for k, v in c.variants.items())
                out += [f"- **{c.id}**: {text.strip()}"]
            out += [""]
    for heading, text in sections:
        out += [f"## {heading}", "", text.strip(), ""]
    settings = ", ".join(f"{k} = {_fmt(v)}" for k, v in params.items())
    out += ["## Settings", "", f"Preset `{preset}`: {settings}. Wall time {wall_s:.1f} s.", "",
            f"Precision: {precision}", ""]
    return "\n".join(out)
