# WheelGate developer commands. Every target creates .venv and installs what it needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export AWS_EC2_METADATA_DISABLED := true
export CDK_DISABLE_CLI_TELEMETRY := true

.PHONY: all venv test unit infra integration lint typecheck demo synth layer bench clean node

all: test

# The dev venv has the base install and both extras (local includes promoter):
# requirements*.txt pin all of them, so the package itself goes in with --no-deps.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e '.[local]'
	touch $@

venv: $(STAMP)

# Promoter dependencies for Lambda (arm64, Python 3.13), bundled without Docker by the pip
# command of stacks/promoter_layer.py (the one an app without this checkout runs at synthesis).
LAYER := build/layer
$(LAYER)/.built: stacks/layer/requirements.txt stacks/promoter_layer.py | $(STAMP)
	rm -rf $(LAYER)
	$(BIN)/python -m stacks.promoter_layer $(LAYER)
	touch $@

layer: $(LAYER)/.built

# The pinned CDK command-line tool (package.json); npm writes the stamp file on install.
NODE_STAMP := node_modules/.package-lock.json
CDK := node_modules/.bin/cdk
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

node: $(NODE_STAMP)

# Prints the CloudFormation template. Needs no AWS credentials (see docs/deploy.md).
synth: $(STAMP) layer $(NODE_STAMP)
	@$(CDK) synth --no-notices --no-version-reporting WheelGate

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest tests/unit -q

infra: $(STAMP) layer
	$(BIN)/pytest tests/infra -q

# The integration tier executes the synthesized fan-out state machine: synthesis needs the layer.
integration: $(STAMP) layer
	$(BIN)/pytest tests/integration -q

test: $(STAMP) layer lint typecheck
	$(BIN)/pytest -q

demo: $(STAMP)
	$(BIN)/python -m wheelgate.local.demo

clean:
	rm -rf $(VENV) build cdk.out .pytest_cache .mypy_cache .ruff_cache
