"""Agent runs: one run per digest, once, within budget (``rouse sweep --run``).

The runner starts the agent CLI (a preset from :mod:`rouse.runs.presets`,
or any command) through the run supervisor (:mod:`rouse.runs.supervisor`),
in the tree's project directory — the tree's parent — with a prompt on stdin
that carries the digest and says how to answer. Guarantees:

- one run at a time per tree: ``.rouse/run.lock`` (flock) is held for the
  run's life by its supervising process, which outlives a killed sweeper; a
  tick that finds it taken leaves its wakes waiting (held);
- a budget (``--max-runs N/day`` or ``N/hour``): over it the wakes wait
  (held, never given up) and ``.rouse/runs/budget.json`` says until when;
- a deadline (``--run-timeout``, default 15m) that kills the run's whole
  process group, kept by the supervisor too;
- the run's exit code, duration and last 64 KiB of output are kept in
  ``.rouse/runs/<id>.log`` and its row in the ledger's ``runs`` table;
- under a given clock (``sweep --now X``, or ``ROUSE_NOW``) the run gets the
  tick's instant as ``ROUSE_NOW``, so its own ``rouse`` commands evaluate the
  clock where the tick did (under the wall clock it gets none).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core.errors import UsageError
from rouse.core.statedir import state_path
from rouse.core.timefmt import format_interval, parse_interval
from rouse.runs.handle import Ended, claim, resolve
from rouse.state.files import save_json
from rouse.state.sweeper import BUDGET_FILE, RUN_LOCK, TIME_FORMAT
from rouse.sweep.ledger import Ledger
from rouse.sweep.sinks import SinkError, child_environment
from rouse.sweep.wake import Digest, Wake, render_digest

DEFAULT_TIMEOUT = timedelta(minutes=15)
#: The most characters of wakes one run's prompt carries (the rest are named and counted).
PROMPT_CHARS = 200_000
LONGEST_TIMEOUT = timedelta(days=1)
_PERIODS = {"day": timedelta(days=1), "hour": timedelta(hours=1)}


class RunWaits(SinkError):
    """No run now (the budget is spent, or a run is live): the wakes wait, held."""


@dataclass(frozen=True)
class Budget:
    """At most ``count`` runs per ``period`` (a rolling window)."""

    count: int
    period: timedelta
    text: str

    @classmethod
    def parse(cls, text: str) -> Budget:
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(day|hour)\s*", text)
        if match and 1 <= int(match.group(1)) <= 10000:
            return cls(int(match.group(1)), _PERIODS[match.group(2)], text.strip())
        raise UsageError(f"bad --max-runs {text!r}: want N/day or N/hour, e.g. 6/day")


def parse_timeout(text: str) -> timedelta:
    """``--run-timeout``: a duration (``90s``, ``15m``, ``1h``), above 0, at most a day."""
    try:
        value = parse_interval(text)
    except ValueError:
        value = timedelta(0)
    if not timedelta(0) < value <= LONGEST_TIMEOUT:
        raise UsageError(
            f"bad --run-timeout {text!r}: want a duration above 0 and at most a day "
            "(e.g. 90s, 15m, 1h)"
        )
    return value


@dataclass
class RunResult:
    id: str
    code: int | None  # None: killed at the deadline
    seconds: float
    log: str  # tree-relative

    def describe(self) -> str:
        ended = "killed at the deadline" if self.code is None else f"exit {self.code}"
        return f"run {self.id}: {ended} after {self.seconds:.1f}s (log {self.log})"


def prompt(root: Path, made: Digest) -> str:
    """What the agent reads: why it was started, how to answer, then the digest."""
    memory = str(root)
    return (
        f"rouse woke you: {len(made.wakes)} record(s) in the memory at {memory} came due "
        "and nobody has acted on them. Each wake below says what it is about and asks a "
        "question.\n\n"
        "For each one, act on it, then answer in the memory:\n"
        f"- it moved: rouse --memory {memory} move <at: path> --note 'what you did'\n"
        f"- it is over: rouse --memory {memory} close <at: path> --done "
        "(or --dropped 'why', --abandoned 'why')\n"
        "- you cannot act: leave the record as it is and say why in your final message; "
        "the owner will hear about it.\n"
        "A reminder that speaks to a person (and anything the owner must hear) reaches them "
        f"only through: rouse --memory {memory} tell <at: path> 'the message' — then close "
        "or move the record as usual.\n"
        "Only a record you move or close counts as answered. Do not edit .rouse/.\n\n"
        f"{render_digest(made.id, list(made.wakes), made.made_at, PROMPT_CHARS)}"
    )


class Runner:
    """Starts one agent run per digest for the tree at ``root``.

    It stands where the sink stands (``kind`` ``run``; quiet hours hold it), but
    the tick hands it whole digests through :meth:`run`, never single wakes.
    """

    kind = "run"
    holdable = True

    def __init__(
        self,
        root: Path,
        argv: Sequence[str],
        *,
        timeout: timedelta = DEFAULT_TIMEOUT,
        budget: Budget | None = None,
        base_env: Mapping[str, str] | None = None,
        hand_now: bool = False,
    ):
        if not argv:
            raise UsageError("--run exec needs a command after --: --run exec -- CMD ARG…")
        self.root = root
        self.argv = list(argv)
        self.timeout = timeout
        self.budget = budget
        self.base_env = child_environment(base_env if base_env is not None else os.environ)
        #: the sweep's clock was given (--now, ROUSE_NOW): the run gets the tick's instant
        self.hand_now = hand_now

    def describe(self) -> str:
        budget = f", at most {self.budget.text}" if self.budget else ""
        return (
            f"run {' '.join(self.argv)} in {self.root.parent} "
            f"(timeout {format_interval(self.timeout)}{budget})"
        )

    def send(self, made: Wake, now: datetime) -> str:
        raise SinkError("an agent run takes a digest, not a single wake")

    # -- the guarantees -----------------------------------------------------

    def check_budget(self, ledger: Ledger, now: datetime) -> None:
        """Raise RunWaits when the budget is spent, and say until when in budget.json."""
        if self.budget is None:
            return
        path = state_path(self.root, BUDGET_FILE)
        started = ledger.runs_since(now - self.budget.period)
        if len(started) < self.budget.count:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        until = started[-self.budget.count] + self.budget.period
        save_json(
            path,
            {
                "budget": self.budget.text,
                "until": until.strftime(TIME_FORMAT),
                "runs": len(started),
            },
        )
        raise RunWaits(
            f"the run budget ({self.budget.text}) is spent: the wakes wait until "
            f"{until:%Y-%m-%d %H:%M}"
        )

    # -- one run ------------------------------------------------------------

    def run(self, made: Digest, now: datetime, ledger: Ledger) -> RunResult:
        """Start the run for ``made`` and wait for it (or its deadline).

        RunWaits: no run now, the wakes wait. SinkError: it did not finish
        (exit ≠ 0, killed at the deadline, or could not start): retried.
        """
        self.check_budget(ledger, now)
        run_id = "r" + made.id[1:] if made.id.startswith("d") else "r" + made.id
        log_rel = f"runs/{run_id}.log"
        env = self.environment(made, run_id, now)
        spec = {
            "argv": resolve(self.argv, env),
            "cwd": str(self.root.parent),
            "env": env,
            "prompt": prompt(self.root, made),
            "timeout": self.timeout.total_seconds(),
            "locks": [str(state_path(self.root, RUN_LOCK))],
            "log": str(state_path(self.root, log_rel)),
            "log_head": (
                f"run: {run_id}\n"
                f"started: {now:%Y-%m-%d %H:%M:%S}\n"
                f"command: {' '.join(self.argv)}\n"
                f"directory: {self.root.parent}\n"
                f"digest: {made.id}\n"
                f"wakes: {' '.join(made.wake_ids)}\n"
            ),
        }
        held = claim(spec)
        if isinstance(held, str):
            raise RunWaits("a run is still live on this tree: the wakes wait")
        try:
            ledger.start_run(run_id, made.id, made.wake_ids, " ".join(self.argv), now)
            held.go()
            ended: Ended = held.wait()
            code = ended.code
            result = RunResult(run_id, code, ended.seconds, f".rouse/{log_rel}")
            ledger.end_run(run_id, "ran" if ended.ok else "failed", code, ended.seconds)
        finally:
            held.release()
        if not ended.ok:
            raise SinkError(result.describe() + ended.tail)
        return result

    def environment(self, made: Digest, run_id: str, now: datetime) -> dict[str, str]:
        """What the run inherits: the sweeper's environment, the tree, the run and its
        wakes, and (``hand_now``) the tick's instant as ``ROUSE_NOW``."""
        env = {
            **self.base_env,
            "ROUSE_MEMORY": str(self.root),
            "ROUSE_RUN_ID": run_id,
            "ROUSE_WAKE_ID": made.id,
            "ROUSE_WAKE_IDS": " ".join(made.wake_ids),
        }
        if self.hand_now:
            env["ROUSE_NOW"] = now.strftime(TIME_FORMAT if now.second else "%Y-%m-%d %H:%M")
        else:
            env.pop("ROUSE_NOW", None)
        return env
