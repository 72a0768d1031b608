# The two set-up commands: `make scenarios` and `make test`. Both work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: scenarios test lint typecheck unit testhost-deps clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

scenarios: $(STAMP)
	$(BIN)/pytest scenarios/

# The systemd + OpenSSH test host needs systemd-nspawn and sshd; install them when root.
testhost-deps:
	@if [ "$$(id -u)" = 0 ] && { ! command -v systemd-nspawn >/dev/null || [ ! -x /usr/sbin/sshd ]; }; then \
		echo "installing systemd-container and openssh-server for the test host"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends systemd-container openssh-server >/dev/null; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check pytest_sglang tests scenarios benchmarks
	$(BIN)/ruff format --check pytest_sglang tests scenarios benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest tests/

test: $(STAMP) testhost-deps lint typecheck
	$(BIN)/pytest tests/ scenarios/

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
