"""Tasks that run: ``rouse work`` (the worker), ``rouse cancel``, ``rouse checkpoint``."""

from __future__ import annotations

import os
import sys

from rouse.cli.common import emit, emit_json, resolve_now, tree_root
from rouse.core.errors import UsageError
from rouse.core.home import stamp_key_path
from rouse.core.layout import shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from rouse.work.queue import Report
    from rouse.work.worker import Options


def work_options(args: argparse.Namespace, root: Path) -> Options:
    """What `rouse work` was asked: the agent and its command, the sink, the limits."""
    from rouse.cli import sweep_options
    from rouse.sweep import sinks
    from rouse.sweep.quiet import QuietHours
    from rouse.sweep.runner import Budget, parse_timeout
    from rouse.work.worker import DEFAULT_TIMEOUT, Options

    if not 1 <= args.jobs <= 64:
        raise UsageError(f"--jobs must be between 1 and 64, got {args.jobs}")
    kind = args.run or "exec"
    specs = {"--run": [kind], "--sink": args.sink}
    quoted = {"--run": args.run_cmd, "--sink": args.sink_cmd}
    commands = sweep_options.commands(specs, quoted, args.command)
    if kind == "exec" and not commands["--run"]:
        raise UsageError("rouse work needs an agent: --run claude|codex, or --run exec -- CMD ARG…")
    sink = None
    if args.sink:
        sink = sinks.make_sink(
            args.sink,
            commands["--sink"],
            root=root,
            timeout=None,
            secret=os.environ.get("ROUSE_WEBHOOK_SECRET"),
            base_env=os.environ,
        )
    return Options(
        kind=kind,
        extra=commands["--run"],
        jobs=args.jobs,
        timeout=parse_timeout(args.task_timeout) if args.task_timeout else DEFAULT_TIMEOUT,
        budget=Budget.parse(args.max_runs) if args.max_runs else None,
        sink=sink,
        quiet=QuietHours.parse(args.quiet) if args.quiet else None,
        allow_untrusted=args.allow_untrusted,
        once=args.once,
    )


def cmd_work(args: argparse.Namespace) -> int:
    from rouse.trust.origins import origin_reader
    from rouse.work.worker import TaskWorker

    root = tree_root(args)
    options = work_options(args, root)

    def say(line: str) -> None:  # (with --json, stdout is the JSON object's alone)
        if not args.quiet_output:
            print(shown(line, lines=True), flush=True, file=sys.stderr if args.json else sys.stdout)

    worker = TaskWorker(
        root,
        options,
        origin_reader(root, stamp_key_path()),
        now=lambda: resolve_now(args),
        say=say,
        env=os.environ,
    )
    report = worker.run()
    _report_round(report, args)
    # --once, as cron runs it: 1 when a task of the round failed or its run was lost
    return 1 if args.once and report.failures else 0


def _report_round(report: Report, args: argparse.Namespace) -> None:
    """What the worker did: one JSON object with --json, one line after --once."""
    if args.json:
        emit_json(
            {
                "started": report.started,
                "ended": report.ended,
                "held": report.held,
                "recovered": report.recovered,
                "lost": report.lost,
                "failed": report.failures,
            }
        )
    elif args.once and not args.quiet_output:
        ended = list(report.ended.values())
        print(
            f"work: {len(report.started)} run(s) started, "
            f"{ended.count('done')} done, {ended.count('failed')} failed, "
            f"{ended.count('cancelled')} cancelled, {len(report.held)} held"
            + (f", {len(report.lost)} lost" if report.lost else ""),
            file=sys.stdout,
        )


def cmd_cancel(args: argparse.Namespace) -> int:
    from rouse.cli.common import report_changed
    from rouse.records import tasks

    return report_changed(tasks.cancel(tree_root(args), args.ref, resolve_now(args)), args)


def cmd_checkpoint(args: argparse.Namespace) -> int:
    from rouse.work import notices

    made = notices.checkpoint(tree_root(args), args.ref, args.text, resolve_now(args))
    if args.json:
        emit_json({"record": made.record, "path": made.path, "text": made.text, "wake": made.wake})
    else:
        emit([made.summary])
    return 0


def args_work(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--once",
        action="store_true",
        help="run the pending tasks found now, then exit: 0 if none failed, 1 if a task "
        "failed or its run was lost, 2 for bad options",
    )
    sub.add_argument("--jobs", type=int, default=1, metavar="N", help="runs at once (default 1)")
    sub.add_argument(
        "--run",
        choices=("claude", "codex", "exec"),
        help="the agent each task runs in (exec: the command after --)",
    )
    sub.add_argument("--run-cmd", metavar="'CMD ARG'", help="--run's command as one quoted string")
    sub.add_argument(
        "--task-timeout", metavar="D", help="kill a run's process group after D (default 1h)"
    )
    sub.add_argument("--max-runs", metavar="N/day", help="run budget: N/day or N/hour")
    sub.add_argument(
        "--sink",
        nargs="+",
        metavar="KIND",
        help="deliver checkpoints at once: file, stdout, webhook URL, exec (see --sink-cmd)",
    )
    sub.add_argument("--sink-cmd", metavar="'CMD ARG'", help="the exec sink's command, quoted")
    sub.add_argument("--quiet", metavar="HH:MM-HH:MM", help="start no task in this window")
    sub.add_argument(
        "--allow-untrusted",
        action="store_true",
        help="with a stamp key, run tasks that do not verify too (their text fenced as data)",
    )
    sub.add_argument("-q", "--quiet-output", action="store_true", help="say nothing but errors")
    sub.add_argument("--json", action="store_true", help="print what it did as one JSON object")
    sub.add_argument("command", nargs="*", metavar="-- CMD ARG", help="--run exec's command")


def args_cancel(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="the task: a slug or tree-relative path")
    sub.add_argument("--json", action="store_true", help="print one JSON object")


def args_checkpoint(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="the task: a slug or tree-relative path")
    sub.add_argument("text", metavar="TEXT", help="what the run did (one line, up to 500 chars)")
    sub.add_argument("--json", action="store_true", help="print one JSON object")
