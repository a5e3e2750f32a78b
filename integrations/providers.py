"""Which module speaks OAuth for each provider (integrations/<provider>/oauth.py: its endpoints, exchange,
refresh and revoke), imported when first used. Both the OAuth dance (integrations/oauth.py) and the writes to
a connection after it (integrations/connections.py) ask it, so neither imports the other for it."""

from __future__ import annotations

import importlib
from types import ModuleType

from integrations.models import Provider

PROVIDERS = {Provider.NOTION: "integrations.notion.oauth", Provider.GOOGLE: "integrations.google.oauth"}


def provider_module(provider: str) -> ModuleType:
    return importlib.import_module(PROVIDERS[Provider(provider)])
