"""Promises in a turn's words: the matcher behind the Stop hook's promise check (issue 33).

Given what the user wrote in a turn and the agent's final answer, :func:`find`
returns the first commitment that points at a later time or a condition: the
user asking to be reminded ("remind me to renew the cert on Friday") or for
something to be done later ("check the migration again tomorrow morning"), the
agent saying it will do or check something later ("I'll look at the logs
after the deploy"). English only; phrases and time words, no model.

Precision comes first (a false alarm costs the user a model turn), so a
sentence is passed over when it is a question the agent asks, an offer or a
hypothetical ("I could…", "if you like…"), reported or past ("you asked me
yesterday to…"), inside code or quotation marks, an answer about the answer
("I'll explain…"), or a reminder of a fact ("remind me what X is").

What it owns: the phrases. The time words (weekdays, units, clock times) are
:mod:`rouse.core.humantime`'s. What it does not own: reading the hook's input,
or deciding to ask (:mod:`rouse.agents.promise_hook`). :func:`likely` is the
cheap first look (no ``re``, nothing imported) that lets a turn with no cue
skip the rest.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

#: The cheap first look (plain substrings, no ``re``), a superset of what the phrases
#: below take: a user's words ask for a reminder, or name a time or a condition; an
#: agent's say "I'll" (or the like) and name one, or promise to come back.
ASKED = ("remind", "reminder", "forget", "ping me", "ping us", "nudge me", "nudge us")
WILL = (
    *("i'll", "i will", "i'm going to", "i am going to", "i shall", "we'll", "we will"),
    *("we're going to", "let's", "let us", "let me", "i plan to", "i intend to"),
    "i promise to",
)
COME_BACK = ("remind you", "get back to you", "check back", "circle back", "follow up")
WHEN = (
    *("tomorrow", "tonight", "later", "weekend", "end of", "eod", "eow", "first thing"),
    *("morning", "afternoon", "evening", "next ", "every ", "noon", "after ", "before "),
    *("once ", "when", "as soon as", "min", "hour", "hr", "day", "week", "month", "year"),
    *("mon", "tue", "wed", "thu", "fri", "sat", "sun"),
)
#: Characters of a text read at most (a turn's words, not a transcript).
MOST = 20_000


class Promise:
    """One commitment: who said it (``user``, ``agent``, ``tool``) and the sentence."""

    __slots__ = ("origin", "said")

    def __init__(self, origin: str, said: str) -> None:
        self.origin, self.said = origin, said

    def __repr__(self) -> str:
        return f"Promise({self.origin!r}, {self.said!r})"


def likely(text: str, origin: str = "user") -> bool:
    """Could ``text`` hold a promise at all? (False: surely not; nothing imported.)"""
    lowered = text[:MOST].lower().replace("\u2019", "'")
    if origin != "agent" and any(cue in lowered for cue in ASKED):
        return True
    if origin == "agent" and not any(cue in lowered for cue in WILL):
        return False
    if origin == "agent" and any(cue in lowered for cue in COME_BACK):
        return True
    return any(cue in lowered for cue in WHEN) or _clock(lowered)


def _clock(lowered: str) -> bool:
    """A digit before ``am``, ``pm`` or ``:`` (9am, 5 pm, 17:30), or after ``in`` (in 2h),
    found without ``re``."""
    for mark in ("am", "pm", ":"):
        at = lowered.find(mark)
        while at > 0:
            if lowered[at - 1].isdigit() or lowered[at - 2 : at - 1].isdigit():
                return True
            at = lowered.find(mark, at + 1)
    at = lowered.find("in ")
    while at >= 0:
        if lowered[at + 3 : at + 4].isdigit():
            return True
        at = lowered.find("in ", at + 1)
    return False


def find(user: str, agent: str, tool: str = "") -> Promise | None:
    """The first promise of the turn: the user's words, then the tool result that came
    last (``tool``, read as a request, like the user's), then the agent's answer."""
    for origin, text in (("user", user), ("tool", tool), ("agent", agent)):
        if text and likely(text, origin):
            for sentence in sentences(text):
                if (_requested if origin != "agent" else _committed)(sentence.lower()):
                    return Promise(origin, sentence)
    return None


# -- the sentences worth reading ------------------------------------------------


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` outside code and quotations, in order."""
    rx = _patterns()
    text = text[:MOST].replace("\u2019", "'")
    text = rx["fenced"].sub("\n", text)
    kept = [line for line in text.splitlines() if not line.lstrip().startswith(">")]
    text = rx["inline"].sub(" ", "\n".join(kept))
    text = rx["quoted"].sub(" \u2026 ", text)
    found = []
    for part in rx["split"].split(text):
        part = " ".join(part.split()).strip("-*# ")
        if part:
            found.append(part)
    return found


def _requested(s: str) -> bool:
    """The user asks to be reminded, or for something to be done later."""
    rx = _patterns()
    if rx["past"].search(s) or rx["negated"].search(s):
        return False
    if s.endswith("?") and not rx["asking"].match(s):
        return False  # a question about something, not a request
    if rx["remind_me"].search(s) or rx["reminder"].search(s):
        return True
    asked = rx["asked_verb"].search(s)
    if asked is not None and asked.group("verb") in ANSWER_VERBS:
        return False  # "could you explain … in 2 minutes": about the answer itself
    return bool(rx["request"].search(s) and _later(s))


def _committed(s: str) -> bool:
    """The agent says it will do or check something later."""
    rx = _patterns()
    match = rx["will"].search(s)
    if match is None or s.endswith("?") or rx["if_you"].search(s):
        return False
    head = s[: match.start()]
    if match.group("verb") in ANSWER_VERBS or rx["offer"].search(head) or rx["past"].search(head):
        return False
    if rx["implied"].match(s, match.start("verb")):
        return True
    aside = rx["aside"].search(s, match.end())  # "so the job recovers when…" is not the promise
    return _later(s if aside is None else s[: aside.start()])


def _later(s: str) -> bool:
    """A time to come or a condition: tomorrow, on Friday, in 2 hours, at 9am, after the
    release, once CI passes; never ``later in this answer``."""
    rx = _patterns()
    if rx["later"].search(s) or rx["after"].search(s) or rx["once"].search(s):
        return True
    if rx["unit"].search(s):
        return True
    from rouse.core.humantime import Unreadable, time_of_day

    for match in rx["clock"].finditer(s):
        try:
            if time_of_day(match.group(1).replace(" ", "")) is not None:
                return True
        except Unreadable:
            continue
    return False


#: What the agent says it will do *now*, in its answer: never a promise for later.
ANSWER_VERBS = frozenset(
    [
        "explain",
        "show",
        "walk",
        "describe",
        "summarize",
        "summarise",
        "outline",
        "list",
        "clarify",
        "elaborate",
        "illustrate",
        "demonstrate",
        "answer",
        "note",
        "mention",
        "cover",
        "start",
        "begin",
        "focus",
        "go",
        "break",
        "assume",
        "use",
        "need",
        "be",
        "know",
        "tell",
        "give",
        "write",
    ]
)
#: Events a promise can wait for ("after the release").
EVENTS = (
    "release|deploy|deployment|merge|launch|meeting|standup|stand-up|call|lunch|weekend|"
    "holidays?|break|review|demo|migration|freeze|upgrade|rollout|sprint|vacation|"
    "holiday|outage|maintenance|cutover|retro|retrospective|offsite|weekend|reboot|"
    "restart|rebuild|backup|window|launch|interview|trip|move|handover|hand-off"
)
_CACHE: dict[str, re.Pattern[str]] = {}


def _patterns() -> dict[str, re.Pattern[str]]:
    """The phrases, compiled at the first sentence read (``re`` is not paid before)."""
    if _CACHE:
        return _CACHE
    import re

    from rouse.core.humantime import WEEKDAYS

    full_days = "|".join(w for w in WEEKDAYS if len(w) > 3)
    short_days = "|".join([*(w for w in WEEKDAYS if len(w) == 3), "tues", "thur", "thurs"])
    day = rf"(?:{full_days}|(?:on|by|next|this|every|until|before) (?:{short_days}))\b"
    _CACHE.update(  # the text's shape: code and quotes (not the speaker's own words), sentences
        {
            "fenced": re.compile(r"(?ms)^\s*(```|~~~).*?(^\s*\1[^\n]*$|\Z)"),
            "inline": re.compile(r"`[^`\n]*`"),
            "quoted": re.compile(r"\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d"),
            "split": re.compile(r"(?<=[.!?;])\s+|\n+"),
        }
    )
    _CACHE.update(_speech_patterns(day))
    _CACHE.update(_when_patterns(day))
    return _CACHE


def _speech_patterns(day: str) -> dict[str, re.Pattern[str]]:
    """What a sentence is: a request, an aside, the past, a refusal, an offer, and the
    words of a promise."""
    import re

    will = (
        r"\b(?:i'll|i will|i'm going to|i am going to|i shall|we'll|we will|we're going to|"
        r"let's|let us|let me|i plan to|i intend to|i promise to)(?: (?:also|then|still|"
        r"definitely|certainly|just|be sure to|make sure to|"
        r"remember to|come back and|circle back and))* (?P<verb>[a-z][a-z-]*)"
    )
    return {
        "remind_me": re.compile(
            r"\b(?:remind|ping|nudge) (?:me|us)(?: again| later)?(?: (?:to|about|that|on|"
            rf"at|in|tomorrow|tonight|next|this|every|when|after|before|once|if|by|first)\b|"
            rf" {day})"
        ),
        "reminder": re.compile(
            r"\b(?:set|add|create|make|schedule|put in|need|want)(?: me| up| us)? an?"
            r" reminder\b|\bdon't let (?:me|us) forget\b|\bmake sure (?:i|we) (?:don't|do "
            r"not) forget\b"
        ),
        "request": re.compile(
            r"^(?:please |pls |ok,? |okay,? |and |also |then )*(?:check|look|revisit|"
            r"follow|ask|run|rerun|re-run|review|verify|retry|re-check|recheck|test|try|"
            r"deploy|renew|update|circle|come|get|send|email|call|bump|merge|rotate|"
            r"remember)\b|\b(?:can|could|would|will) you\b|\bplease\b|\bi (?:want|need|'d "
            r"like|would like) you to\b|\bmake sure (?:you|to)\b|\blet's\b|\blet us\b|"
            r"\bwe (?:should|need to|must|have to)\b|\bremember to\b|\bdon't forget to\b|"
            r"\bi(?:'d| would) like you to\b"
        ),
        "asked_verb": re.compile(r"\b(?:can|could|would|will) you (?:please )?(?P<verb>\w+)"),
        "asking": re.compile(r"^(?:\w+,? )?(?:can|could|would|will) you\b"),
        "aside": re.compile(
            r"\b(?:so|so that|that|which|who|in case|to make sure|to ensure|because|since|"
            r"where|whenever it|until it)\b"
        ),
        "past": re.compile(
            r"\b(?:yesterday|last (?:week|night|time|month)|ago|earlier today|you "
            r"(?:said|asked|told|promised|reminded|were supposed)|i (?:said|asked|told|"
            r"promised|wanted|forgot|meant)|did you|didn't you|was supposed|used to)\b"
        ),
        "negated": re.compile(
            r"\b(?:don't|do not|no need to|never|stop|no longer|not) (?:\w+ )?(?:remind|"
            r"ping|nudge|check|revisit|follow)\b|\bremind me (?:what|how|why|who|where|"
            r"which|whether|of what|again what|again how)\b|\bremind me,"
        ),
        "offer": re.compile(
            r"\b(?:should i|shall i|i could|i can|i would|i'd|i might|i may|we could|"
            r"we might|you could|you might|could have|would have|should have|unless|if)\b"
        ),
        "if_you": re.compile(
            r"\b(?:if you(?:'d)? (?:want|like|wish|prefer|need)|would you like|do you want|"
            r"if needed|if necessary|when you're ready)\b"
        ),
        "will": re.compile(will),
        "implied": re.compile(
            r"(?:remind you|get back to you|check back|circle back|follow up(?! on this now))"
        ),
    }


def _when_patterns(day: str) -> dict[str, re.Pattern[str]]:
    """When a promise is for: a time of day or week, an amount of time, an event."""
    import re

    units = r"(?:minute|min|hour|hr|day|week|month|year)s?"
    amount = (
        r"(?:\d+(?:\.\d+)?|an?|a few|a couple(?: of)?|few|couple of|two|three|four|five|six|ten)"
    )
    later = (
        r"\b(?:tomorrow|tonight|later(?! (?:in|on in|below|on in this))(?! (?:this|the) "
        r"(?:answer|response|reply|message|section|file|document|doc|post|function|code))|"
        r"this (?:afternoon|evening|weekend)|over the weekend|end of (?:the )?(?:day|week|"
        r"month|sprint|quarter)|eod|eow|first thing|in the morning|next (?:week|month|year|"
        rf"sprint|quarter|release|session|few days)|every (?:day|morning|evening|week)|{day})"
    )
    return {
        "later": re.compile(later, re.IGNORECASE),
        "unit": re.compile(rf"\bin {amount} {units}\b|\bin \d+ ?(?:m|h|d|w|min|hrs?)\b"),
        "clock": re.compile(
            r"\b(?:at|by|around|before|after|until) (\d{1,2}(?::\d{2})? ?(?:am|pm)|"
            r"\d{1,2}:\d{2}|noon)\b"
        ),
        "after": re.compile(
            rf"\b(?:after|before|once|when) (?:the|this|that|our|your|today's|tomorrow's|"
            rf"next week's|next) (?:\w+ )?(?:{EVENTS})\b"
        ),
        "once": re.compile(
            r"\b(?:once|as soon as|when|whenever) (?:the |this |that |it |its |our |your |"
            r"we |you |they |ci |)(?:[\w'-]+ ){0,3}(?:is|are|lands|finishes|ships|passes|"
            r"fails|completes|merges|gets|goes|comes|arrives|returns|ends|opens|closes|"
            r"has finished|has landed)(?: (?:done|back|ready|out|released|deployed|shipped|"
            r"over|live|available|finished|approved|merged|green|up))?\b"
        ),
    }
