"""The promise check at a turn's end (issue 33): a promise becomes a record, or the agent
is asked once why not.

At Claude Code's and Codex's Stop and Gemini CLI's AfterAgent (``--promises``): when the
turn's words (:func:`read_turn`, :func:`promise_of`) hold a promise
(:mod:`rouse.agents.promises`) and no rouse verb wrote or moved a record since the prompt
(:func:`kept_since`), it continues the turn once with :func:`reason` (:func:`wanted` and
:func:`ask` say when never). It reads no record's body; with nothing to say it imports
only the light state reader and the matcher's cheap first look.
"""

from __future__ import annotations

import os
import stat
import sys

from rouse.agents import promises
from rouse.agents.hookio import TURN_END_EVENTS
from rouse.state.files import Damaged, decode, read_bounded, save_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

#: The transcript's tails read for the turn's prompt, each only when the one before did
#: not reach it (a long turn of tool calls fits in the last).
TAILS = (1 << 16, 1 << 20, 4 << 20)
LINE_DEPTH = 64
#: Claude Code writes its transcript in the background: a Stop hook can start before the
#: turn's prompt is in it. The hook's input names the prompt (``prompt_id``; the entry's
#: ``promptId``), and the check reads again every step until it is there, at most this long.
FLUSH_WAIT, FLUSH_STEP = 3.0, 0.02
#: Longest quote of what was said, in characters.
QUOTE_MOST = 300
SUFFIX = ".promise"  # beside the session's seen-set: the prompt already asked about
#: The first words of the reason; a transcript entry holding them is never a prompt.
HEAD = "rouse: a promise in this turn has no record yet"
WHO = {"user": "the user's words", "agent": "your answer", "tool": "a tool's output"}
CONTEXT_OPEN, CONTEXT_CLOSE = "<hook_context>", "</hook_context>"
TEXT_PARTS = ("text", "input_text", "output_text")  # Codex's parts: input_ and output_text


