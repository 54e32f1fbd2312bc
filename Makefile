# The single gate: CI runs `make test`; a new user runs `make demo`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := /tmp/rouse-demo

# The real agent CLIs the wiring tests run (tests/test_clients.py and
# tests/test_client_opencode.py), from the npm registry, once; pinned so a new
# release cannot change the tests under us (opencode-ai brings its own binary,
# ~180 MB per CPU variant). Without node/npm on the machine those tests are
# skipped, saying why.
CLIENTS         := $(VENV)/clients
CLIENTS_STAMP   := $(CLIENTS)/.installed
CLIENT_PACKAGES := @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 \
                   opencode-ai@1.18.33
# A second pinned set, in its own prefix: the Claude Code release people run today
# (`npm view @anthropic-ai/claude-code version`), proven beside the pin above by the
# tests marked for both (the pack, the prompt hook, the idle wake, the MCP server).
CLIENTS_CURRENT         := $(VENV)/clients-current
CLIENTS_CURRENT_STAMP   := $(CLIENTS_CURRENT)/.installed
CLIENT_PACKAGES_CURRENT := @anthropic-ai/claude-code@2.1.332

.PHONY: demo test lint typecheck pytest clients bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,semantic]'
	touch $(STAMP)

# The demo signs, as every new tree does: `init` makes the stamp key (here in the
# demo's own folder, outside the tree, so your ~/.config is left alone) and signs
# the examples; the move and close at the end show that rouse's own verbs keep an
# origin (their notes go to the record's log, which the signature leaves out).
demo: export ROUSE_STAMP_KEY = $(DEMO)/key/stamp.key
demo: $(STAMP)
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	@echo '$$ rouse init $(DEMO)    # (ROUSE_STAMP_KEY=$(DEMO)/key/stamp.key)'
	@$(BIN)/rouse init $(DEMO)
	@echo; echo '$$ rouse tree'
	@$(BIN)/rouse --memory $(DEMO)/memory tree
	@echo; echo '$$ rouse check'
	@$(BIN)/rouse --memory $(DEMO)/memory check
	@echo; echo '$$ rouse due --now "2099-01-02 09:00"'
	@$(BIN)/rouse --memory $(DEMO)/memory due --now "2099-01-02 09:00"
	@echo; echo '$$ rouse explain example-renew-the-tls-certificate --now "2099-01-02 09:00"'
	@$(BIN)/rouse --memory $(DEMO)/memory explain example-renew-the-tls-certificate --now "2099-01-02 09:00"
	@echo; echo '$$ rouse sweep --once --now "2099-01-02 09:00"    # one tick: wakes go to the file sink'
	@$(BIN)/rouse --memory $(DEMO)/memory sweep --once --now "2099-01-02 09:00"
	@echo; echo '$$ cat .rouse/nudges/*.md'
	@for f in $(DEMO)/memory/.rouse/nudges/*.md; do echo "--- $${f##*/}"; cat "$$f"; done
	@echo; echo '$$ rouse pack --now "2099-01-02 09:05"    # the next session opens with what woke it'
	@$(BIN)/rouse --memory $(DEMO)/memory pack --now "2099-01-02 09:05"
	@echo; echo '$$ rouse move example-bisect-the-flaky-test --note "bisected it to the retry test" --now "2099-01-02 09:10"'
	@$(BIN)/rouse --memory $(DEMO)/memory move example-bisect-the-flaky-test --note "bisected it to the retry test" --now "2099-01-02 09:10"
	@echo; echo '$$ rouse close example-renew-the-tls-certificate --done --now "2099-01-02 09:15"'
	@$(BIN)/rouse --memory $(DEMO)/memory close example-renew-the-tls-certificate --done --now "2099-01-02 09:15"
	@echo; echo '$$ rouse check --now "2099-01-02 09:20"    # both still carry their signed origin: no provenance warning'
	@$(BIN)/rouse --memory $(DEMO)/memory check --now "2099-01-02 09:20"
	@echo; echo '$$ rouse explain example-bisect-the-flaky-test --now "2099-01-02 09:20"'
	@$(BIN)/rouse --memory $(DEMO)/memory explain example-bisect-the-flaky-test --now "2099-01-02 09:20"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/ruff format --check src tests bench tools
	$(BIN)/lint-imports
	$(BIN)/python tools/sizes.py

typecheck: $(STAMP)
	$(BIN)/mypy

$(CLIENTS_STAMP): Makefile
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		mkdir -p $(CLIENTS) && \
		npm install --prefix $(CLIENTS) --no-audit --no-fund --loglevel=error \
			$(CLIENT_PACKAGES) && touch $@; \
	else \
		echo "node/npm not found: tests/test_clients.py will be skipped"; \
	fi

$(CLIENTS_CURRENT_STAMP): Makefile
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		mkdir -p $(CLIENTS_CURRENT) && \
		npm install --prefix $(CLIENTS_CURRENT) --no-audit --no-fund --loglevel=error \
			$(CLIENT_PACKAGES_CURRENT) && touch $@; \
	fi

clients: $(STAMP) $(CLIENTS_STAMP) $(CLIENTS_CURRENT_STAMP)

# One test process per CPU (pytest-xdist; tests/conftest.py gives each its own HOME and
# PostgreSQL), the tests shared out one at a time as each process comes free: most of
# the suite is real processes started and waited on, and a few files take minutes.
pytest: $(STAMP) $(CLIENTS_STAMP) $(CLIENTS_CURRENT_STAMP)
	$(BIN)/pytest -n auto --dist worksteal

test: lint typecheck pytest

# the pack's and the hooks' benches byte-compile both sides themselves, as a pip/pipx
# install is (bench/baseline.py; the later benches run on that bytecode), and time
# BASELINE's code beside this checkout's in the same rounds
# (`make bench BASELINE=v0.3.0`; `BASELINE=` for this checkout alone)
BASELINE ?= main
bench: $(STAMP)
	$(BIN)/python bench/run.py $(if $(BASELINE),--baseline $(BASELINE))
	$(BIN)/python bench/hooks_bench.py $(if $(BASELINE),--baseline $(BASELINE))
	$(BIN)/python bench/sweep_bench.py
	$(BIN)/python bench/fleet_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
