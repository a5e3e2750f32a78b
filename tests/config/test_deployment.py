"""The deployment files, checked without a container engine: one package list, a runtime-only lock, a
non-root image, a compose file whose every service has a healthcheck and whose every variable is documented,
every file they name present, and production settings that pass `check --deploy`."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

from tests.factories import ROOT

PACKAGES_FILE = ROOT / "scripts" / "system-packages.txt"


def read(path: str) -> str:
    return (ROOT / path).read_text()


def system_packages() -> dict[str, str]:
    rows = [line.split("#", 1)[0].split() for line in PACKAGES_FILE.read_text().splitlines()]
    return {row[0]: row[1] for row in rows if row}


def compose() -> dict:
    return yaml.safe_load(read("docker-compose.yml"))


def locked(path: str) -> dict[str, str]:
    return dict(re.findall(r"^([a-z0-9._-]+)==(\S+)", read(path), flags=re.MULTILINE))


# --- one package list ---------------------------------------------------------------------------------


def test_setup_and_the_image_install_system_packages_from_the_one_list_only():
    packages = system_packages()
    assert set(packages.values()) == {"image", "local"}
    # What the issue found missing from the image: legacy Office files need these.
    assert {"antiword", "catdoc", "tesseract-ocr", "chromium"} <= {
        p for p, w in packages.items() if w == "image"
    }
    setup, dockerfile = read("scripts/setup.sh"), read("Dockerfile")
    assert "scripts/system-packages.txt" in setup and "scripts/system-packages.txt" in dockerfile
    assert """awk '$2 == "image" {print $1}'""" in dockerfile
    for name, text in (("setup.sh", setup), ("Dockerfile", dockerfile)):
        install_lines = [line for line in text.splitlines() if "apt-get" in line and " install " in line]
        assert install_lines, name
        for line in install_lines:
            named = set(re.split(r"[\s;\"'&|]+", line)) & set(packages)
            assert not named, f"{name} names packages outside the list: {named}"


# --- locks and the image ------------------------------------------------------------------------------


def test_the_image_installs_a_runtime_lock_with_every_main_dependency_and_no_dev_tool():
    project = tomllib.loads(read("pyproject.toml"))["project"]
    name_of = lambda requirement: re.split(r"[<>=!\[ ;]", requirement, maxsplit=1)[0].lower()  # noqa: E731
    runtime, dev = locked("requirements-runtime.lock"), locked("requirements.lock")
    for requirement in project["dependencies"]:
        assert name_of(requirement).replace("_", "-") in runtime, requirement
    for requirement in project["optional-dependencies"]["dev"]:
        assert name_of(requirement) not in runtime, f"{requirement} is a dev tool in the runtime lock"
    for package, version in runtime.items():
        assert dev.get(package) == version, (
            f"{package}: {version} in the runtime lock, {dev.get(package)} in dev"
        )
    assert "--require-hashes --no-deps -r requirements-runtime.lock" in read("Dockerfile")
    assert "requirements.lock" not in read("Dockerfile").replace("requirements-runtime.lock", "")


def test_the_image_runs_as_a_non_root_user_and_serves_asgi():
    instructions = [
        line.split(None, 1) for line in read("Dockerfile").splitlines() if line and line[0].isupper()
    ]
    users = [args.strip() for keyword, args in instructions if keyword == "USER"]
    assert users and users[-1] not in ("root", "0")
    cmd = json.loads(next(args for keyword, args in instructions if keyword == "CMD"))
    assert cmd[:2] == ["gunicorn", "config.asgi:application"] and "config/gunicorn.py" in cmd
    for keyword, args in instructions:
        if keyword == "COPY":
            source = args.split()[0]
            assert source == "." or (ROOT / source).exists(), f"COPY of a missing file: {source}"


# --- compose ------------------------------------------------------------------------------------------


APP_SERVICES = {"migrate", "web", "worker-crawl", "worker-index", "beat"}


def test_compose_has_a_healthcheck_on_every_long_running_service_and_a_migrate_job_first():
    services = compose()["services"]
    assert APP_SERVICES | {"postgres", "redis", "qdrant", "flower"} == set(services)
    checks = {
        name: " ".join(map(str, service.get("healthcheck", {}).get("test", [])))
        for name, service in services.items()
    }
    assert services["migrate"]["healthcheck"] == {"disable": True}  # a job, not a service
    assert services["migrate"]["restart"] == "no"
    assert "pg_isready" in checks["postgres"] and "redis-cli ping" in checks["redis"]
    assert "/readyz" in checks["web"]
    assert (
        "inspect ping -d crawl@" in checks["worker-crawl"]
        and "inspect ping -d index@" in checks["worker-index"]
    )
    for name in set(services) - {"migrate"}:
        assert checks[name], f"{name} has no healthcheck"
    for name in APP_SERVICES - {"migrate"}:
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert services[name]["env_file"] == ".env"
    assert "migrate" in services["migrate"]["command"][-1]


def test_compose_keeps_qdrant_and_flower_behind_profiles_and_broker_and_cache_apart():
    services = compose()["services"]
    assert services["qdrant"]["profiles"] == ["qdrant"] and services["flower"]["profiles"] == ["flower"]
    for name in APP_SERVICES:
        assert "qdrant" not in services[name].get("depends_on", {}), "the app must start without the profile"
    env = services["web"]["environment"]
    assert env["CELERY_BROKER_URL"].rsplit("/", 1)[0] == env["REDIS_URL"].rsplit("/", 1)[0]
    assert env["CELERY_BROKER_URL"] != env["REDIS_URL"]


SETTINGS_READ = re.compile(
    r"""\benv(?:\.(?:bool|int|float|list|db|str|json|url))?\(\s*["']([A-Z0-9_]+)["']"""
)


def variables_the_code_reads() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "config" / "settings").glob("*.py"):
        if path.name != "test.py":  # the test settings' own run id is no deployment's business
            names |= set(SETTINGS_READ.findall(path.read_text()))
    names |= set(re.findall(r"os\.environ\.get\(\s*['\"]([A-Z0-9_]+)['\"]", read("config/gunicorn.py")))
    names |= set(re.findall(r"os\.environ\.get\(\s*\"([A-Z0-9_]+)\"", read("config/asgi.py")))
    names |= set(re.findall(r"os\.environ\.get\(\s*\"([A-Z0-9_]+)\"", read("ingestion/parsers/base.py")))
    return names


