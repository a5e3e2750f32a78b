import pytest

from sources.tenancy import workspace_scope
from tests.factories import index_text
from tests.fakes.openai_server import FakeProvider, openai_compatible_server

ORIGIN = "https://acme.example"

KETTLE = (
    "Every kettle carries a two-year warranty against manufacturing defects. "
    "The warranty does not cover limescale damage.\n\n"
    "Descale the kettle monthly with white vinegar to keep it working well."
)
SHIPPING = "We ship to Canada, Mexico and the United States. Express delivery takes two days."


@pytest.fixture
def knowledge(workspace, agent):
    return [
        index_text(workspace, agent, "Kettle care", KETTLE),
        index_text(workspace, agent, "Shipping", SHIPPING),
    ]


@pytest.fixture
def provider():
    with openai_compatible_server(FakeProvider()) as running:
        yield running


@pytest.fixture
def llm_agent(agent, provider):
    with workspace_scope(agent.workspace_id):
        agent.llm_base_url = provider.base_url
        agent.llm_model = "fake-chat"
        agent.llm_api_key = provider.api_key
        agent.save()
    return agent


def chat(client, agent, message, *, origin=ORIGIN, stream=False, **extra):
    path = f"/api/v1/agents/{agent.public_key}/chat" + ("/stream" if stream else "")
    headers = {"HTTP_ORIGIN": origin} if origin else {}
    return client.post(
        path,
        {"message": message, **extra.pop("body", {})},
        content_type="application/json",
        **headers,
        **extra,
    )


def events(response):
    """Parse a streamed SSE response into a list of event payloads."""
    import json

    body = b"".join(response.streaming_content).decode()
    parsed = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        payload = json.loads(lines["data"])
        assert payload["type"] == lines["event"]
        parsed.append(payload)
    return parsed
