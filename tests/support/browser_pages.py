"""Steps through the dashboard's pages that browser tests share: opening a page at a width,
logging in and out, and collecting the console's errors."""

# The longest wait of the tests that set it (page.set_default_timeout): a broken page fails
# them in 15 s, not in Playwright's default 30 s.
TIMEOUT_MS = 15_000
# The widths every page is looked at: a desktop and a phone.
WIDTHS = {"desktop": 1400, "phone": 390}


def log_in(page, live_server, username, password, *, landing: str | None = "#clusters") -> None:
    """Log in through the login page, then wait for `landing` (None: the login may be refused)."""
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    if landing:
        page.wait_for_selector(landing)


def log_out(page) -> None:
    page.click("form.logout button")
    page.wait_for_selector("input[name=username]")


def console_errors_of(page) -> list[str]:
    """The list that every console error and uncaught exception of the pages `page` opens from
    now on is added to, each after its page's URL (Chromium reports each CSP violation there)."""
    errors: list[str] = []
    page.on(
        "console",
        lambda message: (
            message.type == "error"
            and errors.append(f"{page.url}: {message.text} ({message.location.get('url')})")
        ),
    )
    page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
    return errors


def open_at(page, live_server, width: str, username: str, password: str) -> list[str]:
    """Size `page` to WIDTHS[width], give it TIMEOUT_MS, collect its console's errors from now
    on and log in; return the errors' list (console_errors_of)."""
    page.set_viewport_size({"width": WIDTHS[width], "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    errors = console_errors_of(page)
    log_in(page, live_server, username, password)
    return errors