def wanted(session: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """May this turn's end be asked about at all? Never when the input says a Stop hook
    already continued the turn, never in an unattended run (``ROUSE_RUN_ID``: ``rouse
    work`` and ``sweep --run`` children), never with ``ROUSE_PROMISES=off``."""
    if session.get("stop_hook_active") is True or env.get("ROUSE_RUN_ID"):
        return False
    return env.get("ROUSE_PROMISES", "").strip().lower() not in ("off", "no", "0", "false")


class Turn:
    """The turn's words as the transcript holds them, and when its prompt was sent."""

    def __init__(self) -> None:
        self.prompt = ""
        self.tool = ""
        self.answer = ""
        self.stamp: object = None  # when the prompt was sent, as the transcript says
        self.mark = ""  # the prompt entry's own id (or stamp): which prompt was asked about
        self.prompt_id: object = None  # the client's id of the prompt (Claude Code's)

    @property
    def started(self) -> float | None:
        """The prompt's instant in seconds since the epoch (datetime only when asked)."""
        if not isinstance(self.stamp, str):
            return None
        from datetime import datetime

        try:
            return datetime.fromisoformat(self.stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None


def read_turn(path: object, prompt_id: object = None) -> Turn:
    """The turn of the prompt the client names (``prompt_id``), read again while the
    transcript does not yet hold it (:data:`FLUSH_WAIT`); an empty Turn when it never
    comes (an older prompt's words are not this turn's). Without an id, the last prompt."""
    turn = _last_turn(path)
    if not isinstance(prompt_id, str) or not prompt_id:
        return turn
    import time

    deadline = time.monotonic() + FLUSH_WAIT
    while turn.prompt_id != prompt_id:
        if turn.prompt and turn.prompt_id is None:
            return turn  # a client that writes no prompt ids: its last prompt
        if time.monotonic() >= deadline:
            return Turn()
        time.sleep(FLUSH_STEP)
        turn = _last_turn(path)
    return turn


def _last_turn(path: object) -> Turn:
    """The last prompt of the transcript (JSON lines), the tool result after it that came
    last, and the last answer; an empty Turn when there is no readable transcript. The
    tail is read from the end, a larger one only while the prompt is not in it."""
    for most in TAILS:
        data, whole = _tail(path, most)
        turn = _turn_in(data)
        if turn.prompt or whole:
            return turn
    return turn


def _tail(path: object, most: int) -> tuple[bytes, bool]:
    """The file's last ``most`` bytes, and whether that is all of it (a regular file only:
    never a FIFO's wait; nothing for a missing or unreadable one)."""
    if not isinstance(path, str) or not path:
        return b"", True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b"", True
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b"", True
        start = max(0, info.st_size - most)
        os.lseek(fd, start, os.SEEK_SET)
        chunks, left = [], info.st_size - start
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), start == 0
    except OSError:
        return b"", True
    finally:
        os.close(fd)


def _turn_in(data: bytes) -> Turn:
    turn = Turn()
    for line in reversed(data.split(b"\n")):
        entry = _entry(line)
        said = None if entry is None else _said(entry)
        if said is None:
            continue
        who, text = said
        if who == "assistant":
            turn.answer = turn.answer or text
            continue
        if who == "tool":
            turn.tool = turn.tool or text
            continue
        if not text.strip() or HEAD in text or text.lstrip().startswith(("<", "rouse: ")):
            continue  # rouse's own words (this reason, a wake), a client's context: no prompt
        assert entry is not None
        turn.prompt, turn.stamp = text, entry.get("timestamp")
        turn.mark = str(entry.get("uuid") or entry.get("id") or turn.stamp or "")
        turn.prompt_id = entry.get("promptId")
        break
    return turn


def _said(entry: dict[str, Any]) -> tuple[str, str] | None:
    """Who said what in one transcript entry (``user``, ``assistant``, ``tool``), as
    Claude Code, Gemini CLI and Codex (its rollout's ``response_item``) write them."""
    kind = entry.get("type")
    if kind == "response_item":
        item = entry.get("payload")
        if not isinstance(item, dict):
            return None
        if item.get("type") == "function_call_output":
            output = item.get("output")
            return "tool", output if isinstance(output, str) else _text(output)
        role = item.get("role")
        if item.get("type") != "message" or role not in ("user", "assistant"):
            return None
        return str(role), _text(item.get("content"))
    message = entry.get("message")  # Claude Code's; Gemini CLI's entry is the message
    content = message.get("content") if isinstance(message, dict) else entry.get("content")
    if kind in ("assistant", "gemini"):
        return "assistant", _text(content)
    if kind != "user" or entry.get("isMeta"):
        return None
    if isinstance(content, list) and any(_is(part, "tool_result") for part in content):
        results = [_text(p.get("content")) for p in content if _is(p, "tool_result")]
        return "tool", " ".join(results)
    return "user", _text(content)


def _entry(line: bytes) -> dict[str, Any] | None:
    if not any(word in line for word in (b'"user"', b'"assistant"', b'"gemini"', b'_output"')):
        return None
    try:
        value = decode(line, max_depth=LINE_DEPTH)
    except Damaged:
        return None
    return value if isinstance(value, dict) else None


def _is(part: object, kind: str) -> bool:
    return isinstance(part, dict) and part.get("type") == kind


def _text(content: object) -> str:
    """A message's text: a string, or its text parts joined (Gemini CLI's parts have no
    ``type``), without the context a hook added before the user's words."""
    if isinstance(content, list):
        content = "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict)
            and isinstance(p.get("text"), str)
            and p.get("type", "text") in TEXT_PARTS
        )
    return _own_words(content) if isinstance(content, str) else ""


def _own_words(text: str) -> str:
    """``text`` without the ``<hook_context>`` blocks Gemini CLI puts before a prompt (the
    pack and the wakes rouse's own hooks gave: rouse's words, never the user's)."""
    while text.lstrip().startswith(CONTEXT_OPEN):
        end = text.find(CONTEXT_CLOSE)
        if end < 0:
            return ""
        text = text[end + len(CONTEXT_CLOSE) :]
    return text.strip()


