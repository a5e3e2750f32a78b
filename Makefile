# The two commands a newcomer needs: `make run` and `make test`. See README.md.
.PHONY: run test bench chaos lint setup lock

setup:
	@bash scripts/setup.sh

run:
	@bash scripts/run.sh

test:
	@bash scripts/test.sh $(ARGS)

bench:
	@bash scripts/bench.sh

# The fault harness: kill workers, restart Redis and PostgreSQL, hang the embedder (docs/RELIABILITY.md).
chaos:
	@bash scripts/chaos.sh $(ARGS)

lint:
	@.venv/bin/ruff check . && .venv/bin/ruff format --check .

# Re-resolve the hashed lock after editing pyproject.toml.
lock:
	@.venv/bin/pip-compile -q --generate-hashes --extra dev --strip-extras -o requirements.lock pyproject.toml
	@.venv/bin/pip-compile -q --generate-hashes --strip-extras -o requirements-runtime.lock pyproject.toml
