"""The pack's fit finds the same cut as rendering it again after every trimmed entry.

:func:`rouse.pack.render.fit` once rendered the whole pack for each entry it cut
(59 renders on the ×10 tree). The reference below is that code as it was, kept
here only: on random packs (entries of every kind, text needing escapes, wide
characters, a hard wall or none, each agent's measure) and random budgets, the
fit as it is gives the same text, byte for byte, the same JSON and the same
record of what was cut.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rouse.agents.hookio import utf16_units
from rouse.core import layout
from rouse.pack import render
from rouse.pack.render import (
    KEEP_FIRST,
    LADDER,
    LIST_CAP,
    QUARANTINE_OWNER,
    QUARANTINE_TEXT,
    QUARANTINE_WHY,
    HardWall,
    _context_entries,
)
from rouse.trust import fence

ORIGINS = ("owner", "system", "agent", "untrusted", "unknown")


def reference_render(
    data: Mapping[str, Any],
    index_cap: int,
    due_cap: int,
    woken_cap: int,
    context_cap: int | None = None,
) -> str:
    """``render_text`` as it was before fit stopped re-rendering per entry."""
    entries = _context_entries(data)
    shown_context = len(entries) if context_cap is None else context_cap
    out: list[str] = []
    if shown_context < len(entries):
        out.append(
            f"WARNING: {len(entries) - shown_context} of {len(entries)} context files are NOT "
            "in this pack (it would pass the agent's limit on hook output): read each file "
            "marked 'left out' below before you rely on your memory"
        )
    out += [f"now: {data['now']}", ""]
    if data["probes"]:
        out.append(
            "probes (measured now; a reading outranks any memory file; <unknown> means go check):"
        )
        out += [f"  {p['name']}: {p['reading']}" for p in data["probes"]]
        out.append("")
    woken = data["woken"]
    if woken:
        out.append(f"woken: {len(woken)} record(s) woke you, not answered yet")
        for item in woken[:woken_cap]:
            out.append(f"  {item['wake']}")
            out += _message_lines(item.get("message"))
            out.append(f"    at: {item['path']}")
        if len(woken) > woken_cap:
            out.append(f"  … and {len(woken) - woken_cap} more — ls .rouse/nudges")
        out.append("")
    due, due_total = data["due"], data["due_total"]
    if due:
        out.append(f"due: {due_total} record(s) want you")
        for item in due[:due_cap]:
            nudge = f", nudge {item['nudge']}" if item["nudge"] else ""
            still = "due" if item["reason"] in ("due", "nag", "expire") else "last moved"
            out.append(f"  {item['record']} — {item['reason']}, {still} {item['still']}{nudge}")
            out += _message_lines(item.get("message"))
            out.append(f"    at: {item['path']}")
            if item["line"] and fence.quoted(item["origin"]):
                out += fence.block(item["line"], item["origin"], "its fields: ", "    ", "      ")
            elif item["line"]:
                out.append(f"    {item['line']}")
        if due_total > due_cap:
            out.append(f"  … and {due_total - due_cap} more — rouse due")
        out.append("")
    if entries:
        out += ["standing truth (context layers: true until edited, not news):", ""]
        for kind, entry in entries[:shown_context]:
            out += _context_block(kind, entry)
        out += [
            f"{kind} [{entry['slug']}] — left out to fit the hook's limit: read {entry['path']}"
            for kind, entry in entries[shown_context:]
        ]
        if out[-1] != "":
            out.append("")
    if data["quarantined"]:
        out.append(f"quarantined ({QUARANTINE_TEXT}):")
        out += [
            f"  {q['kind']} {q['slug']} — {q['path']}: "
            + QUARANTINE_WHY.get(q.get("origin", "untrusted"), QUARANTINE_WHY["untrusted"])
            for q in data["quarantined"]
        ]
        out += [QUARANTINE_OWNER, ""]
    ladder = data["ladder"]
    line = "ladder: " + " · ".join(f"{ladder[k]} {k}s" for k in LADDER) + " open"
    if ladder.get("snoozed"):
        line += f" ({ladder['snoozed']} of them snoozed)"
    if ladder.get("fired"):
        line += f" · {ladder['fired']} fired, waiting for done"
    out.append(line)
    tasks = data.get("tasks") or {}
    for item in tasks.get("running", []):
        latest = item["checkpoint"]
        said = f" — latest checkpoint {fence.inline(latest, item['origin'])}" if latest else ""
        out.append(
            f"  running: {item['record']} (attempt {item['attempts'] or '?'}, "
            f"since {item['started'] or '?'}){said}"
        )
    out += [f"  held: {why}" for why in tasks.get("held", [])]
    if data["plugins"]:
        out.append(
            f"plugins: {len(data['plugins'])} on ({', '.join(data['plugins'])}) — "
            f"settings in {layout.PLUGINS}/"
        )
    out.append("")
    index = data["index"][:index_cap]
    if index:
        out.append("memory index (bodies stay on disk; open a file to read it):")
        for label, fresh in (("fresh", True), ("older", False)):
            group = [item for item in index if item["fresh"] is fresh]
            if group:
                out.append(f"{label}:")
            for item in group:
                words = fence.inline(item["keywords"], item["origin"])
                keywords = f" — {words}" if words else ""
                out.append(f"  {item['path']} [{item['origin']}] ({item['age']}{keywords})")
                if item["probes"]:
                    shown = ", ".join(f"{k}={v}" for k, v in item["probes"].items())
                    out.append(f"    probes: {shown}")
                if item.get("drifted"):
                    out.append(f"    drifted: {item['drifted']}")
        out.append("")
    hidden = data["index_total"] - index_cap
    closed = data["not_listed"]["closed_records"]
    parts = []
    if hidden:
        parts.append(f"{hidden} more notes/backlog items")
    if closed:
        parts.append(f"{closed} closed records")
    parts.append("every body")
    out.append(f"not listed: {', '.join(parts)} — `rouse recall QUERY` or grep finds them")
    if data["warnings"]:
        out += ["", "warnings:"]
        out += [f"  {w}" for w in data["warnings"]]
    return layout.shown("\n".join(out) + "\n", lines=True)


def _context_block(kind: str, entry: Mapping[str, Any]) -> list[str]:
    name = "persona" if kind == "persona" else f"{kind} {entry['slug']}"
    if entry["body"] is None:
        return [
            f"{kind} [{entry['slug']}] — {entry['age']} (on disk: no keyword matches the query)"
        ]
    if fence.quoted(entry["origin"]):
        lead = f"{name} [{entry['origin']}] — not standing truth until the owner vouches for it: "
        return [*fence.block(entry["body"], entry["origin"], lead=lead, inner="  "), ""]
    return [f"{name} [{entry['origin']}]:", entry["body"], ""]


def _message_lines(message: Mapping[str, Any] | None) -> list[str]:
    if not message:
        return []
    return fence.message_block(
        message["lines"], message["more"], message["file"], message["origin"]
    )


def reference_fit(
    data: dict[str, Any], max_chars: int, wall: tuple[int, Callable[[str], int]] | None
) -> render.Pack:
    """``fit`` as it was: the whole pack rendered again after each entry it cuts."""
    limit, measure = wall if wall is not None else (None, len)
    caps = {
        "index": len(data["index"]),
        "due": len(data["due"]),
        "woken": min(LIST_CAP, len(data["woken"])),
    }
    floors = {"index": 0, "due": KEEP_FIRST, "woken": KEEP_FIRST}
    context_total = len(_context_entries(data))
    shown_context = context_total

    def again() -> str:
        return reference_render(data, caps["index"], caps["due"], caps["woken"], shown_context)

    def shrink(target: int, floor: Mapping[str, int]) -> str:
        text = again()
        for name in ("index", "due", "woken"):
            while measure(text) > target and caps[name] > floor[name]:
                caps[name] -= 1
                text = again()
        return text

    text = shrink(max_chars, floors)
    if measure(text) > max_chars:
        data["warnings"].append(
            f"the context layers alone exceed --max-chars {max_chars}: "
            "they are never cut, so the pack is longer than asked"
            if context_total
            else f"the pack is longer than --max-chars {max_chars}: the due and woken lists "
            f"keep their first {KEEP_FIRST} entries and warnings are never cut"
        )
        text = again()
        if limit is not None and measure(text) > limit:
            data["warnings"].pop()
            text = again()
            while measure(text) > limit and shown_context > 0:
                shown_context -= 1
                text = again()
            if measure(text) > limit:
                text = shrink(limit, dict.fromkeys(floors, 0))
    uncapped = {"index": len(data["index"]), "due": len(data["due"])}
    uncapped["woken"] = min(LIST_CAP, len(data["woken"]))
    trimmed = [name for name in ("index", "due", "woken") if caps[name] < uncapped[name]]
    if shown_context < context_total:
        trimmed.append("context")
    data["not_listed"].update(
        index=data["index_total"] - caps["index"],
        due=data["due_total"] - caps["due"],
        woken=len(data["woken"]) - caps["woken"],
        context=[entry["path"] for _, entry in _context_entries(data)[shown_context:]],
        trimmed_for_size=trimmed,
    )
    shown = dict(data)
    shown["index"] = data["index"][: caps["index"]]
    shown["due"] = data["due"][: caps["due"]]
    shown["woken"] = data["woken"][: caps["woken"]]
    return render.Pack(shown, text, trimmed)


def _words(rng: random.Random, most: int = 6) -> str:
    """A few words, now and then wide ones, or a backslash (doubled only beside an escape)."""
    pool = ["deploy", "a\\b", "日本", "x" * 40, "ok", "", "🙂", "tab\there", "z"]
    weights = [8, 1, 1, 2, 8, 1, 1, 1, 6]
    return " ".join(rng.choices(pool, weights, k=rng.randint(1, most)))


def _message(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.5:
        return None
    lines = [_words(rng) for _ in range(rng.randint(0, 3))]
    return {
        "lines": lines,
        "more": rng.choice([0, 0, 2]),
        "file": f"r/{_words(rng, 1)}.md",
        "origin": rng.choice(ORIGINS),
    }


def _context(rng: random.Random, slug: str) -> dict[str, Any]:
    body = None if rng.random() < 0.2 else "\n".join(_words(rng) for _ in range(rng.randint(1, 30)))
    origin = rng.choice(ORIGINS)
    return {"slug": slug, "body": body, "origin": origin, "age": "3d", "path": f"b/{slug}.md"}


def random_pack(rng: random.Random) -> dict[str, Any]:
    """A pack's data as build_pack hands it to fit, of random sizes and contents."""
    due = [
        {
            "record": f"intentions/i{i}",
            "reason": rng.choice(["due", "nag", "expire", "stale"]),
            "still": rng.choice(["2h ago", "3 days ago"]),
            "nudge": rng.choice(["", "in 1h"]),
            "message": _message(rng),
            "path": f"intentions/i{i}/intention.md",
            "line": rng.choice(["", _words(rng)]),
            "origin": rng.choice(ORIGINS),
        }
        for i in range(rng.choice([0, 2, 5, 20]))
    ]
    index = [
        {
            "path": f"notes/{_words(rng, 2)}-{i}.md",
            "origin": rng.choice(ORIGINS),
            "age": f"{i}d",
            "keywords": rng.choice(["", _words(rng)]),
            "probes": rng.choice([{}, {"disk": "91%"}]),
            "drifted": rng.choice([None, "", "3 files changed"]),
            "fresh": rng.random() < 0.4,
        }
        for i in range(rng.choice([0, 1, 7, 40]))
    ]
    for entries, key in ((index, "keywords"), (due, "line")):
        if entries and rng.random() < 0.2:  # one entry to escape, which a cut may drop
            rng.choice(entries)[key] += " esc\x1b[0m"
    slugs = [f"b{i}" for i in range(rng.choice([0, 1, 4, 12]))]
    return {
        "now": "2026-03-16 12:00 Mon",
        "probes": [{"name": "disk", "reading": _words(rng, 2)}] * rng.randint(0, 2),
        "woken": [
            {"wake": _words(rng), "message": _message(rng), "path": f"r/w{i}.md"}
            for i in range(rng.choice([0, 2, 5, 25]))
        ],
        "due": due,
        "due_total": len(due) + rng.choice([0, 0, 7, 1000]),
        "persona": _context(rng, "persona") if rng.random() < 0.5 else None,
        "beliefs": [_context(rng, s) for s in slugs],
        "motivations": [_context(rng, f"m{i}") for i in range(rng.randint(0, 3))],
        "quarantined": [
            {"kind": "belief", "slug": f"q{i}", "path": f"b/q{i}.md", "origin": "unknown"}
            for i in range(rng.choice([0, 0, 3]))
        ],
        "ladder": {**dict.fromkeys(LADDER, 4), "snoozed": rng.choice([0, 2]), "fired": 1},
        "tasks": {
            "running": [
                {
                    "record": "tasks/t1",
                    "attempts": 1,
                    "started": None,
                    "checkpoint": _words(rng),
                    "origin": rng.choice(ORIGINS),
                }
            ][: rng.randint(0, 1)],
            "held": ["no worker"][: rng.randint(0, 1)],
        },
        "plugins": ["git"][: rng.randint(0, 1)],
        "index": index,
        "index_total": len(index) + rng.choice([0, 3, 4990]),
        "not_listed": {"closed_records": rng.choice([0, 9]), "index": 0, "due": 0, "woken": 0},
        "warnings": [_words(rng) for _ in range(rng.randint(0, 2))],
    }


def _budget(rng: random.Random, data: dict[str, Any], measure: Callable[[str], int]) -> int:
    """Any size, or (mostly) within a character or two of the text at some cut: where
    one character more or less decides it."""
    if rng.random() < 0.3:
        return rng.randint(0, rng.choice([600, 3000, 9000, 60_000]))
    caps = [rng.randint(0, len(data[name])) for name in ("index", "due", "woken")]
    context = rng.randint(0, len(_context_entries(data)))
    return measure(reference_render(data, *caps, context)) + rng.randint(-2, 2)


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 3))
def test_fit_cuts_where_rendering_after_every_cut_did(seed: int, how: int) -> None:
    rng = random.Random(seed)
    data = random_pack(rng)
    measure: Callable[[str], int] = (len, utf16_units)[how % 2]
    budget = _budget(rng, data, measure)
    wall = (budget + rng.choice([0, 100, 900]), measure) if how >= 2 else None
    expected = reference_fit(copy.deepcopy(data), budget, wall)
    if wall is None:
        found = render.fit(copy.deepcopy(data), budget)
    else:
        with HardWall(*wall):
            found = render.fit(copy.deepcopy(data), budget)
    assert found.text == expected.text
    assert found.trimmed == expected.trimmed
    assert found.data == expected.data
