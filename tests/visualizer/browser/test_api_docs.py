"""The REST API's OpenAPI docs page (/api/docs) in a real browser, against a real Daphne server:
Swagger UI, served from this server (no CDN, which the Content-Security-Policy and an offline
classroom both refuse), reads /api/openapi.json and lists every endpoint, with no console error
and no CSP violation."""
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ENDPOINTS = [
    ("POST", "/api/sessions"),
    ("GET", "/api/s/{token}/state"), ("GET", "/api/w/{token}/state"),
    ("GET", "/api/s/{token}/events"), ("GET", "/api/w/{token}/events"),
    ("POST", "/api/s/{token}/control"),
    ("GET", "/api/s/{token}/export/{what}"), ("GET", "/api/w/{token}/export/{what}"),
]


def test_the_api_docs_page_lists_every_endpoint(server, page):
    problems, requests = [], []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.add_init_script("document.addEventListener('securitypolicyviolation', e => "
                         "console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI))")
    response = page.goto(f"{server.url}/api/docs")
    assert response.status == 200
    assert "script-src 'self'" in response.headers.get("content-security-policy", "")
    expect(page.locator(".swagger-ui .title")).to_contain_text("kube-scheduler visualizer API")
    blocks = page.locator(".opblock")
    expect(blocks).to_have_count(len(ENDPOINTS))
    for method, path in ENDPOINTS:
        expect(page.locator(f".opblock-{method.lower()} .opblock-summary-path[data-path='{path}']")).to_be_visible()
    # one endpoint opened shows its parameters (read from the schema)
    page.locator(".opblock-get .opblock-summary-path[data-path='/api/w/{token}/events']").click()
    expect(page.locator(".parameters-container").first).to_contain_text("limit")
    assert all(u.startswith(server.url) or u.startswith("data:") for u in requests), requests
    assert problems == []
