# The two set-up commands: `make scenarios` and `make test`. Both work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: scenarios test test-serial check test-real lint typecheck unit testhost-deps report-deps conformance conformance-wide clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The tuning scenarios (sustainable-rate searches, shared-prefix rates, step counts per
# concurrency level: in real time, one to three minutes each) are left out here to keep this
# under 90 s; `make test` runs them, or:
# .venv/bin/pytest scenarios -m tuning
scenarios: $(STAMP)
	$(BIN)/pytest scenarios/ -m "not tuning"

# The systemd + OpenSSH test host needs systemd-nspawn and sshd; install them when root.
testhost-deps:
	@if [ "$$(id -u)" = 0 ] && { ! command -v systemd-nspawn >/dev/null || [ ! -x /usr/sbin/sshd ]; }; then \
		echo "installing systemd-container and openssh-server for the test host"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends systemd-container openssh-server >/dev/null; \
	fi

# The reports' browser check (tests/report/test_browser.py) needs the Allure 3 command-line tool
# from the npm registry (into the git-ignored .cache/allure-cli; needs Node.js >= 20) and
# Chromium (Debian's package, installed when root). About 25 s each on a fresh machine.
ALLURE_CLI_VERSION ?= 3.18.0
ALLURE_CLI := .cache/allure-cli/node_modules/.bin/allure
report-deps:
	@if [ "$$(id -u)" = 0 ] && ! command -v chromium >/dev/null; then \
		echo "installing chromium for the report browser check"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends chromium >/dev/null; \
	fi
	@if command -v npm >/dev/null && [ ! -x $(ALLURE_CLI) ]; then \
		echo "installing the Allure CLI $(ALLURE_CLI_VERSION) into .cache/allure-cli"; \
		mkdir -p .cache/allure-cli && npm install --prefix .cache/allure-cli --no-audit \
			--no-fund --silent allure@$(ALLURE_CLI_VERSION) >/dev/null; \
	fi

# Goldens from the real SGLang 0.5.23 (conformance/README.md): its parser and ServerArgs
# resolution run on this CPU-only machine, GPU-only kernel packages stubbed, the device faked.
# Not part of `make test`: the first run downloads ~6 GB (torch with its CUDA wheels) into a venv
# kept outside the project (reused afterwards); `make test` checks the committed goldens.
CONFORMANCE_VENV ?= $(HOME)/.cache/pytest-sglang/sglang-0.5.23
CONFORMANCE_OUT  ?= tests/data/conformance
$(CONFORMANCE_VENV)/.installed: conformance/requirements.txt
	test -x $(CONFORMANCE_VENV)/bin/python || $(PYTHON) -m venv $(CONFORMANCE_VENV)
	$(CONFORMANCE_VENV)/bin/python -m pip install -q --upgrade pip
	$(CONFORMANCE_VENV)/bin/python -m pip install -q --no-deps sglang==0.5.23 torchvision==0.29.1
	$(CONFORMANCE_VENV)/bin/python -m pip install -q -r conformance/requirements.txt
	touch $@

conformance: $(CONFORMANCE_VENV)/.installed
	$(CONFORMANCE_VENV)/bin/python conformance/harness.py --out $(CONFORMANCE_OUT)

# The wide matrix (conformance/wide.py): 20 models x 7 GPU profiles, a held-out part marked
conformance-wide: $(CONFORMANCE_VENV)/.installed
	$(CONFORMANCE_VENV)/bin/python conformance/harness.py --out $(CONFORMANCE_OUT) --matrix wide

LINTED := pytest_sglang tests tests_real scenarios benchmarks conformance docs
lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest tests/

# The inner loop (under 2 minutes): lint, types and the tests that start no server, no test host
# and no child pytest session (tests/conftest.py marks those `server` and `systemd`).
check: $(STAMP) lint typecheck
	$(BIN)/pytest tests/ -q -m "not systemd and not server"

