#!/usr/bin/env python3
"""Probes `confidant app`'s local-access rules from outside a browser, with raw HTTP requests
whose headers this script controls. Prints `app_access: N checks passed` or fails at the first
violated rule.

    app_access.py LAUNCH_URL
"""
import http.client, re, sys, urllib.parse

launch = urllib.parse.urlsplit(sys.argv[1])
port = launch.port
checks = 0


def request(method, path, headers=None, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read().decode("utf-8", "replace")
    connection.close()
    return response, data


def expect(condition, what):
    global checks
    if not condition:
        print(f"app_access: FAILED: {what}")
        sys.exit(1)
    checks += 1


# Without the cookie nothing is served, not even the sign-in page.
any_id = "00000000-0000-4000-8000-000000000000"
for path in ["/", "/welcome", "/conversations", "/assets/app.js", "/live/conversations", "/live/vault-transfer",
             f"/chat/{any_id}/files/{any_id}/0", f"/vault/photos/{any_id}", f"/vault/memories/{any_id}/edit",
             "/welcome/avatar", "/groups", f"/groups/{any_id}", "/live/notifications", "/search?q=x",
             "/assets/notifications.js"]:
    response, body = request("GET", path)
    expect(response.status == 401, f"GET {path} without the cookie is 401, was {response.status}")
    expect("Content-Security-Policy" in response.headers, f"401 of {path} carries the CSP")
    expect("Traceback" not in body and "Swift" not in body, "no internals in an error page")

# A wrong token is refused; the right one gives an HttpOnly, SameSite=Strict cookie, once.
response, _ = request("GET", "/?token=" + "A" * 43)
expect(response.status == 403, f"a wrong launch token is 403, was {response.status}")
response, _ = request("GET", f"{launch.path}?{launch.query}")
expect(response.status == 303 and response.getheader("Location") == "/", "the launch token redirects to /")
cookie_header = response.getheader("Set-Cookie") or ""
expect("HttpOnly" in cookie_header and "SameSite=Strict" in cookie_header, f"cookie flags: {cookie_header}")
cookie = cookie_header.split(";")[0]
# Named for this port: another app on another port (another profile) keeps its own cookie.
expect(cookie.startswith(f"confidant-{port}="), f"the cookie is named for port {port}: {cookie}")
response, _ = request("GET", f"{launch.path}?{launch.query}")
expect(response.status == 403, f"the launch token works once, second use was {response.status}")

# With the cookie: pages answer, with the security headers; the Host must be this listener.
response, page = request("GET", "/welcome", {"Cookie": cookie})
expect(response.status == 200, f"GET /welcome with the cookie is 200, was {response.status}")
csp = response.getheader("Content-Security-Policy") or ""
for directive in ["default-src 'none'", "script-src 'self'", "frame-ancestors 'none'",
                  "require-trusted-types-for 'script'"]:
    expect(directive in csp, f"CSP has {directive}: {csp}")
expect("unsafe-inline" not in csp and "unsafe-eval" not in csp, "no unsafe CSP source")
expect(response.getheader("X-Content-Type-Options") == "nosniff", "nosniff")
expect(response.getheader("Referrer-Policy") == "no-referrer", "no referrer, to anyone")
expect(response.getheader("Cache-Control") == "no-store", "pages are not cached")
expect("base-uri 'none'" in csp and "form-action 'self'" in csp, f"no <base>, forms only to the app: {csp}")
def framing_headers(response, what):
    expect(response.getheader("X-Frame-Options") == "DENY", f"{what}: X-Frame-Options DENY")
    expect(response.getheader("Cross-Origin-Opener-Policy") == "same-origin", f"{what}: COOP same-origin")
    expect(response.getheader("Cross-Origin-Resource-Policy") == "same-origin", f"{what}: CORP same-origin")
framing_headers(response, "a page")
expect(not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), "no inline script on the page")
expect(not re.search(r"\son[a-z]+=", page), "no inline event handler on the page")
token = re.search(r'name="_csrf" value="([^"]+)"', page).group(1)
expect('<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">' in page, "pages name the app's icon")
for path in ["/favicon.ico", "/assets/icon.svg"]:
    response, icon = request("GET", path, {"Cookie": cookie})
    expect(response.status == 200 and response.getheader("Content-Type") == "image/svg+xml"
           and icon.startswith("<svg"), f"GET {path} is the app's icon, was {response.status}")

for host in ["evil.example", f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}"]:
    response, _ = request("GET", "/welcome", {"Cookie": cookie, "Host": host})
    expect(response.status == 403, f"Host {host} is refused (DNS rebinding), was {response.status}")
response, _ = request("GET", "/welcome", {"Cookie": cookie, "Host": f"localhost:{port}"})
expect(response.status == 200, f"Host localhost:{port} is accepted, was {response.status}")

