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

Then hit@1, recall@5 and MRR per set, the two session-style sets among them
(questions asked as in a session, sharing most but not all of their words
with the answer; and long notes of about 10,000 characters).

Exit 1 on a quality miss: the hybrid (both) must beat words on paraphrases
(recall@5 and MRR), not lose on the exact queries, and not lose to words on
hit@1 or MRR on any set. Without the extra it
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
from rouse.pack.indexdoc import TOKENIZER
from rouse.pack.recall import recall
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
#: Session-style questions (issue 32): asked the way a person asks in a session, they
#: share most of their words with their answer — but not all, so notes near in meaning
#: compete with them.
SESSION: list[tuple[str, list[str]]] = [
    ("how often does the on-call rota change and where are swaps arranged", ["oncall-rota"]),
    ("what happens when the primary does not acknowledge a page", ["pager-escalation"]),
    ("what is the ttl of the app records in our dns zone", ["dns-records"]),
    ("which eviction policy does redis use and how big is maxmemory", ["redis-eviction"]),
    ("when do storage buckets move old files to the cold tier", ["bucket-lifecycle"]),
    ("how many gpus may one training job use", ["gpu-quota"]),
    ("which python version do our services run on", ["python-version"]),
    ("how many approving reviews does a change to billing code need", ["code-review"]),
    ("where do secrets live in vault and what do we do when one leaks", ["secrets-vault"]),
    ("how do i get onto production servers over ssh", ["ssh-access"]),
    ("how long do we have to write the postmortem after an outage", ["incident-postmortem"]),
    ("what does consumer lag on the orders topic mean", ["kafka-consumer-lag"]),
    ("what should i do when the root disk of a database host fills up", ["disk-full"]),
    ("how many requests per minute does the public api allow", ["api-rate-limit"]),
    ("how long does a full reindex of the product search take", ["search-index"]),
    ("what happens to bounces from the mail provider", ["email-delivery"]),
    ("when does a new crash report in sentry page someone", ["crash-reports"]),
    ("how many requests do we sample for distributed tracing", ["tracing"]),
]

#: Long notes, as a session's notes run (~10,000 characters): the talk of a working day,
#: with one fact each that a later question asks about.
SESSION_TALK = (
    "We went through the open pull requests and agreed to merge the small ones first.",
    "Someone asked whether the staging environment was healthy; it was, after a restart.",
    "The team talked about the roadmap for next quarter and who owns which part of it.",
    "A customer question about invoices was answered and the ticket was closed.",
    "We looked at the error rate on the dashboard; it stayed flat all afternoon.",
    "The meeting ran long, so the design review moved to tomorrow morning.",
    "A new teammate joined the call and we walked through how the services fit together.",
    "We noted that the documentation for the deploy tool is out of date again.",
    "Lunch was late; the discussion about naming went on without a decision.",
    "The build was green on the main branch and nobody had anything blocking.",
    "We agreed to write down decisions in the notes instead of the chat.",
    "A question came up about test coverage and we left it for the retro.",
)
SESSION_FACTS = {
    "session-monday": "The shared fixtures server was moved to the rack in hall B.",
    "session-tuesday": "The vendor contract for the log archive ends on the last day of June.",
    "session-wednesday": "The payroll export now runs at 06:00 instead of midnight.",
    "session-thursday": "The staging database password was rotated and is in the team vault.",
    "session-friday": "The old reporting cluster will be switched off after the audit.",
    "session-saturday": "The translation files are synced from the agency every Tuesday.",
    "session-sunday": "The sandbox accounts for partners expire after fourteen days.",
    "session-retro": "We decided to cap work in progress at three tickets per person.",
}
SESSION_LONG: list[tuple[str, list[str]]] = [
    ("where was the shared fixtures server moved to", ["session-monday"]),
    ("when does the vendor contract for the log archive end", ["session-tuesday"]),
    ("what time does the payroll export run now", ["session-wednesday"]),
    ("was the staging database password rotated", ["session-thursday"]),
    ("when will the old reporting cluster be switched off", ["session-friday"]),
    ("how often are the translation files synced from the agency", ["session-saturday"]),
    ("when do the partner sandbox accounts expire", ["session-sunday"]),
    ("what cap did we decide on work in progress", ["session-retro"]),
]


def session_body(slug: str, fact: str) -> str:
    """About 10,000 characters of a day's talk, the fact somewhere in the middle."""
    import random

    rng = random.Random(slug)
    talk = [rng.choice(SESSION_TALK) for _ in range(110)]
    talk.insert(rng.randrange(30, 80), fact)
    return "\n\n".join(" ".join(talk[i : i + 5]) for i in range(0, len(talk), 5))


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
    for slug, fact in SESSION_FACTS.items():
        path = root / NOTES / f"{slug}.md"
        body = session_body(slug, fact)
        path.write_text(f"---\nkeywords: session, notes\n---\n{body}\n", encoding="utf-8")
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
    """recall@5 and MRR of ``queries`` in ``mode``."""
    _, found_at_5, mrr = scores(root, mode, queries)
    return found_at_5, mrr


def scores(
    root: Path, mode: str, queries: list[tuple[str, list[str]]]
) -> tuple[float, float, float]:
    """hit@1, recall@5 and MRR of ``queries`` in ``mode``."""
    first = found_at_5 = 0
    reciprocal = 0.0
    for query, answers in queries:
        wanted = {f"{NOTES}/{a}.md" for a in answers}
        hits = [h.path for h in recall(root, query, NOW, limit=10, mode=mode, run_probes=False)]
        ranks = [i for i, path in enumerate(hits, start=1) if path in wanted]
        first += bool(ranks and ranks[0] == 1)
        found_at_5 += bool(ranks and ranks[0] <= 5)
        reciprocal += 1 / ranks[0] if ranks else 0.0
    return first / len(queries), found_at_5 / len(queries), reciprocal / len(queries)


#: The sets, by name: exact, paraphrase, and the two session-style ones.
SETS = {"exact": EXACT, "para": PARAPHRASE, "session": SESSION, "long": SESSION_LONG}


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
        print(
            f"\nhit@1 / recall@5 / MRR per set ({len(SESSION)} session, {len(SESSION_LONG)} long)"
        )
        for mode in modes:
            cells = []
            for name, queries in SETS.items():
                h1, r5, mrr = scores(root, mode, queries)
                results[mode].update({f"{name}_h1": h1, f"{name}_r5x": r5, f"{name}_mrrx": mrr})
                cells.append(f"{name} {h1:.2f}/{r5:.2f}/{mrr:.2f}")
            print(f"{mode:8} " + "  ".join(cells))
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
    for name in SETS:
        if both[f"{name}_h1"] < words[f"{name}_h1"] or both[f"{name}_mrrx"] < words[f"{name}_mrrx"]:
            misses.append(f"both loses to words on hit@1 or MRR ({name})")
    for miss in misses:
        print(f"quality miss: {miss}", file=sys.stderr)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