def stop(
    kind: str,
    memory: str | None,
    session: Mapping[str, Any],
    serving: Callable[[str, str | None, Mapping[str, Any]], object],
) -> int:
    """The hook itself: print the answer that continues the turn, or nothing; exit 0.

    ``serving`` is the hooks' rule for the tree they serve (None: this one gives
    way). Like every hook it never fails the session: a problem is one line on
    stderr (Claude Code shows it in its debug output) and the turn ends as it would.
    """
    try:
        if session.get("hook_event_name") != TURN_END_EVENTS.get(kind) or not wanted(
            session, os.environ
        ):
            return 0
        turn = read_turn(session.get("transcript_path"), session.get("prompt_id"))
        found = promise_of(session, turn)
        if found is None:
            return 0
        root = serving(kind, memory, session)
        if root is None or not ask(os.fspath(root), session, turn):  # type: ignore[call-overload]
            return 0
        text = reason(found)
    except Exception as exc:  # a Stop hook must never fail the session
        sys.stderr.write(f"rouse: no promise check at this turn's end: {exc!r}\n")
        return 0
    sys.stdout.write(output(kind, text))
    return 0


def promise_of(session: Mapping[str, Any], turn: Turn) -> promises.Promise | None:
    """The turn's promise (the final answer from the hook's input, else the transcript)."""
    answer = session.get("last_assistant_message", session.get("prompt_response"))
    answer = answer if isinstance(answer, str) else turn.answer
    if not turn.prompt and not answer:
        return None
    said = (("user", turn.prompt), ("tool", turn.tool), ("agent", answer))
    if not any(promises.likely(text, origin) for origin, text in said):
        return None
    return promises.find(turn.prompt, answer, turn.tool)


def ask(root: str, session: Mapping[str, Any], turn: Turn) -> bool:
    """Is this turn's promise to be asked about: nothing kept since its prompt, and not
    asked about before? (Without a known prompt time nothing can be told: no ask.) True
    once per prompt: the prompt asked about is noted beside the session's state."""
    started = turn.started
    if started is None or kept_since(root, started):
        return False
    from rouse.agents.prompt_hook import seen_file

    seen = seen_file(root, session.get("session_id"))
    if seen is None:
        return True  # no session to note it in: the client's stop_hook_active still holds
    path = seen.removesuffix(".json") + SUFFIX
    mark = f"{turn.mark}\n".encode()
    try:
        if read_bounded(path, 4096) == mark:
            return False
    except Damaged:
        pass
    return save_bytes(path, mark)


def kept_since(root: str, started: float) -> bool:
    """Did a rouse verb write or move a record since ``started``? A record file changed
    since then (a new reminder, intention or task; an edit), or an act noted after it."""
    from datetime import datetime
    from pathlib import Path

    from rouse.state import acts

    since = datetime.fromtimestamp(int(started))
    if any(at >= since for at in acts.load(Path(root)).values()):
        return True
    return _changed_since(root, started - 1)


def _changed_since(root: str, since: float, most: int = 50_000) -> bool:
    """A Markdown file of the tree (not ``.rouse/``, never through a link) changed since."""
    folders, seen = [root], 0
    while folders and seen < most:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif entry.name.endswith(".md"):
                try:
                    if entry.stat(follow_symlinks=False).st_mtime >= since:
                        return True
                except OSError:
                    continue
    return False


def reason(found: promises.Promise) -> str:
    """What the turn is continued with: what was said, and how to keep it."""
    from rouse.trust.fence import message_block

    said = found.said if len(found.said) <= QUOTE_MOST else found.said[: QUOTE_MOST - 1] + "…"
    lines = [f"{HEAD} ({WHO[found.origin]}):"]
    # a tool's result is quoted data; the user's and the agent's own words are plain
    spoken = "untrusted" if found.origin == "tool" else "agent"
    lines += message_block([said], 0, "", spoken, indent="  ")
    lines += [
        "Keep it before you stop: `rouse remind SLUG --due WHEN --body TEXT` (WHEN: mon 9am, "
        "tomorrow 17:00, in 2h), or `rouse new intention SLUG` / `rouse new task SLUG`; "
        "or say in one line why it needs no record. (rouse asks this once per turn.)",
    ]
    return "\n".join(lines)


def output(kind: str, text: str) -> str:
    """The answer that continues the turn with ``text``: Claude Code's Stop hook blocks
    the stop; Gemini CLI's AfterAgent hook denies the answer, sending ``text`` as a prompt."""
    import json

    decision = "deny" if kind == "gemini" else "block"  # (Codex reads Claude Code's shape)
    return json.dumps({"decision": decision, "reason": text}, ensure_ascii=False) + "\n"