def documented_variables() -> set[str]:
    return set(re.findall(r"^#?\s?([A-Z][A-Z0-9_]+)=", read(".env.example"), flags=re.MULTILINE))


def test_env_example_lists_every_variable_the_settings_and_compose_read():
    code = variables_the_code_reads()
    assert {"DJANGO_SECRET_KEY", "S3_BUCKET", "CRAWL_ALLOWED_NETWORKS", "WIDGET_RATE_PER_KEY"} <= code
    compose_vars = set(re.findall(r"\$\{([A-Z0-9_]+)", read("docker-compose.yml")))
    missing = (code | compose_vars) - documented_variables()
    assert not missing, f"not in .env.example: {sorted(missing)}"
    # And nothing documented that nothing reads (a renamed setting would leave its old name behind).
    # Read by manage.py, Celery and prometheus_client rather than the settings.
    extra = (
        documented_variables() - code - compose_vars - {"PROMETHEUS_MULTIPROC_DIR", "DJANGO_SETTINGS_MODULE"}
    )
    assert not extra, f"documented but read nowhere: {sorted(extra)}"


def test_every_app_service_gets_the_whole_env_file_and_the_files_it_runs_exist():
    services = compose()["services"]
    for name in APP_SERVICES:
        service = services[name]
        assert service["build"] == "." and service["env_file"] == ".env"
        command = service.get("command") or json.loads(read("Dockerfile").split("CMD ", 1)[1])
        words = shlex.split(" ".join(command)) if isinstance(command, list) else shlex.split(command)
        for word in words:
            if word.startswith("config/") or word.endswith(".py"):
                assert (ROOT / word).exists(), f"{name} runs a missing file: {word}"
    assert (ROOT / "config" / "asgi.py").exists() and (ROOT / "config" / "celery.py").exists()
    assert (ROOT / "sources" / "management" / "commands" / "create_workspace.py").exists()


# --- settings -----------------------------------------------------------------------------------------


def _production_env(**extra: str) -> dict[str, str]:
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment never has it.
    inherited = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": "k" * 20 + "-Zq8vN3xLw0pRt5yUi7oPa2sDf4gHj6kL9mNb1vC",
        "FIELD_ENCRYPTION_KEYS": "ZmDfcTF7_60GrrY167zsiPd67pEvs0aGOv2oasOM1Pg=",
        "LOG_LEVEL": "ERROR",
        **extra,
    }


def test_production_settings_pass_the_deploy_check_with_no_warning():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=_production_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_make_run_serves_without_debug():
    run = read("scripts/run.sh")
    assert 'DJANGO_DEBUG="${DJANGO_DEBUG:-false}"' in run
    assert "collectstatic" in run  # whitenoise serves what collectstatic gathered


# --- Qdrant cluster settings --------------------------------------------------------------------------


class FakeQdrant(BaseHTTPRequestHandler):
    """Records collection creation; answers 'missing' to the existence check and fails everything after."""

    created: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, result: object) -> None:
        body = json.dumps({"result": result, "status": "ok" if status < 400 else "error", "time": 0}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.endswith("/exists"):
            self._send(200, {"exists": False})
        else:
            self._send(500, None)

    def do_PUT(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if re.fullmatch(r"/collections/[^/]+", self.path.split("?")[0]):
            FakeQdrant.created.append(body)
            self._send(200, True)
        else:
            self._send(200, {"operation_id": 1, "status": "completed"})


def test_qdrant_sharding_and_replication_settings_are_passed_when_the_collection_is_created():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeQdrant)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    script = (
        "import django, numpy; django.setup()\n"
        "from config.backends import vector_stores\n"
        "from retrieval.stores.base import VectorRecord\n"
        "chunk = '6f1c1a9e-0000-4000-8000-000000000001'\n"
        "record = VectorRecord(chunk_id=chunk, vector=numpy.ones(4, 'float32'))\n"
        "try:\n"
        "    vector_stores['default'].upsert(workspace_id=1, records=[record], model_name='m')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    env = _production_env(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        VECTOR_STORE_BACKEND="retrieval.stores.qdrant.QdrantStore",
        QDRANT_URL=f"http://127.0.0.1:{server.server_port}",
        QDRANT_SHARD_NUMBER="6",
        QDRANT_REPLICATION_FACTOR="2",
        QDRANT_WRITE_CONSISTENCY_FACTOR="2",
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        server.shutdown()
    assert FakeQdrant.created, result.stderr[-2000:] + result.stdout
    created = FakeQdrant.created[-1]
    assert (created["shard_number"], created["replication_factor"], created["write_consistency_factor"]) == (
        6,
        2,
        2,
    )
    assert created["vectors"]["dense"]["size"] == 4