# A page another program serves on 127.0.0.1 is same-site (SameSite does not tell ports apart) and
# its requests carry the cookie: what the browser says came from another page is refused, GETs too.
for site in ["same-site", "cross-site", "bogus"]:
    for path in ["/welcome", f"/chat/{any_id}", f"/live/chat/{any_id}", f"/chat/{any_id}/verify", "/live/notifications",
                 "/search?q=x"]:
        response, _ = request("GET", path, {"Cookie": cookie, "Sec-Fetch-Site": site})
        expect(response.status == 403, f"GET {path} with Sec-Fetch-Site {site} is refused, was {response.status}")
# Adding a contact is a form, not a link: a GET of it is read as a chat named "with" (none here).
response, _ = request("GET", "/live/notifications", {"Cookie": cookie})
expect(response.status == 401, f"no arrivals stream before signing in, was {response.status}")
response, _ = request("GET", "/chat/with?email=a%40example.com", {"Cookie": cookie})
expect(response.status in (401, 404), f"GET /chat/with opens no chat, was {response.status}")
for site in ["same-origin", "none"]:
    response, _ = request("GET", "/welcome", {"Cookie": cookie, "Sec-Fetch-Site": site})
    expect(response.status == 200, f"Sec-Fetch-Site {site} is accepted, was {response.status}")

# A state change needs this origin and the form token.
form = urllib.parse.urlencode({"_csrf": token, "passphrase": "x"})
plain = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
response, _ = request("POST", "/welcome/cancel", plain, form)
expect(response.status == 403, f"a POST without Origin is refused, was {response.status}")
response, _ = request("POST", "/welcome/cancel", {**plain, "Origin": "http://evil.example"}, form)
expect(response.status == 403, f"a POST from another origin is refused, was {response.status}")
response, _ = request("POST", "/welcome/cancel", {**plain, "Origin": f"http://127.0.0.1:{port}"},
                      urllib.parse.urlencode({"_csrf": "wrong"}))
expect(response.status == 403, f"a POST with a wrong form token is refused, was {response.status}")
response, _ = request("POST", "/welcome/cancel", {**plain, "Origin": f"http://127.0.0.1:{port}"},
                      urllib.parse.urlencode({"_csrf": token}))
expect(response.status == 303, f"a POST from the app's own page goes through, was {response.status}")
# Under no-referrer a browser's own forms say `Origin: null`: taken only with Sec-Fetch-Site
# same-origin (a sandboxed frame or a data: page says null too, but cross-site).
response, _ = request("POST", "/welcome/cancel", {**plain, "Origin": "null"}, urllib.parse.urlencode({"_csrf": token}))
expect(response.status == 403, f"Origin null without Sec-Fetch-Site is refused, was {response.status}")
for site in ["cross-site", "same-site", "none"]:
    response, _ = request("POST", "/welcome/cancel", {**plain, "Origin": "null", "Sec-Fetch-Site": site},
                          urllib.parse.urlencode({"_csrf": token}))
    expect(response.status == 403, f"Origin null with Sec-Fetch-Site {site} is refused, was {response.status}")
response, _ = request("POST", "/welcome/cancel", {**plain, "Origin": "null", "Sec-Fetch-Site": "same-origin"},
                      urllib.parse.urlencode({"_csrf": "wrong"}))
expect(response.status == 403, f"Origin null from the app's page still needs the form token, was {response.status}")
response, _ = request("POST", "/welcome/cancel", {**plain, "Origin": "null", "Sec-Fetch-Site": "same-origin"},
                      urllib.parse.urlencode({"_csrf": token}))
expect(response.status == 303, f"Origin null with Sec-Fetch-Site same-origin goes through, was {response.status}")
# Scripts send the form token as X-CSRF-Token instead; a wrong one is refused the same way.
scripted = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}", "Content-Type": "application/x-www-form-urlencoded"}
response, _ = request("POST", "/welcome/cancel", {**scripted, "X-CSRF-Token": "wrong"}, "")
expect(response.status == 403, f"a wrong X-CSRF-Token is refused, was {response.status}")
response, _ = request("POST", "/welcome/cancel", {**scripted, "X-CSRF-Token": token}, "")
expect(response.status == 303, f"the right X-CSRF-Token goes through, was {response.status}")

# Bad input: an oversized form, malformed forms, unknown pages: a page, never a stack trace.
response, body = request("POST", "/welcome/step", {**plain, "Origin": f"http://127.0.0.1:{port}"},
                         "_csrf=" + token + "&answer=" + "x" * (300 * 1024))
expect(response.status == 413, f"an oversized form is 413, was {response.status}")
response, body = request("POST", "/welcome", {**plain, "Origin": f"http://127.0.0.1:{port}"},
                         urllib.parse.urlencode({"_csrf": token}))