# The whole suite in three sessions at once. The `serial` tests (tests/conftest.py SERIAL_TESTS and
# SERIAL_FIXTURES: the scenarios, pytest-benchmark measurements, wall-clock gates, paced load,
# baselines saved then gated) run at normal priority: they spend their time waiting on simulated GPU
# time (about a minute of CPU in six minutes of wall clock), so their figures measure the code.
# Beside the scenarios, in a session of its own, run the child sessions that save a baseline and
# gate the next run against it (the `gated` marker, GATED_TESTS: they bear the scenarios' load, not
# the rate searches', which would find other rates beside them). Beside both, at `nice 19` on the
# CPU they leave: ruff and mypy (as `make lint typecheck`), then everything else on TEST_WORKERS
# pytest-xdist workers. Once all three have ended, the searches whose probes sit at the edge of an
# SLO (the `quiet` marker, QUIET_TESTS) run alone. The scenarios' output is shown as it comes, the
# others' when they end; any session failing fails the target. The serial sessions run the simulated
# GPU start-ups at 1% of a real host's (scenarios/conftest.py's default is 5%): no test asserts on
# their length.
TEST_WORKERS ?= 3
SERIAL_ENV ?= SGLANG_SIM_STARTUP_SCALE=0.01
test: $(STAMP) testhost-deps report-deps
	@tmp=$$(mktemp -d); \
	{ nice -n 19 $(BIN)/ruff check $(LINTED) && nice -n 19 $(BIN)/ruff format --check $(LINTED) && \
	  nice -n 19 $(BIN)/mypy && nice -n 19 $(BIN)/pytest tests/ -m "not serial" -n $(TEST_WORKERS) -q -p no:cacheprovider \
		--basetemp=$$tmp/parallel; } > $$tmp/parallel.log 2>&1 & parallel=$$!; \
	$(SERIAL_ENV) $(BIN)/pytest tests/ -m gated -q -p no:cacheprovider --basetemp=$$tmp/gated \
		> $$tmp/gated.log 2>&1 & gated=$$!; \
	echo "beside this (output when they end): tests/ -m gated; ruff, mypy, then tests/ -m 'not serial' on $(TEST_WORKERS) workers at nice 19"; \
	$(SERIAL_ENV) $(BIN)/pytest scenarios/ tests/ -m "serial and not quiet and not gated" \
		-p no:cacheprovider --basetemp=$$tmp/serial; \
	serial=$$?; wait $$gated; gated=$$?; wait $$parallel; parallel=$$?; \
	echo "== tests/ -m gated =="; cat $$tmp/gated.log; \
	echo "== ruff, mypy, tests/ -m 'not serial' -n $(TEST_WORKERS) =="; cat $$tmp/parallel.log; \
	echo "== last, alone: tests/ -m quiet =="; \
	$(SERIAL_ENV) $(BIN)/pytest tests/ -m quiet -p no:cacheprovider --basetemp=$$tmp/quiet; \
	quiet=$$?; rm -rf $$tmp; \
	[ $$serial = 0 ] && [ $$gated = 0 ] && [ $$parallel = 0 ] && [ $$quiet = 0 ]

# The same tests one at a time in one session (as CI ran them before the split above; about 18
# minutes): for a test that only fails beside the others.
test-serial: $(STAMP) testhost-deps report-deps lint typecheck
	$(BIN)/pytest tests/ scenarios/

# The real-SGLang tier (tests_real/, docs/real-sglang.md): the real package, installed once into
# a venv of its own outside the project (reused while the release matches), serving a tiny model
# built here on this CPU-only machine. The first run downloads about 11 GB.
REAL_SGLANG_VERSION ?= 0.5.23
REAL_VENV ?= $(HOME)/.cache/pytest-sglang/real-$(REAL_SGLANG_VERSION)
test-real: $(STAMP) testhost-deps
	@sh tests_real/install_sglang.sh $(REAL_SGLANG_VERSION) $(REAL_VENV) $(PYTHON)
	PYTEST_SGLANG_REAL_VENV=$(REAL_VENV) $(BIN)/pytest tests_real/

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
