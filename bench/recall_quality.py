# ruff: noqa: E501  (the labelled set is data: one note or query a line)
"""Recall quality: words, meaning and both, on a labelled set we wrote ourselves.

Lays a tree of 60 team notes (and 240 unrelated records around them), then
asks 64 labelled queries, each with the notes that answer it:
  - exact:      queries that share words with their answer;
  - paraphrase: queries that share no word with their answer (checked here,
                by the index's own tokenizer and stemmer: not one of a
                paraphrase's words, stopwords aside, matches its answer).
For each mode it prints recall@5 (the share of queries with an answer in the
first five hits) and MRR (the mean of 1/rank of the first answer, 0 when none
is in the first ten). Then the costs: the index build of this tree and of the
SPEC §12 tree (bench/generate.py), a query's median wall time as a process
(`rouse recall`, model load included), and the install size the extra adds.

Exit 1 on a quality miss: the hybrid (both) must beat words on paraphrases
(recall@5 and MRR) and not lose on the exact queries. Without the extra it
measures words alone and says so (exit 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate
from rouse.core.tree import walk
from rouse.pack import semantic
from rouse.pack.index import Index
from rouse.pack.recall import recall
from rouse.pack.schema import TOKENIZER
from rouse.pack.search import STOPWORDS, query_words

NOW = datetime(2026, 3, 14, 12, 0)
NOTES = "inventory/notes"

#: slug → (keywords, body). Our own text, for this bench.
CORPUS: dict[str, tuple[str, str]] = {
    "pg-backup-restore": (
        "postgres, backup",
        "Recovering postgres after data loss: take the latest nightly dump from the backup bucket and pg_restore it onto a fresh instance, then replay the WAL archive up to the minute before the failure.",
    ),
    "tls-cert-renewal": (
        "tls, certificate",
        "The TLS certificate for the public site is issued by certbot; renewal runs from a systemd timer twice a day. If it fails, the site goes dark when the cert expires.",
    ),
    "nginx-logs": (
        "nginx, logs",
        "nginx writes access and error logs to /var/log/nginx; logrotate compresses them weekly and keeps eight weeks.",
    ),
    "ci-nightly": (
        "ci, nightly",
        "The nightly CI job runs the full test suite at 02:00 UTC and posts failures to the team channel.",
    ),
    "flaky-retry-test": (
        "flaky, tests",
        "test_retry_backoff is flaky: it depends on wall-clock sleeps and fails under load. Quarantine it until it uses a fake clock.",
    ),
    "deploy-staging": (
        "deploy, staging",
        "Deploys go to staging first; after a smoke test, promote the same build to production with the release script.",
    ),
    "rollback": (
        "rollback",
        "To undo a bad release, redeploy the previous tagged build. Database migrations must be reversible for this to succeed.",
    ),
    "oncall-rota": (
        "on-call, rota",
        "The on-call rota changes every Monday at 10:00; swaps are arranged in the rota spreadsheet and announced in the ops channel.",
    ),
    "pager-escalation": (
        "pager, escalation",
        "If the primary does not acknowledge a page within 15 minutes, it escalates to the secondary, then to the engineering manager.",
    ),
    "dns-records": (
        "dns",
        "Our DNS zone is hosted at the registrar; TTLs are 300 seconds for the app records so a failover propagates within five minutes.",
    ),
    "redis-eviction": (
        "redis, cache",
        "Redis runs with allkeys-lru eviction and a 4 GB maxmemory; session keys expire after 24 hours.",
    ),
    "bucket-lifecycle": (
        "s3, storage",
        "Object storage buckets move files older than 90 days to the cold tier and delete them after two years.",
    ),
    "cloud-budget": (
        "cost, budget",
        "The cloud bill is capped at 12k a month; an alert fires at 80% of the budget.",
    ),
    "gpu-quota": (
        "gpu, quota",
        "Training jobs may use at most four GPUs each; request more through the platform team's form.",
    ),
    "python-version": (
        "python, image",
        "Services run on Python 3.11; the base image is rebuilt every Sunday with security patches.",
    ),
    "dependency-updates": (
        "renovate, dependencies",
        "Renovate opens pull requests for dependency bumps every Tuesday; merge patch releases after CI passes, review minor ones.",
    ),
    "code-review": (
        "review",
        "Every change needs one approving review; changes to billing code need two.",
    ),
    "branch-naming": (
        "git, branches",
        "Feature branches are named after the ticket, like PLAT-123-short-title.",
    ),
    "secrets-vault": (
        "vault, secrets",
        "Secrets live in Vault under kv/apps/<service>; never commit them, and rotate a leaked one within the hour.",
    ),
    "ssh-access": (
        "ssh, bastion",
        "Production servers accept SSH only through the bastion host with a hardware key; personal keys are rejected.",
    ),
    "laptop-setup": (
        "laptop, setup",
        "New laptops get the dotfiles repo, the VPN client and the password manager on day one.",
    ),
    "vpn": (
        "vpn, wireguard",
        "The VPN is WireGuard; the config is issued per person by the IT desk and revoked when someone leaves.",
    ),
    "incident-postmortem": (
        "incident, postmortem",
        "After an outage, write a blameless postmortem within five working days: timeline, causes, what we change.",
    ),
    "status-page": (
        "status, incident",
        "Customer-facing incidents get a status page entry within 30 minutes, updated every hour until resolved.",
    ),
    "kafka-consumer-lag": (
        "kafka, lag",
        "Consumer lag on the orders topic above 10k messages means the billing worker is stuck; restart it and check the dead-letter queue.",
    ),
    "k8s-upgrade": (
        "kubernetes, upgrade",
        "The Kubernetes control plane is upgraded one minor version at a time, in staging first, during the Thursday window.",
    ),
    "node-drain": (
        "kubernetes, nodes",
        "Before rebooting a worker node, cordon and drain it so pods move to other nodes.",
    ),
    "disk-full": (
        "disk, database",
        "When the root disk of a database host passes 90%, clear old WAL segments and extend the volume; never delete data files by hand.",
    ),
    "dashboards": (
        "grafana, dashboards",
        "Grafana dashboards for each service live in the dashboards repo; edit them there, not in the UI.",
    ),
    "alert-noise": (
        "alerts",
        "Alerts that fire more than five times a week without action are deleted or turned into tickets.",
    ),
    "load-testing": (
        "load, k6",
        "Load tests run with k6 against the perf environment, never production; a run takes about 20 minutes.",
    ),
    "feature-flags": (
        "flags",
        "New features ship behind a flag in the flags service; remove the flag within a month of full rollout.",
    ),
    "api-rate-limit": (
        "api, limits",
        "The public API allows 100 requests per minute per token; exceeding it returns HTTP 429.",
    ),
    "data-export": (
        "export, support",
        "Customers can request an export of their data; the support team runs the export script and sends a signed link that expires in 7 days.",
    ),
    "gdpr-deletion": (
        "gdpr, deletion",
        "A deletion request must be carried out within 30 days, including backups at their next rotation.",
    ),
    "release-notes": (
        "release, notes",
        "Release notes are written from merged pull request titles and edited by the product owner before publishing.",
    ),
    "versioning": (
        "semver",
        "Libraries follow semantic versioning; a breaking change bumps the major number.",
    ),
    "docs-site": (
        "docs, mkdocs",
        "The documentation site is built with mkdocs from the docs folder and published on every merge to main.",
    ),
    "standup": (
        "standup, meetings",
        "Standup is at 09:30, fifteen minutes, async in the thread on Fridays.",
    ),
    "hiring-interviews": (
        "hiring, interviews",
        "Interview loops have four stages: screen, take-home, pairing session, values chat.",
    ),
    "expense-policy": (
        "expenses, travel",
        "Conference travel needs approval from your manager two weeks ahead; book economy.",
    ),
    "vacation": (
        "holidays, leave",
        "Holidays are requested in the HR tool at least two weeks in advance; tell the on-call coordinator.",
    ),
    "office-wifi": (
        "wifi, office",
        "The office guest network password changes monthly and is posted at reception.",
    ),
    "printer": (
        "printer, office",
        "The third-floor printer jams with thick paper; use the second-floor one for envelopes.",
    ),
    "coffee-machine": (
        "kitchen, espresso",
        "The espresso machine is descaled every other Friday by whoever is on the kitchen list.",
    ),
    "db-migrations": (
        "alembic, migrations",
        "Schema migrations run with alembic at deploy time; a migration that locks a big table must be split into batches.",
    ),
    "connection-pool": (
        "pgbouncer, postgres",
        "pgbouncer in transaction mode sits in front of postgres; prepared statements do not survive it.",
    ),
    "search-index": (
        "elasticsearch, search",
        "The product search uses Elasticsearch; a full reindex takes three hours and runs from the admin job.",
    ),
    "email-delivery": (
        "email, bounces",
        "Transactional email goes through the mail provider's API; bounces are webhooked back and mark the address invalid.",
    ),
    "sso-login": (
        "sso, identity",
        "Staff sign in with SSO through the identity provider; a locked account is reset by IT, not by the team.",
    ),
    "mobile-release": (
        "mobile, stores",
        "The mobile app is submitted to the stores on Wednesdays; review takes one to three days.",
    ),
    "crash-reports": (
        "sentry, crashes",
        "Crash reports from the apps land in Sentry; a new issue with more than 50 users pages the mobile on-call.",
    ),
    "analytics-events": (
        "analytics, tracking",
        "Product analytics events are defined in the tracking plan; an event not in the plan is dropped at ingestion.",
    ),
    "data-warehouse": (
        "warehouse",
        "The warehouse loads from the production replica every night; dashboards there are a day behind.",
    ),
    "model-retrain": (
        "ml, recommendations",
        "The recommendation model is retrained weekly on the last 90 days of clicks and shadow-tested before it serves.",
    ),
    "time-zones": (
        "utc, timestamps",
        "Store timestamps in UTC; convert to the user's zone only when displaying them.",
    ),
    "logging-format": (
        "logging, json",
        "Services log JSON lines with a request id so a request can be traced across services.",
    ),
    "tracing": (
        "tracing, opentelemetry",
        "Distributed tracing uses OpenTelemetry; sample 10% of requests, all of the failed ones.",
    ),
    "firewall-rules": (
        "firewall, security",
        "Inbound traffic is allowed only on 443 at the load balancer; everything else is closed by the security group.",
    ),
    "backup-testing": (
        "backup, drills",
        "Once a quarter, someone restores last night's backup into a scratch environment to prove the backups work.",
    ),
}

EXACT: list[tuple[str, list[str]]] = [
    ("pg_restore nightly dump", ["pg-backup-restore"]),
    ("certbot renewal timer", ["tls-cert-renewal"]),
    ("nginx logrotate", ["nginx-logs"]),
    ("test_retry_backoff flaky", ["flaky-retry-test"]),
    ("on-call rota swaps", ["oncall-rota"]),
    ("redis eviction maxmemory", ["redis-eviction"]),
    ("kafka consumer lag orders", ["kafka-consumer-lag"]),
    ("cordon drain node", ["node-drain"]),
    ("k6 load tests", ["load-testing"]),
    ("HTTP 429 rate limit", ["api-rate-limit"]),
    ("alembic migration batches", ["db-migrations"]),
    ("pgbouncer prepared statements", ["connection-pool"]),
    ("Elasticsearch reindex", ["search-index"]),
    ("Sentry crash reports", ["crash-reports"]),
    ("OpenTelemetry sampling", ["tracing"]),
    ("WireGuard VPN config", ["vpn"]),
    ("Vault secrets rotate", ["secrets-vault"]),
    ("bastion hardware key", ["ssh-access"]),
    ("status page entry", ["status-page"]),
    ("blameless postmortem", ["incident-postmortem"]),
    ("mkdocs documentation site", ["docs-site"]),
    ("semantic versioning breaking change", ["versioning"]),
    ("espresso descaled", ["coffee-machine"]),
    ("GPU quota training jobs", ["gpu-quota"]),
    ("Renovate dependency bumps", ["dependency-updates"]),
    ("feature flag rollout", ["feature-flags"]),
]

PARAPHRASE: list[tuple[str, list[str]]] = [
    ("bring back lost records from yesterday's copy", ["pg-backup-restore"]),
    ("keep the browser padlock valid", ["tls-cert-renewal"]),
    ("where do web server request records go", ["nginx-logs"]),
    ("unreliable check that passes on rerun", ["flaky-retry-test"]),
    ("who answers alarms this week", ["oncall-rota", "pager-escalation"]),
    ("nobody picked up the phone alert, what next", ["pager-escalation"]),
    ("in-memory store throws away old entries", ["redis-eviction"]),
    ("monthly spending ceiling for hosting", ["cloud-budget"]),
    ("return to the last good version after a broken launch", ["rollback"]),
    ("log in to live machines from outside", ["ssh-access"]),
    ("where are passwords and tokens kept", ["secrets-vault"]),
    ("lessons learned once the site was down", ["incident-postmortem"]),
    ("telling clients about an ongoing problem", ["status-page"]),
    ("the event stream is falling behind", ["kafka-consumer-lag"]),
    ("moving the container orchestrator to a newer release", ["k8s-upgrade"]),
    ("the db box is running out of space", ["disk-full"]),
    ("too many pointless notifications", ["alert-noise"]),
    ("trying how much traffic the system survives", ["load-testing"]),
    ("turn unfinished functionality on and off with a switch", ["feature-flags"]),
    ("throttling clients who call too often", ["api-rate-limit"]),
    ("right to be forgotten", ["gdpr-deletion"]),
    ("evolving database structure while shipping", ["db-migrations"]),
    ("rebuilding the catalogue lookup from scratch", ["search-index"]),
    ("messages to users that never arrived", ["email-delivery"]),
    ("forgot how to get into company tools", ["sso-login"]),
    ("when do phone builds go out to users", ["mobile-release"]),
    ("the phone application keeps dying for lots of people", ["crash-reports"]),
    ("why are business charts stale until tomorrow", ["data-warehouse"]),
    ("which clock should saved moments use", ["time-zones"]),
    ("follow a single call through every microservice", ["tracing", "logging-format"]),
    ("which ports are open to the internet", ["firewall-rules"]),
    ("are our safety copies actually usable", ["backup-testing"]),
    ("asking for time off", ["vacation"]),
    ("getting reimbursed for a work trip", ["expense-policy"]),
    ("how to get online as a visitor", ["office-wifi"]),
    ("the copier keeps swallowing sheets", ["printer"]),
    ("first-week computer preparation for a joiner", ["laptop-setup"]),
    ("steps for assessing applicants", ["hiring-interviews"]),
]

#: Unrelated records around the notes, so that ranking has something to pass over.
FILLER_VERBS = ("tidy", "rename", "measure", "split", "document", "retire", "simplify", "port")
FILLER_THINGS = (
    "invoice renderer",
    "colour palette",
    "onboarding quiz",
    "sitemap generator",
    "font loader",
    "survey widget",
    "footer links",
    "glossary page",
    "icon set",
    "keyboard shortcuts",
    "newsletter template",
    "pricing table",
    "tooltip copy",
    "image cropper",
    "calendar view",
    "export button",
    "avatar upload",
    "markdown preview",
    "error illustrations",
    "empty states",
    "breadcrumb trail",
    "sorting menu",
    "print stylesheet",
    "changelog page",
    "accessibility audit",
    "welcome banner",
    "search box placeholder",
    "language picker",
    "dark theme",
    "session timer",
)


def lay_tree(root: Path) -> None:
    for slug, (keywords, body) in CORPUS.items():
        path = root / NOTES / f"{slug}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nkeywords: {keywords}\n---\n{body}\n", encoding="utf-8")
    intentions = root / "entrypoint/beliefs/motivations/intentions"
    for i, thing in enumerate(FILLER_THINGS):
        for j, verb in enumerate(FILLER_VERBS):
            slug = f"{verb}-{thing.replace(' ', '-')}"
            path = intentions / slug / "intention.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            text = f"{verb.capitalize()} the {thing}: it has grown since spring ({i}.{j})."
            path.write_text(
                f"---\nstatus: open\ncloses-when: the {thing} is done\n---\n{text}\n",
                encoding="utf-8",
            )
    (root / "entrypoint" / "rouse.md").write_text("bench tree\n", encoding="utf-8")
    past = time.time() - 60  # out of the index's "written just now" window
    for path in root.rglob("*.md"):
        os.utime(path, (past, past))


def check_paraphrases() -> list[str]:
    """Paraphrases that do share a word with an answer (by the index's own stemmer)."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(slug UNINDEXED, text, tokenize='{TOKENIZER}')")
    for slug, (keywords, body) in CORPUS.items():
        conn.execute("INSERT INTO t VALUES (?, ?)", (slug, f"{keywords} {NOTES} {slug} {body}"))
    problems = []
    for query, answers in PARAPHRASE:
        for word in query_words(query):
            if word in STOPWORDS:
                continue
            found = {
                r[0] for r in conn.execute("SELECT slug FROM t WHERE t MATCH ?", (f'"{word}"',))
            }
            if found & set(answers):
                problems.append(f"{query!r}: {word!r} is in {sorted(found & set(answers))}")
    return problems


def score(root: Path, mode: str, queries: list[tuple[str, list[str]]]) -> tuple[float, float]:
    found_at_5 = 0
    reciprocal = 0.0
    for query, answers in queries:
        wanted = {f"{NOTES}/{a}.md" for a in answers}
        hits = [h.path for h in recall(root, query, NOW, limit=10, mode=mode, run_probes=False)]
        ranks = [i for i, path in enumerate(hits, start=1) if path in wanted]
        found_at_5 += bool(ranks and ranks[0] <= 5)
        reciprocal += 1 / ranks[0] if ranks else 0.0
    return found_at_5 / len(queries), reciprocal / len(queries)


def build_time(root: Path, model: semantic.Model | None) -> float:
    for state in (root / ".rouse").glob("index.sqlite3*"):
        state.unlink()
    tree = walk(root)
    started = time.perf_counter()
    with Index(root, model=model) as index:
        index.refresh(tree)
    return time.perf_counter() - started


def query_time(root: Path, mode: str, runs: int) -> float:
    command = [
        sys.executable,
        "-m",
        "rouse",
        "--memory",
        str(root),
        "recall",
        "restore the database",
    ]
    env = {**os.environ, "ROUSE_PROBES": "off", "ROUSE_STAMP_KEY": str(root / "no-key")}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([*command, "--mode", mode], env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def install_size() -> tuple[int, list[str]]:
    """Bytes on disk of the extra's distribution and everything it pulls in."""
    seen: set[str] = set()
    todo = [semantic.DISTRIBUTION]
    total = 0
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
        for requirement in dist.requires or []:
            if "extra ==" in requirement:
                continue
            bare = requirement.split(";")[0].strip()
            for stop in "<>=!~[ (":
                bare = bare.split(stop)[0]
            todo.append(bare)
    return total, sorted(seen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="query timings per mode (median)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    args = parser.parse_args()
    problems = check_paraphrases()
    if problems:
        print(
            "the labelled set is wrong: a paraphrase shares a word with its answer", file=sys.stderr
        )
        print("\n".join(problems), file=sys.stderr)
        return 2
    extra = semantic.available()
    modes = ["words", "meaning", "both"] if extra else ["words"]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="rouse-quality-") as tmp:
        root = Path(tmp) / "memory"
        lay_tree(root)
        print(
            f"{len(CORPUS)} notes, {len(list(root.rglob('*.md')))} files; "
            f"{len(EXACT)} exact and {len(PARAPHRASE)} paraphrase queries"
        )
        print(
            f"{'mode':8} {'exact R@5':>10} {'exact MRR':>10} {'para R@5':>10} {'para MRR':>10} "
            f"{'all R@5':>9} {'all MRR':>9}"
        )
        for mode in modes:
            er, em = score(root, mode, EXACT)
            pr, pm = score(root, mode, PARAPHRASE)
            ar, am = score(root, mode, EXACT + PARAPHRASE)
            results[mode] = {
                "exact_r5": er,
                "exact_mrr": em,
                "para_r5": pr,
                "para_mrr": pm,
                "all_r5": ar,
                "all_mrr": am,
            }
            print(f"{mode:8} {er:10.2f} {em:10.2f} {pr:10.2f} {pm:10.2f} {ar:9.2f} {am:9.2f}")
        model = semantic.load() if extra else None
        costs: dict[str, float] = {
            "build_words_s": build_time(root, None),
        }
        if model is not None:
            costs["build_both_s"] = build_time(root, model)
        for mode in modes:
            costs[f"query_{mode}_s"] = query_time(root, mode, args.runs)
    with tempfile.TemporaryDirectory(prefix="rouse-quality-12-") as tmp:
        big = Path(tmp) / "memory"
        files = generate(big)
        past = time.time() - 60
        for path in big.rglob("*.md"):
            os.utime(path, (past, past))
        costs["spec12_files"] = files
        costs["spec12_build_words_s"] = build_time(big, None)
        if model is not None:
            costs["spec12_build_both_s"] = build_time(big, model)
            costs["spec12_query_both_s"] = query_time(big, "both", args.runs)
        costs["spec12_query_words_s"] = query_time(big, "words", args.runs)
    print()
    for name, value in costs.items():
        print(f"{name:24} {value:.3f}" if isinstance(value, float) else f"{name:24} {value}")
    if extra:
        size, names = install_size()
        print(f"{'install_size_mb':24} {size / 1e6:.1f}  ({', '.join(names)})")
        costs["install_size_mb"] = size / 1e6
    else:
        print("the semantic extra is not installed: words alone measured")
    if args.json:
        print(json.dumps({"quality": results, "costs": costs}, indent=2))
    if not extra:
        return 0
    both, words = results["both"], results["words"]
    misses = []
    if not (both["para_r5"] > words["para_r5"] and both["para_mrr"] > words["para_mrr"]):
        misses.append("both does not beat words on the paraphrases")
    if both["exact_r5"] < words["exact_r5"] or both["exact_mrr"] < words["exact_mrr"]:
        misses.append("both loses to words on the exact queries")
    for miss in misses:
        print(f"quality miss: {miss}", file=sys.stderr)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
