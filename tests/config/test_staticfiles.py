"""Deployments serve the admin UI's ES modules (sources/static/app/) by their hashed names, imports included
(config/staticfiles.py): a hashed module never loads a sibling by its plain name."""

import json
import re
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

ROOT = Path(__file__).resolve().parents[2]
APP_MODULES = ROOT / "sources" / "static" / "app"


def test_production_serves_static_files_with_module_imports_hashed() -> None:
    production = (ROOT / "config" / "settings" / "production.py").read_text()
    assert '"staticfiles": {"BACKEND": "config.staticfiles.StaticFilesStorage"}' in production


def test_collected_modules_import_their_siblings_by_hashed_name(tmp_path: Path) -> None:
    storages = {**settings.STORAGES, "staticfiles": {"BACKEND": "config.staticfiles.StaticFilesStorage"}}
    with override_settings(STATIC_ROOT=tmp_path, STORAGES=storages):
        call_command("collectstatic", "--noinput", "-v", "0")
    collected_paths = json.loads((tmp_path / "staticfiles.json").read_text())["paths"]
    modules = sorted(APP_MODULES.glob("*.js"))
    assert APP_MODULES / "main.js" in modules
    for module in modules:
        source = module.read_text()
        collected = (tmp_path / collected_paths[f"app/{module.name}"]).read_text()
        imported = re.findall(r'^import .* from "\./([^"]+)";$', collected, re.M)
        assert len(imported) == len(re.findall(r"^import ", source, re.M)), module.name
        for target in imported:
            assert re.fullmatch(r"[\w-]+\.[0-9a-f]{12}\.js", target), (module.name, target)
            assert (tmp_path / "app" / target).is_file(), (module.name, target)
        # Only the import lines change: the rest is served as written.
        unhashed = re.sub(r'\.[0-9a-f]{12}\.js";$', '.js";', collected, flags=re.M)
        assert unhashed == source, module.name