expect(response.status == 400 and "<html" in body, f"a form without its fields is a 400 page, was {response.status}")
boundary = "confidant-probe"
def multipart(fields, files):
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in fields.items()]
    parts += [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"; filename="{name}"\r\n'
              f'Content-Type: application/octet-stream\r\n\r\n'.encode() + data + b"\r\n"
              for k, (name, data) in files.items()]
    return b"".join(parts) + f"--{boundary}--\r\n".encode()
fields = {"_csrf": token, "mode": "sign-up", "server": "http://127.0.0.1:9", "email": "probe@example.com",
          "password": "correct horse battery", "firstName": "P", "lastName": "Q", "passphrase": "a passphrase"}
headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}",
           "Content-Type": f"multipart/form-data; boundary={boundary}"}
response, body = request("POST", "/welcome", headers, multipart(fields, {"avatar": ("me.png", b"<svg onload=x>")}))
expect(response.status == 422 and "PNG or JPEG" in body, f"a picture that is not one is refused, was {response.status}")
response, body = request("POST", "/welcome", headers,
                         multipart(fields, {"avatar": ("me.png", b"\x89PNG\r\n\x1a\n" + b"0" * (2 << 20))}))
expect(response.status == 413, f"an oversized picture is refused before it is read, was {response.status}")
response, body = request("POST", "/welcome", {**headers, "Origin": "http://evil.example"}, multipart(fields, {}))
expect(response.status == 403, f"a multipart form from another origin is refused, was {response.status}")
response, body = request("POST", "/welcome", headers, multipart({**fields, "_csrf": "wrong"}, {}))
expect(response.status == 403, f"a multipart form without the form token is refused, was {response.status}")
# The new state changes refuse what every state change refuses (a locked vault, no messenger yet).
for path in [f"/chat/{any_id}/attach", f"/chat/{any_id}/timer", f"/chat/{any_id}/messages/{any_id}/delete",
             f"/chat/{any_id}/messages/{any_id}/delete-for-me", f"/chat/{any_id}/unverify", "/settings/receipts",
             f"/chat/{any_id}/draft", f"/chat/{any_id}/unread", f"/groups/{any_id}/draft",
             f"/chat/{any_id}/messages/{any_id}/react",
             f"/settings/devices/{any_id}/name", "/groups/new", f"/groups/{any_id}/send", f"/groups/{any_id}/add",
             f"/groups/{any_id}/leave", f"/groups/{any_id}/remove", f"/groups/{any_id}/timer",
             "/vault/backup", "/vault/restore", "/profile/name", "/welcome/resend", "/chat/with"]:
    response, _ = request("POST", path, plain, form)
    expect(response.status == 403, f"POST {path} without Origin is refused, was {response.status}")
    response, _ = request("POST", path, {**plain, "Origin": f"http://127.0.0.1:{port}"},
                          urllib.parse.urlencode({"_csrf": "wrong"}))
    expect(response.status == 403, f"POST {path} with a wrong form token is refused, was {response.status}")
for path in [f"/chat/{any_id}/draft", f"/groups/{any_id}/draft", f"/chat/{any_id}/unread"]:
    response, body = request("POST", path, {**plain, "Origin": f"http://127.0.0.1:{port}"},
                             urllib.parse.urlencode({"_csrf": token, "draft": "kept?"}))
    expect(response.status == 401, f"POST {path} before signing in keeps nothing, was {response.status}")
response, body = request("POST", "/vault/backup", {**plain, "Origin": f"http://127.0.0.1:{port}"},
                         urllib.parse.urlencode({"_csrf": token, "target": "directory", "directory": "relative/path"}))
expect(response.status == 303 and response.getheader("Location") == "/vault",
       f"a refused backup goes back to the vault page (post/redirect/get), was {response.status}")
response, body = request("GET", "/vault", {"Cookie": cookie})
expect("as a full path, such as" in body, "which says once why it was refused")
response, body = request("GET", "/vault", {"Cookie": cookie})
expect("as a full path, such as" not in body, "and not again on a reload")
response, body = request("GET", f"/vault/photos/{any_id}", {"Cookie": cookie})
expect(response.status in (401, 404) and "Traceback" not in body, f"a photo of a locked vault is a page, was {response.status}")
response, body = request("GET", "/chat/not-a-uuid", {"Cookie": cookie})
expect(response.status in (401, 404) and "<html" in body, f"an unknown chat is a page, was {response.status}")
response, body = request("GET", "/live/conversations?beside=everything", {"Cookie": cookie})
expect(response.status == 400, f"a list shape the pages never ask for is a 400, was {response.status}")
response, body = request("GET", "/welcome/avatar", {"Cookie": cookie})
expect(response.status == 404, f"no sign-up picture waiting is a 404, was {response.status}")
response, body = request("GET", "/nowhere", {"Cookie": cookie})
framing_headers(response, "an error page")
expect(response.status == 404 and "Content-Security-Policy" in response.headers, "404 has the CSP")

print(f"app_access: {checks} checks passed")
