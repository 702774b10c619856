#!/usr/bin/env python3
"""Two users of `confidant app` in two headless Chromium browsers (Selenium), against a real
relay: both sign up through the pages (the mailed code read from the relay's outbox), alice
writes, bob sees it without reloading and answers, a hostile message shows as text and runs
nothing, the verify page shows safety numbers with QR codes. Prints `app_browser: N checks
passed`, or what failed.

    app_browser.py --alice URL --bob URL --relay URL --outbox DIR --relay-pid PID --relay-exe PATH
                   --relay-data DIR --resend-seconds N --work DIR [--screenshots DIR]

The relay is stopped mid-chat (its process id) and started again on the same port and data
directory (with the executable and options given), to check that a message written meanwhile
waits and then goes by itself.

alice's app was started without a passphrase (the sign-up page asks for one), bob's with one.
"""
import argparse, base64, glob, hashlib, hmac, os, re, shutil, signal, socket, struct, subprocess, sys, tempfile, time, urllib.request, zlib

import pyotp
from axe_selenium_python import Axe
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

parser = argparse.ArgumentParser()
parser.add_argument("--alice", required=True)
parser.add_argument("--bob", required=True)
parser.add_argument("--relay", required=True)
parser.add_argument("--outbox", required=True)
parser.add_argument("--cli", required=True, help="the confidant executable (bob's second device signs in with it)")
parser.add_argument("--home", required=True, help="the apps' CONFIDANT_HOME")
parser.add_argument("--relay-pid", type=int, required=True)
parser.add_argument("--relay-exe", required=True)
parser.add_argument("--relay-data", required=True)
parser.add_argument("--resend-seconds", type=int, required=True)
parser.add_argument("--work", required=True, help="a directory of the test's own (backups go there)")
parser.add_argument("--screenshots")
parser.add_argument("--suffix", default=str(os.getpid()))
arguments = parser.parse_args()
checks = 0
WAIT = 30  # seconds for anything asynchronous; the machine may be slow


def expect(condition, what):
    global checks
    if not condition:
        raise AssertionError(what)
    checks += 1


def browser():
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,900",
                 "--disable-gpu", "--no-first-run", "--password-store=basic"]:
        options.add_argument(flag)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(120)
    return driver


def last_text(driver, selector):
    """The text of the last element matching `selector`, read in one step inside the page: a live
    page may replace the element between finding it and reading it from here."""
    return driver.execute_script(
        "const all = document.querySelectorAll(arguments[0]); return all.length ? all[all.length - 1].textContent : null",
        selector)


def image_width(driver, selector):
    """The natural width of the first loaded image matching `selector`, found and read in one step
    inside the page (0 while it loads): a live page may replace the element, and a handle found
    before stays stale for good."""
    return driver.execute_script(
        "const image = document.querySelector(arguments[0]); return image && image.complete ? image.naturalWidth : 0",
        selector)


def wait(driver, condition, what):
    try:
        # A page being replaced by the next one makes elements stale mid-check, and ChromeDriver
        # may answer a check that lands mid-navigation with a bare WebDriverException ("cannot
        # find context"): check again. A condition that never holds still times out.
        return WebDriverWait(driver, WAIT, poll_frequency=0.1,
                             ignored_exceptions=(WebDriverException, IndexError)).until(condition)
    except Exception as error:
        shown = driver.find_elements(By.TAG_NAME, "main")
        text = shown[0].text if shown else driver.page_source
        detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        raise AssertionError(f"{what} ({type(error).__name__} {detail}; page {driver.current_url}: {text[:400]!r})") from error


def gone(element):
    """The element's page was replaced. ChromeDriver reports an element of a replaced document as
    stale, or, during some navigations, as not found; `EC.staleness_of` knows only the first, and
    `wait` ignores the second as "not yet", so a finished navigation could time out (CI, sign-in:
    'the answer is posted' with the conversation list already shown)."""
    def check(_):
        try:
            element.is_enabled()
            return False
        except (StaleElementReferenceException, NoSuchElementException):
            return True
    return check


audited = []


def audit(driver, name):
    """axe-core's WCAG 2 A and AA rules on the page as it is now: no critical or serious violation."""
    axe = Axe(driver)
    axe.inject()
    results = axe.run(options="{runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}}")
    bad = [f"{v['id']} ({v['impact']}): {[(n['target'], n.get('failureSummary')) for n in v['nodes']][:3]}"
           for v in results["violations"]
           if v["impact"] in ("critical", "serious")]
    expect(not bad, f"accessibility of {name} ({driver.current_url}): {bad}")
    audited.append(name)


def screenshot(driver, name):
    audit(driver, name)
    if arguments.screenshots:
        os.makedirs(arguments.screenshots, exist_ok=True)
        driver.save_screenshot(os.path.join(arguments.screenshots, f"{name}.png"))


def mailed_code(email, after):
    deadline = time.time() + WAIT
    while time.time() < deadline:
        for name in sorted(glob.glob(os.path.join(arguments.outbox, "*.eml")), reverse=True):
            sent = int(os.path.basename(name).split("-")[0])
            text = open(name, encoding="utf-8").read()
            if sent >= after and f"To: {email}\n" in text:
                match = re.search(r"sign-in code is ([^.]+)\.", text)
                if match:
                    return match.group(1)
        time.sleep(0.1)
    raise AssertionError(f"no code mailed to {email}")


def alice_base_url():
    return arguments.alice.split("/?")[0]


def sign_up(driver, url, first, last, email, passphrase, picture=None, resend=False):
    driver.get(url)
    wait(driver, EC.title_contains("Sign in"), "the link opens the sign-in page")
    expect("token=" not in driver.current_url, "the launch token leaves the address bar")
    driver.find_element(By.LINK_TEXT, "Create an account").click()
    wait(driver, EC.title_contains("Create an account"), "the sign-up page")
    screenshot(driver, "sign-up") if passphrase else None
    server = driver.find_element(By.ID, "server")
    server.clear()
    server.send_keys(arguments.relay)
    driver.find_element(By.ID, "firstName").send_keys(first)
    driver.find_element(By.ID, "lastName").send_keys(last)
    driver.find_element(By.ID, "email").send_keys(email)
    driver.find_element(By.ID, "password").send_keys("correct horse battery")
    if picture:
        driver.find_element(By.ID, "avatar").send_keys(picture)
        wait(driver, lambda d: d.find_element(By.ID, "avatar-preview").is_displayed(), "the picked picture is previewed")
    fields = driver.find_elements(By.ID, "passphrase")
    expect(bool(fields) == bool(passphrase), "the page asks for a profile passphrase only when it has none")
    if passphrase and picture:
        # A mistyped confirmation first: the form comes back saying so, with the picture kept, and
        # goes on without choosing the picture again.
        fields[0].send_keys(passphrase)
        driver.find_element(By.ID, "passphrase-again").send_keys(passphrase + "?")
        driver.find_element(By.CSS_SELECTOR, "#welcome-form button[type=submit]").click()
        wait(driver, EC.text_to_be_present_in_element((By.TAG_NAME, "main"), "The two passphrases differ"),
             "a mistyped passphrase confirmation is refused")
        wait(driver, lambda d: image_width(d, "#kept-avatar img") == 64, "the chosen picture is kept and shown")
        expect(driver.find_element(By.ID, "email").get_attribute("value") == email, "the fields are kept")
        driver.find_element(By.ID, "password").send_keys("correct horse battery")
        fields = driver.find_elements(By.ID, "passphrase")
    if passphrase:
        fields[0].send_keys(passphrase)
        driver.find_element(By.ID, "passphrase-again").send_keys(passphrase)
    started = int(time.time() * 1000) - 1000
    driver.find_element(By.CSS_SELECTOR, "#welcome-form button[type=submit]").click()
    wait(driver, EC.presence_of_element_located((By.ID, "answer")), "the e-mail code step")
    expect("e-mail" in driver.find_element(By.CSS_SELECTOR, "label[for=answer]").text, "the step asks the mailed code")
    expect(driver.find_element(By.TAG_NAME, "h1").text == "Step 2 of 2: confirm your e-mail", "the step says where it is")
    if passphrase:
        screenshot(driver, "sign-up-code")
    # A wrong code first: the page says so and asks again.
    driver.find_element(By.ID, "answer").send_keys("WRONG1")
    driver.find_element(By.CSS_SELECTOR, "#step-form button[type=submit]").click()
    wait(driver, EC.text_to_be_present_in_element((By.TAG_NAME, "main"), "Wrong answer"), "a wrong code is reported")
    if resend:
        # "Send the code again" waits out the relay's cool-down, counting down, then mails a new
        # code; the first one no longer works.
        old = mailed_code(email, started)
        button = driver.find_element(By.CSS_SELECTOR, "#resend-form button")
        expect(not button.is_enabled() and "new code in" in driver.find_element(By.ID, "resend-form").text,
               "the resend button counts down the cool-down")
        WebDriverWait(driver, arguments.resend_seconds + WAIT).until(lambda d: button.is_enabled())
        started = int(time.time() * 1000) - 1000
        button.click()
        wait(driver, EC.text_to_be_present_in_element((By.TAG_NAME, "main"), "A new code is on its way"),
             "a new code is announced")
        deadline = time.time() + WAIT
        while mailed_code(email, started) == old and time.time() < deadline:
            time.sleep(0.2)
    code = mailed_code(email, started)
    # Right after a wrong answer the server asks for a pause; the page says so and keeps the step.
    for attempt in range(5):
        driver.find_element(By.ID, "answer").send_keys(code)
        driver.find_element(By.CSS_SELECTOR, "#step-form button[type=submit]").click()
        wait(driver, lambda d: "Settings" in d.title or "Wait" in d.find_element(By.TAG_NAME, "main").text,
             "the code is taken or the page asks to wait")
        if "Settings" in driver.title:
            break
        pause = re.search(r"Wait (\d+) second", main_text(driver))
        time.sleep(int(pause.group(1)) + 0.5 if pause else 1)
    # Right after sign-up: choose how to sign in (thesis 003, fig. 3.5), or skip it.
    wait(driver, EC.title_contains("Settings"), f"{first} lands on the sign-in settings")
    expect("Your account is ready" in driver.find_element(By.CSS_SELECTOR, ".banner.notice").text
           and driver.find_elements(By.ID, "chain-form"), "which welcome them and offer the steps")
    expect(email in driver.find_element(By.CLASS_NAME, "me").text, "the bar shows who is signed in")
    driver.find_element(By.LINK_TEXT, "Chats").click()
    wait(driver, EC.title_contains("Chats"), f"{first} skips it for the conversation list")


def evaluate(challenge):
    """The challenge left to right without precedence (the mapping sends every sign to itself)."""
    tokens = challenge.replace("−", "-").replace("×", "*").replace("÷", "/").split()
    value = int(tokens[0])
    for sign, operand in zip(tokens[1::2], tokens[2::2]):
        operand = int(operand)
        value = {"+": value + operand, "-": value - operand, "*": value * operand,
                 "/": value // operand if operand else 0}[sign]
    return value


def totp(secret):
    """The current code, as an authenticator app computes it (pyotp: RFC 6238, SHA1, 30 s, 6 digits)."""
    return pyotp.TOTP(secret).now()


def answer_step(driver, answer):
    field = driver.find_element(By.ID, "answer")
    field.clear()
    field.send_keys(answer)
    driver.find_element(By.CSS_SELECTOR, "#step-form button[type=submit]").click()
    # The old page goes first (its field goes stale), then the answer's page loads.
    wait(driver, gone(field), "the answer is posted")
    wait(driver, lambda d: d.execute_script("return document.readyState") == "complete", "the step's answer page")


def click_in_message(driver, containing, selector):
    """Clicks `selector` inside the own bubble whose text contains `containing`, looking again if
    the live region replaced the bubbles meanwhile."""
    for _ in range(50):
        try:
            bubble = [m for m in driver.find_elements(By.CSS_SELECTOR, "ol.messages .mine") if containing in m.text][0]
            bubble.find_element(By.CSS_SELECTOR, selector).click()
            return
        except (IndexError, NoSuchElementException, StaleElementReferenceException):
            time.sleep(0.1)
    raise AssertionError(f"no own message with {containing!r} to click {selector} in")


def message_action(driver, containing, action, side="mine"):
    """Opens the ⋯ menu of the `side` bubble whose text contains `containing` (hovering it, as a
    mouse user does) and clicks the item `action`, looking again if the live region replaced the
    bubbles meanwhile."""
    for _ in range(50):
        try:
            bubble = [m for m in driver.find_elements(By.CSS_SELECTOR, f"ol.messages .{side}") if containing in m.text][0]
            ActionChains(driver).move_to_element(bubble).perform()
            menu = bubble.find_element(By.CSS_SELECTOR, ".message-menu")
            if menu.get_attribute("open") is None:
                menu.find_element(By.TAG_NAME, "summary").click()
            items = [i for i in menu.find_elements(By.CSS_SELECTOR, ".menu-items a, .menu-items button") if i.text == action]
            items[0].click()
            return
        except (IndexError, NoSuchElementException, StaleElementReferenceException, WebDriverException):
            time.sleep(0.1)
    raise AssertionError(f"no {side} message with {containing!r} offering {action!r}")


def open_menu(driver, selector):
    """Opens the <details> menu `selector` (a click on its ⋯ button) unless it is open."""
    menu = driver.find_element(By.CSS_SELECTOR, selector)
    if menu.get_attribute("open") is None:
        menu.find_element(By.TAG_NAME, "summary").click()
    return menu


def main_text(driver):
    """The page's main text, read again if the page was replaced while reading it."""
    for _ in range(50):
        try:
            return driver.find_element(By.TAG_NAME, "main").text
        except (NoSuchElementException, StaleElementReferenceException):
            time.sleep(0.1)
    return driver.find_element(By.TAG_NAME, "main").text


def png(width, height):
    """A small RGB gradient as a PNG (no imaging library needed)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + b"".join(bytes((x * 4 % 256, y * 5 % 256, 128)) for x in range(width))
                    for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


alice_email = f"alice-{arguments.suffix}@example.com"
bob_email = f"bob-{arguments.suffix}@example.com"
alice, bob = browser(), browser()
pictures = tempfile.mkdtemp(prefix="confidant-app-picture-")
try:
    portrait = os.path.join(pictures, "alice.png")
    with open(portrait, "wb") as f:
        f.write(png(64, 64))
    sign_up(alice, arguments.alice, "Alice", "Liddell", alice_email, "alice's passphrase", portrait)
    sign_up(bob, arguments.bob, "Bob", "Builder", bob_email, None, resend=True)
    screenshot(bob, "conversations-empty")

    # Alice finds bob and writes: a hostile message first, then a friendly one, with Enter.
    alice.get(arguments.alice.split("/?")[0] + "/new?q=bob-" + arguments.suffix)
    wait(alice, EC.presence_of_element_located((By.CSS_SELECTOR, "ul.people button")), "bob is in the directory")
    screenshot(alice, "new-message")
    alice.find_element(By.CSS_SELECTOR, "ul.people button").click()
    wait(alice, EC.presence_of_element_located((By.ID, "draft")), "the chat with bob opens")
    hostile = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
    alice.find_element(By.ID, "draft").send_keys(hostile + Keys.ENTER)
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "<script>"),
         "the hostile message shows as text in alice's chat")
    alice.execute_script("window.__stayed = true")
    alice.find_element(By.ID, "draft").send_keys("Hello Bob, it's Alice" + Keys.ENTER)
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "Hello Bob"),
         "alice's message shows in her chat")
    expect(alice.execute_script("return window.__stayed") is True, "sending did not reload alice's page")
    expect(alice.find_element(By.ID, "draft").get_attribute("value") == "", "the draft is cleared after sending")

    # Bob's list, open since before, shows the conversation without a reload.
    bob.execute_script("window.__stayed = true")
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ul.conversations"), "Alice Liddell"),
         "alice's conversation appears in bob's list without reloading")
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ul.conversations"), "Hello Bob"),
         "the preview is the latest message")
    expect(bob.execute_script("return window.__stayed") is True, "bob's list updated in place")
    wait(bob, lambda d: image_width(d, "ul.conversations img.avatar") == 64,
         "bob sees the picture alice chose at sign-up")
    wait(bob, lambda d: d.find_element(By.CSS_SELECTOR, ".badge").text == "2", "two unread messages")
    wait(bob, lambda d: d.title.startswith("(2) Chats"), "the title counts them")
    screenshot(bob, "conversations")

    bob.find_element(By.CSS_SELECTOR, "ul.conversations a").click()
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "Hello Bob"), "bob's chat")
    # On a wide window the chat opens beside the list, without loading the page again.
    expect(bob.execute_script("return window.__stayed") is True, "the chat opened in place")
    expect("/chat/" in bob.current_url, f"the address names the chat: {bob.current_url}")
    expect(bob.find_element(By.CSS_SELECTOR, ".pane-list").is_displayed(), "the list stays beside the chat")
    expect(bob.find_element(By.CSS_SELECTOR, ".pane-list a.conversation").get_attribute("aria-current") == "page",
           "the open conversation is marked in the list")
    wait(bob, lambda d: d.find_element(By.CSS_SELECTOR, "ol.messages .day").text == "Today",
         "a day separator heads today's messages")
    wait(bob, lambda d: d.execute_script("""
        const divider = document.querySelector('ol.messages .new-messages');
        return divider !== null && divider.nextElementSibling.textContent.includes('window.__xss = 1');"""),
         "a New messages divider before the first of the two bob had not read (alice's hostile one)")
    expect(bob.execute_script("""
        const time = document.querySelector('ol.messages .message time');
        return /^\d\d:\d\d$/.test(time.textContent) && / at \d\d:\d\d$/.test(time.title);"""),
           "each line has its time, and its full date on hover")
    # Read through wait(): the live chat may replace its lines while they are read.
    texts = wait(bob, lambda d: [element.text for element in d.find_elements(By.CSS_SELECTOR, "ol.messages .text")],
                 "the chat's lines")
    expect(hostile in texts, f"the hostile message is shown as its text: {texts}")
    expect(bob.execute_script("return window.__xss") is None, "the hostile message ran nothing in bob's page")
    expect(alice.execute_script("return window.__xss") is None, "nor in alice's")
    expect(not bob.find_elements(By.CSS_SELECTOR, "ol.messages img, ol.messages script"),
           "no element was made from the message")

    # Bob answers; alice's open chat shows it without reloading.
    bob.find_element(By.ID, "draft").send_keys("Hi Alice!" + Keys.ENTER)
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "Hi Alice!"),
         "bob's answer appears in alice's chat without reloading")
    expect(alice.execute_script("return window.__stayed") is True, "alice's chat updated in place")
    wait(bob, lambda d: any(word in d.find_elements(By.CSS_SELECTOR, "ol.messages .mine .status")[-1].text
                            for word in ("sent ✓", "delivered", "read")), "bob's message is sent")
    screenshot(bob, "chat")
    # Read in one script: the live region may replace the bubbles between two calls.
    lefts = bob.execute_script("""
        const last = (selector) => [...document.querySelectorAll(selector)].pop();
        const mine = last('ol.messages .mine'), theirs = last('ol.messages .theirs');
        return mine && theirs ? [mine.getBoundingClientRect().left, theirs.getBoundingClientRect().left] : null;""")
    expect(lefts and lefts[0] > lefts[1], f"own bubbles right, peer's left: {lefts}")

    # Receipts: alice's messages were read in bob's open chat (✓✓ read), live in her page.
    wait(alice, lambda d: "read ✓✓" in d.find_elements(By.CSS_SELECTOR, "ol.messages .mine .status")[-1].text,
         "alice sees that bob read her message")

    # A picture through the chat: encrypted in alice's app, shown in bob's chat without reloading.
    snapshot = os.path.join(pictures, "snapshot.png")
    with open(snapshot, "wb") as f:
        f.write(png(48, 32))
    bob.execute_script("window.__stayed = true")
    alice.find_element(By.CSS_SELECTOR, ".chat-tools summary").click()
    alice.find_element(By.ID, "attach-files").send_keys(snapshot)
    alice.find_element(By.ID, "attach-caption").send_keys("a snapshot")
    alice.find_element(By.CSS_SELECTOR, "#attach-form button[type=submit]").click()
    wait(bob, EC.presence_of_element_located((By.CSS_SELECTOR, "ol.messages .files img")), "the picture reaches bob")
    wait(bob, lambda d: image_width(d, "ol.messages .files img") == 48,
         "bob's page shows the picture (decrypted by his app)")
    expect(bob.execute_script("return window.__stayed") is True, "bob's chat updated in place")
    wait(bob, lambda d: d.execute_script("""
        const pane = document.getElementById('live');
        return pane.scrollHeight - pane.scrollTop - pane.clientHeight < 80;"""),
         "the newest line is in view once the picture loaded")
    screenshot(bob, "chat-picture")
    # The picture opens in the app's viewer, not as the raw file; Escape closes it.
    bob.find_element(By.CSS_SELECTOR, "ol.messages .files a.photo-link").click()
    wait(bob, lambda d: d.execute_script(
        "const v = document.querySelector('dialog.photo-viewer[open] img'); return v && v.complete ? v.naturalWidth : 0") == 48,
        "the picture opens in the app's viewer")
    expect("/chat/" in bob.current_url and "/files/" not in bob.current_url, "without leaving the chat")
    screenshot(bob, "chat-viewer")
    ActionChains(bob).send_keys(Keys.ESCAPE).perform()
    wait(bob, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog.photo-viewer[open]"), "Escape closes the viewer")

    # Files dropped on the chat, pasted into the composer, or picked with its 📎 button go the
    # same way, the typed draft becoming the caption.
    def bob_has(name):
        wait(bob, lambda d: name in d.find_element(By.CSS_SELECTOR, "ol.messages").text, f"{name} reaches bob")

    def fresh_composer():
        wait(alice, lambda d: d.execute_script(
            "const b = document.querySelector('[data-attach]'); return b && !b.hidden && document.readyState === 'complete'"),
            "the composer with its 📎 button")

    fresh_composer()
    alice.execute_script("""
        const files = new DataTransfer();
        files.items.add(new File(['dropped'], 'dropped.txt', {type: 'text/plain'}));
        document.getElementById('draft').value = 'dropped with a caption';
        const pane = document.querySelector('[data-attach]').closest('.pane-main') || document.body;
        pane.dispatchEvent(new DragEvent('dragover', {dataTransfer: files, bubbles: true, cancelable: true}));
        pane.dispatchEvent(new DragEvent('drop', {dataTransfer: files, bubbles: true, cancelable: true}));""")
    bob_has("dropped.txt")
    bob_has("dropped with a caption")
    fresh_composer()
    alice.execute_script("""
        const files = new DataTransfer();
        files.items.add(new File(['pasted'], 'pasted.txt', {type: 'text/plain'}));
        document.getElementById('draft').dispatchEvent(
            new ClipboardEvent('paste', {clipboardData: files, bubbles: true, cancelable: true}));""")
    bob_has("pasted.txt")
    fresh_composer()
    picked = os.path.join(pictures, "picked.txt")
    with open(picked, "w") as f:
        f.write("picked")
    alice.execute_cdp_cmd("Page.setInterceptFileChooserDialog", {"enabled": True})
    alice.find_element(By.CSS_SELECTOR, "[data-attach]").click()
    alice.find_element(By.ID, "attach-files").send_keys(picked)
    bob_has("picked.txt")
    alice.execute_cdp_cmd("Page.setInterceptFileChooserDialog", {"enabled": False})

    # Alice corrects her greeting and deletes the hostile message, for both of them.
    alice.get(alice_base_url() + "/chat/" + alice.current_url.rstrip("/").split("/")[-1])
    # The menus work from the keyboard: Enter on the ⋯ button opens one, Escape closes it again.
    alice.execute_script("document.querySelector('ol.messages .mine .message-menu summary').focus()")
    ActionChains(alice).send_keys(Keys.ENTER).perform()
    wait(alice, lambda d: d.execute_script("return document.querySelector('ol.messages .mine .message-menu').open"),
         "Enter opens a message's menu")
    ActionChains(alice).send_keys(Keys.ESCAPE).perform()
    wait(alice, lambda d: d.execute_script("""
        const menu = document.querySelector('ol.messages .mine .message-menu');
        return !menu.open && document.activeElement === menu.querySelector('summary');"""),
         "Escape closes it and leaves the focus on its button")
    # On a touch screen a long press on the bubble opens its menu; a short tap does not.
    point = alice.execute_script("""
        const text = document.querySelector('ol.messages .mine .text').getBoundingClientRect();
        return {x: Math.round(text.left + 4), y: Math.round(text.top + text.height / 2)};""")
    touch = [{"x": point["x"], "y": point["y"], "id": 1}]
    alice.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": touch})
    alice.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    expect(not alice.execute_script("return document.querySelector('ol.messages .mine .message-menu').open"),
           "a tap on a message opens no menu")
    alice.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": touch})
    wait(alice, lambda d: d.execute_script("return document.querySelector('ol.messages .mine .message-menu').open"),
         "a long press on a message opens its menu")
    alice.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    ActionChains(alice).send_keys(Keys.ESCAPE).perform()
    # Editing happens in the composer: Escape gives the draft back, Enter saves.
    alice.find_element(By.ID, "draft").send_keys("half a thought")
    message_action(alice, "Hello Bob", "Edit")
    wait(alice, lambda d: d.find_element(By.ID, "editing").is_displayed(), "the composer says it edits")
    expect(alice.find_element(By.ID, "draft").get_attribute("value") == "Hello Bob, it's Alice",
           "with the message's text in it")
    alice.find_element(By.ID, "draft").send_keys(Keys.ESCAPE)
    wait(alice, lambda d: not d.find_element(By.ID, "editing").is_displayed(), "Escape cancels the edit")
    expect(alice.find_element(By.ID, "draft").get_attribute("value") == "half a thought", "and gives the draft back")
    alice.find_element(By.ID, "draft").clear()
    message_action(alice, "Hello Bob", "Edit")
    field = alice.find_element(By.ID, "draft")
    field.clear()
    field.send_keys("Hello Bob, it's Alice (edited)" + Keys.ENTER)
    wait(alice, lambda d: not d.find_element(By.ID, "editing").is_displayed(), "saved from the composer")
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "it's Alice (edited)"),
         "bob sees the edited text")
    expect(bob.execute_script("""
        return [...document.querySelectorAll('ol.messages .theirs')].some(
            (m) => m.textContent.includes('(edited)') && m.querySelector('.meta').textContent.includes('edited'));"""),
           "marked edited")
    # Reactions: bob reacts from the message's menu, alice sees it live; the same emoji again takes it back.
    message_action(bob, "it's Alice (edited)", "👍", side="theirs")
    wait(alice, lambda d: any("👍 1" in r.text for r in d.find_elements(By.CSS_SELECTOR, "ol.messages .mine .reactions")),
         "alice sees bob's reaction under her message")
    expect(alice.execute_script("""
        return [...document.querySelectorAll('ol.messages .mine .reaction')].some((r) => r.title.startsWith('Bob'));"""),
           "the reaction says who")
    wait(bob, lambda d: d.find_elements(By.CSS_SELECTOR, "ol.messages .theirs .reaction.mine"), "bob's own is marked his")
    message_action(bob, "it's Alice (edited)", "👍", side="theirs")
    wait(alice, lambda d: not d.find_elements(By.CSS_SELECTOR, "ol.messages .mine .reactions"), "taken back")
    # Replies: bob answers that message from its menu; alice sees the quote above his text.
    message_action(bob, "it's Alice (edited)", "Reply", side="theirs")
    wait(bob, lambda d: "it's Alice (edited)" in d.find_element(By.ID, "replying").text, "the composer says what it answers")
    bob.find_element(By.ID, "draft").send_keys("Sounds good" + Keys.ENTER)
    wait(alice, lambda d: any("it's Alice (edited)" in q.text for q in d.find_elements(By.CSS_SELECTOR, "ol.messages .theirs .quote")),
         "alice sees bob's reply quoting her message")
    wait(bob, lambda d: not d.find_element(By.ID, "replying").is_displayed(), "once sent, the next message answers nothing")
    # Deleting asks how: for everyone (one's own), or for me.
    message_action(alice, "<script>", "Delete…")
    wait(alice, EC.presence_of_element_located((By.ID, "delete-for-everyone-form")), "the page asks how to delete")
    screenshot(alice, "chat-delete")
    alice.find_element(By.CSS_SELECTOR, "#delete-for-everyone-form button").click()
    wait(bob, lambda d: "<script>" not in d.find_element(By.CSS_SELECTOR, "ol.messages").text,
         "the deleted message is gone from bob's chat")
    wait(bob, lambda d: "This message was deleted" in d.find_element(By.CSS_SELECTOR, "ol.messages").text,
         "a deleted line stays")
    message_action(bob, "Hi Alice!", "Delete…")
    wait(bob, EC.presence_of_element_located((By.ID, "delete-for-me-form")), "bob is asked how to delete")
    bob.find_element(By.CSS_SELECTOR, "#delete-for-me-form button").click()
    wait(bob, lambda d: "Hi Alice!" not in d.find_element(By.CSS_SELECTOR, "ol.messages").text,
         "deleted for bob, it goes from his chat")
    expect("Hi Alice!" in alice.find_element(By.CSS_SELECTOR, "ol.messages").text, "alice keeps it")
    # A chat in a hidden tab stops reading: what arrives stays unread (the list counts it) until
    # the tab is looked at. (Its stream closes at once; the app notices within 2 s, so alice
    # writes again until a message comes after that.)
    def bob_sees_tab(state):
        bob.execute_script(f"""
            Object.defineProperty(document, 'visibilityState', {{ configurable: true, get: () => '{state}' }});
            document.dispatchEvent(new Event('visibilitychange'));""")
    bob_sees_tab("hidden")
    for attempt in range(10):
        away = f"while you were away {attempt}"
        alice.find_element(By.ID, "draft").send_keys(away + Keys.ENTER)
        wait(bob, lambda d: away in d.find_element(By.CSS_SELECTOR, ".pane-list").text, "bob's list has it")
        if bob.find_elements(By.CSS_SELECTOR, ".pane-list .badge"):
            break
    expect(bob.find_elements(By.CSS_SELECTOR, ".pane-list .badge"), "unread while bob's tab is hidden")
    bob_sees_tab("visible")
    wait(bob, lambda d: away in d.find_element(By.CSS_SELECTOR, "ol.messages").text, "looked at, the chat shows it")
    wait(bob, lambda d: not d.find_elements(By.CSS_SELECTOR, ".pane-list .badge"), "and reads it")
    # Drafts: what bob types and leaves is kept (sealed on his device) and shown in the list; back
    # after a reload; emptied, it goes.
    bob.find_element(By.ID, "draft").send_keys("a thought for later")
    wait(bob, lambda d: d.find_elements(By.CSS_SELECTOR, ".pane-list .draft-mark")
         and "a thought for later" in d.find_element(By.CSS_SELECTOR, ".pane-list .preview").text,
         "the list shows bob's kept draft")
    bob.refresh()
    wait(bob, lambda d: d.find_element(By.ID, "draft").get_attribute("value") == "a thought for later",
         "the draft is in the composer after a reload")
    bob.find_element(By.ID, "draft").send_keys(Keys.CONTROL, "a")
    bob.find_element(By.ID, "draft").send_keys(Keys.BACK_SPACE)
    wait(bob, lambda d: not d.find_elements(By.CSS_SELECTOR, ".pane-list .draft-mark"), "emptied, the draft goes")
    statuses = bob.execute_script("""
        const token = document.querySelector('input[name="_csrf"]').value;
        const post = (url, draft) => fetch(url, { method: 'POST', body: new URLSearchParams({ _csrf: token, draft }) })
            .then((r) => r.status);
        const chat = document.getElementById('composer').getAttribute('data-draft');
        return Promise.all([post('/chat/0192d7e0-0000-7000-8000-000000000001/draft', 'x'),
                            post('/groups/0192d7e0-0000-7000-8000-000000000001/draft', 'x'),
                            post(chat, 'x'.repeat(61441)), post(chat, '')]);""")
    expect(statuses == [404, 404, 413, 204], f"a draft for no such chat or group, or too long, is refused: {statuses}")
    # Mark as unread: from the chat's menu, back to the list with the chat counted unread until opened.
    open_menu(bob, ".head-menu")
    bob.find_element(By.XPATH, "//button[normalize-space()='Mark as unread']").click()
    wait(bob, lambda d: d.title.startswith("(1) Chats"), "marked unread, the title counts it")
    expect(bob.find_element(By.CSS_SELECTOR, "ul.conversations .badge").text == "1", "and the row has a badge")
    bob.find_element(By.CSS_SELECTOR, "ul.conversations a.conversation").click()
    wait(bob, EC.presence_of_element_located((By.ID, "draft")), "bob opens the chat again")
    wait(bob, lambda d: not d.find_elements(By.CSS_SELECTOR, ".pane-list .badge"), "opened, it is read")
    # Search: the box above the list finds bob's reply (a word it begins, any case); its result
    # opens the chat at that message.
    box = bob.find_element(By.CSS_SELECTOR, ".search-box input[name=q]")
    box.send_keys("SOUND" + Keys.ENTER)
    wait(bob, EC.title_contains("Search"), "the search page")
    results = bob.find_elements(By.CSS_SELECTOR, ".search-results li")
    expect(len(results) == 1 and "Sounds good" in results[0].text and "You → Alice" in results[0].text,
           f"one result, bob's reply, saying where: {[r.text for r in results]}")
    screenshot(bob, "search")
    results[0].find_element(By.TAG_NAME, "a").click()
    wait(bob, lambda d: d.execute_script("""
        const line = document.querySelector('ol.messages .message.pointed');
        const pane = document.getElementById('live').getBoundingClientRect();
        if (!line || !line.textContent.includes('Sounds good')) return false;
        const box = line.getBoundingClientRect();
        return box.top >= pane.top && box.bottom <= pane.bottom;"""), "the result opens the chat at the message, marked")
    statuses = bob.execute_script("""
        return Promise.all(['/search?q=x&in=not-an-id', '/search?q=x&in=0192d7e0-0000-7000-8000-000000000001',
                            '/search?q=' + 'x'.repeat(201)].map((url) => fetch(url).then((r) => r.status)));""")
    expect(statuses == [400, 404, 400], f"a search of no chat, or too long, is refused: {statuses}")
    bob.execute_script("window.__stayed = true")

    # Disappearing messages: alice turns them on, bob's chat says so; then off again.
    from selenium.webdriver.support.ui import Select
    wait(alice, EC.presence_of_element_located((By.ID, "timer-form")), "alice's chat")
    open_menu(alice, ".head-menu")
    Select(alice.find_element(By.ID, "timer")).select_by_value("3600")
    alice.find_element(By.CSS_SELECTOR, "#timer-form button[type=submit]").click()
    wait(bob, lambda d: d.find_element(By.ID, "timer-badge").is_displayed()
         and "1 h" in d.find_element(By.ID, "timer-badge").text, "bob's chat header shows the timer")
    open_menu(alice, ".head-menu")
    Select(alice.find_element(By.ID, "timer")).select_by_value("0")
    alice.find_element(By.CSS_SELECTOR, "#timer-form button[type=submit]").click()
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "turned disappearing messages off"),
         "and that it is off again")
    wait(bob, lambda d: not d.find_element(By.ID, "timer-badge").is_displayed(), "the badge goes")
    expect(not bob.find_elements(By.CSS_SELECTOR, "#live .banner.notice, .pane-list .key-changed"),
           "a timer notice is a line of the chat, not a key-change warning")
    alice.execute_script("window.__stayed = true")

    # The relay goes down mid-chat: alice's message waits on her device, the pages say they are
    # offline, and when the relay is back the message goes by itself and reaches bob's open chat.
    os.kill(arguments.relay_pid, signal.SIGTERM)
    port = int(arguments.relay.rsplit(":", 1)[1])
    deadline = time.time() + WAIT
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(0.2)
        except OSError:
            break
    alice.find_element(By.ID, "draft").send_keys("Written while the server was down" + Keys.ENTER)
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "Written while the server was down"),
         "the message written offline shows in alice's chat")
    wait(alice, EC.text_to_be_present_in_element((By.ID, "live"), "Offline"), "alice's chat says it is offline")
    last_status = last_text(alice, "ol.messages .mine .status")
    expect(last_status is not None, "alice's message has a status")
    expect("not sent" not in last_status, f"the message waits rather than fails: {last_status!r}")
    restarted = subprocess.Popen(
        [arguments.relay_exe, "--port", str(port), "--data-dir", arguments.relay_data, "--log-level", "error",
         "--email-code-resend-seconds", str(arguments.resend_seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    expect("listening" in restarted.stdout.readline(), "the relay starts again")
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "Written while the server was down"),
         "the message reaches bob's open chat once the relay is back")
    wait(alice, lambda d: d.find_elements(By.CSS_SELECTOR, "ol.messages .mine .status")[-1].text
         in ("sent ✓", "delivered ✓✓", "read ✓✓"), "alice's message is marked sent")
    wait(alice, lambda d: "Offline" not in d.find_element(By.ID, "live").text, "alice's chat is online again")
    expect(alice.execute_script("return window.__stayed") is True, "all without reloading alice's page")

    # Verification: safety numbers with a QR code each, then marked verified.
    bob_id = alice.current_url.rstrip("/").split("/")[-1]
    alice_base = arguments.alice.split("/?")[0]
    open_menu(alice, ".head-menu")
    alice.find_element(By.LINK_TEXT, "Verify").click()
    wait(alice, EC.presence_of_element_located((By.CSS_SELECTOR, ".safety img")), "the verify page")
    digits = alice.find_element(By.CSS_SELECTOR, ".digits").text.replace(" ", "")
    expect(re.fullmatch(r"\d{60}", digits) is not None, f"a 60-digit safety number: {digits}")
    image = alice.find_element(By.CSS_SELECTOR, ".safety img")
    wait(alice, lambda driver: driver.execute_script("return arguments[0].naturalWidth", image) > 0,
         "the QR code image loads")
    screenshot(alice, "verify")
    alice.find_element(By.CSS_SELECTOR, "#verify-form button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".state"), "Verified"), "marked verified")
    expect("verify" in alice.current_url and "Verified ✓" in alice.find_element(By.ID, "unverify-form").text,
           "the page says so and offers to unverify")
    alice.find_element(By.CSS_SELECTOR, "#unverify-form button").click()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".state"), "Not verified"), "unverified")
    alice.find_element(By.CSS_SELECTOR, "#verify-form button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".state"), "Verified"), "verified again")
    alice.get(alice_base + "/chat/" + bob_id + "?lines=7")
    wait(alice, EC.text_to_be_present_in_element((By.TAG_NAME, "main"), "in steps of 200"),
         "a window of lines the pages never offer is refused, saying which there are")
    alice.get(alice_base + "/chat/" + bob_id + "?lines=400")
    wait(alice, lambda d: d.find_element(By.CSS_SELECTOR, ".chat-head .verified").is_displayed(),
         "the chat's header shows bob is verified")
    wait(alice, lambda d: d.find_elements(By.CSS_SELECTOR, "ul.conversations a[aria-current] .verified-badge"),
         "the conversation list shows bob is verified")
    expect(not alice.find_elements(By.CSS_SELECTOR, "a[data-earlier]"), "a short chat offers no earlier lines")

    # Bob signs in on a second device (the CLI, a new profile): alice's open chat shows the
    # key-change banner live, and her next message waits for her confirmation (she verified bob).
    started = int(time.time() * 1000)
    login = subprocess.Popen(
        [arguments.cli, "account", "login", "--profile", "bob-laptop", "--email", bob_email, "--password-stdin",
         "--server", arguments.relay, "--scrypt-log2n", "10"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "CONFIDANT_HOME": arguments.home, "CONFIDANT_PASSPHRASE": "laptop passphrase"})
    login.stdin.write("correct horse battery\n")
    login.stdin.flush()
    # A new device always adds the e-mail code to the sign-in (docs/SECURITY.md).
    code = mailed_code(bob_email, started)
    login.stdin.write(code + "\n")
    login.stdin.flush()
    output, _ = login.communicate(timeout=WAIT)
    expect(login.returncode == 0, f"bob's second device signs in: {output}")
    alice.get(alice_base + "/chat/" + bob_id)
    wait(alice, EC.text_to_be_present_in_element((By.ID, "live"), "security key changed"),
         "alice's chat shows that bob's key changed")
    expect(not alice.find_elements(By.CSS_SELECTOR, "ul.conversations a[aria-current] .verified-badge"),
           "bob's row is no longer marked verified once his keys changed")
    screenshot(alice, "key-change")
    alice.find_element(By.ID, "draft").send_keys("Is this really you?" + Keys.ENTER)
    wait(alice, EC.presence_of_element_located((By.CSS_SELECTOR, "input[name=confirmKeyChange]")),
         "a message to a verified contact whose key changed waits for confirmation")
    expect(alice.find_element(By.ID, "draft").get_attribute("value") == "Is this really you?", "the draft is kept")
    alice.find_element(By.CSS_SELECTOR, "#composer button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ol.messages"), "Is this really you?"),
         "sent after the confirmation")

    # The vault: create it, add a memory with a photo and a video, see the photo and play the
    # video, which the app decrypts per range request.
    work = tempfile.mkdtemp(prefix="confidant-app-media-")
    photo, clip = os.path.join(work, "sunset.png"), os.path.join(work, "clip.webm")
    with open(photo, "wb") as f:
        f.write(png(64, 48))
    subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=duration=2:size=320x240:rate=15",
                    "-vf", "noise=alls=60:allf=t+u", "-c:v", "libvpx", "-b:v", "2M", "-y", clip], check=True, timeout=120)
    alice.get(alice_base + "/vault")
    wait(alice, EC.presence_of_element_located((By.ID, "vault-create")), "the vault offers to be created")
    alice.find_element(By.ID, "vault-passphrase").send_keys("vault passphrase")
    alice.find_element(By.ID, "vault-confirmation").send_keys("vault passfrase")
    alice.find_element(By.CSS_SELECTOR, "#vault-create button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "p.error"), "The two passphrases differ"),
         "a mistyped confirmation is refused")
    alice.find_element(By.ID, "vault-passphrase").send_keys("vault passphrase")
    alice.find_element(By.ID, "vault-confirmation").send_keys("vault passphrase")
    alice.find_element(By.CSS_SELECTOR, "#vault-create button[type=submit]").click()
    wait(alice, EC.presence_of_element_located((By.ID, "memory-form")), "the vault is open")
    alice.find_element(By.ID, "chapter").send_keys("Summer")
    alice.find_element(By.ID, "text").send_keys("The evening at the lake")
    alice.find_element(By.ID, "files").send_keys(photo + "\n" + clip)
    alice.find_element(By.CSS_SELECTOR, "#memory-form button[type=submit]").click()
    wait(alice, EC.presence_of_element_located((By.CSS_SELECTOR, ".album img")), "the memory shows its photo")
    expect("The evening at the lake" in alice.find_element(By.CSS_SELECTOR, ".memory").text, "the memory's text")
    image = alice.find_element(By.CSS_SELECTOR, ".album img")
    wait(alice, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) == 64,
         "the photo decodes (64 px wide)")
    video = alice.find_element(By.CSS_SELECTOR, ".album video")
    alice.execute_script("arguments[0].muted = true; arguments[0].play().catch(() => {})", video)
    wait(alice, lambda d: d.execute_script("return arguments[0].readyState", video) >= 2,
         "the video has data to play (readyState >= 2)")
    screenshot(alice, "vault")
    source = video.get_attribute("src")
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in alice.get_cookies())
    clip_bytes = open(clip, "rb").read()
    expect(len(clip_bytes) > 200_000, f"the clip spans several 64 KiB segments ({len(clip_bytes)} bytes)")
    ranged = urllib.request.urlopen(urllib.request.Request(source, headers={"Cookie": cookie, "Range": "bytes=100-70099"}))
    expect(ranged.status == 206, f"a range request is answered 206, was {ranged.status}")
    expect(ranged.headers["Content-Range"] == f"bytes 100-70099/{len(clip_bytes)}", ranged.headers["Content-Range"])
    expect(ranged.read() == clip_bytes[100:70100], "the range decrypts to the file's bytes (across a segment edge)")
    whole = urllib.request.urlopen(urllib.request.Request(source, headers={"Cookie": cookie}))
    expect(whole.read() == clip_bytes, "the whole file decrypts to what was added")

    # A memory with neither text nor files is refused in place by the uploading script.
    alice.execute_script("window.__stayed = true")
    alice.find_element(By.CSS_SELECTOR, ".add-memory summary").click()
    alice.find_element(By.CSS_SELECTOR, "#memory-form button[type=submit]").click()
    wait(alice, lambda d: d.find_element(By.CSS_SELECTOR, ".upload-error").is_displayed(), "the refusal is shown")
    expect("text or at least one file" in alice.find_element(By.CSS_SELECTOR, ".upload-error").text,
           "it says what is missing")
    expect(alice.execute_script("return window.__stayed") is True, "without leaving the page")

    # The photo viewer: the photo large, its place in the vault, back with Escape.
    alice.find_element(By.CSS_SELECTOR, ".album a.photo-link").click()
    wait(alice, EC.presence_of_element_located((By.ID, "photo")), "the photo viewer")
    screenshot(alice, "vault-photo")
    large = alice.find_element(By.ID, "photo")
    wait(alice, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", large) == 64,
         "the viewer shows the photo")
    expect("1 of 1" in alice.find_element(By.TAG_NAME, "figcaption").text, "its place among the vault's photos")
    alice.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    wait(alice, EC.presence_of_element_located((By.ID, "memory-form")), "Escape goes back to the vault")

    # Editing a memory: new text and date; the files stay.
    alice.find_element(By.LINK_TEXT, "Edit").click()
    wait(alice, EC.presence_of_element_located((By.ID, "edit-form")), "the edit page")
    screenshot(alice, "vault-edit")
    # A save that fails keeps what was typed, and says why.
    text = alice.find_element(By.ID, "edit-text")
    text.clear()
    text.send_keys("Words typed before a failed save")
    alice.execute_script("""
        const form = document.getElementById('edit-form');
        form.noValidate = true;
        const date = document.getElementById('edit-date');
        date.type = 'text';
        date.value = 'someday';""")
    alice.find_element(By.CSS_SELECTOR, "#edit-form button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "p.error"), "must be a day"), "the failed save says why")
    expect(alice.find_element(By.ID, "edit-text").get_attribute("value") == "Words typed before a failed save",
           "and the typed text is still in the form")
    text = alice.find_element(By.ID, "edit-text")
    text.clear()
    text.send_keys("The evening at the lake, with Bob")
    alice.execute_script("document.getElementById('edit-date').value = '2024-06-01'")
    alice.find_element(By.CSS_SELECTOR, "#edit-form button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".memory"), "with Bob"), "the edited text")
    memory = alice.find_element(By.CSS_SELECTOR, ".memory")
    expect("2024" in memory.find_element(By.TAG_NAME, "time").get_attribute("datetime"), "the new date")
    expect(len(memory.find_elements(By.CSS_SELECTOR, ".album img, .album video")) == 2, "the files stay")

    # Deleting a memory asks first; Cancel keeps it, the confirmation deletes it alone.
    alice.find_element(By.CSS_SELECTOR, ".add-memory summary").click()
    alice.find_element(By.ID, "chapter").clear()
    alice.find_element(By.ID, "chapter").send_keys("Summer")
    alice.find_element(By.ID, "text").send_keys("A memory to let go")
    alice.find_element(By.CSS_SELECTOR, "#memory-form button[type=submit]").click()
    wait(alice, lambda d: "A memory to let go" in d.find_element(By.TAG_NAME, "main").text, "the second memory")
    def delete_link():
        memory = [m for m in alice.find_elements(By.CSS_SELECTOR, ".memory") if "A memory to let go" in m.text][0]
        return memory.find_element(By.LINK_TEXT, "Delete…")
    delete_link().click()
    wait(alice, EC.presence_of_element_located((By.ID, "delete-memory-form")), "the page asks first")
    expect("A memory to let go" in alice.find_element(By.TAG_NAME, "main").text, "naming the memory")
    alice.find_element(By.LINK_TEXT, "Cancel").click()
    wait(alice, lambda d: "A memory to let go" in d.find_element(By.TAG_NAME, "main").text, "Cancel keeps it")
    delete_link().click()
    wait(alice, EC.presence_of_element_located((By.ID, "delete-memory-form")), "asked again")
    alice.find_element(By.CSS_SELECTOR, "#delete-memory-form button").click()
    wait(alice, lambda d: "A memory to let go" not in d.find_element(By.TAG_NAME, "main").text, "deleted")
    expect("with Bob" in alice.find_element(By.TAG_NAME, "main").text, "the other memory stays")

    # A backup to a directory, followed live; bob's profile (no vault yet) restores it.
    backups = os.path.join(arguments.work, "vault-backups")
    alice.find_element(By.CSS_SELECTOR, "#backup summary").click()
    alice.find_element(By.CSS_SELECTOR, "#backup-form input[value=directory]").click()
    directory = alice.find_element(By.ID, "backup-directory")
    directory.clear()
    directory.send_keys(backups)
    alice.find_element(By.CSS_SELECTOR, "#backup-form button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.ID, "transfer"), "Backup finished"), "the backup finishes")
    expect(re.search(r"Backed up: \d+ new pieces? sent", alice.find_element(By.ID, "transfer").text), "with its report")
    screenshot(alice, "vault-backup")
    modes = {oct(os.stat(os.path.join(root, name)).st_mode & 0o777) for root, _, names in os.walk(backups)
             for name in names}
    expect(modes == {"0o600"}, f"backup files are private to their owner: {modes}")
    bob_base = arguments.bob.split("/?")[0]
    bob.get(bob_base + "/vault")
    wait(bob, EC.presence_of_element_located((By.ID, "restore-form")), "bob's vault offers a restore")
    bob.find_element(By.CSS_SELECTOR, "#restore summary").click()
    bob.find_element(By.CSS_SELECTOR, "#restore-form input[value=directory]").click()
    bob.find_element(By.ID, "restore-directory").send_keys(backups)
    bob.find_element(By.ID, "restore-passphrase").send_keys("not the passphrase")
    bob.find_element(By.CSS_SELECTOR, "#restore-form button[type=submit]").click()
    wait(bob, EC.text_to_be_present_in_element((By.ID, "transfer"), "Restore failed"), "a wrong passphrase fails")
    bob.get(bob_base + "/vault")
    expect(bob.find_element(By.ID, "restore").get_attribute("open") is not None,
           "after a failed restore the form stays open")
    bob.find_element(By.CSS_SELECTOR, "#restore-form input[value=directory]").click()
    field = bob.find_element(By.ID, "restore-directory")
    field.clear()
    field.send_keys(backups)
    bob.find_element(By.ID, "restore-passphrase").send_keys("vault passphrase")
    bob.find_element(By.CSS_SELECTOR, "#restore-form button[type=submit]").click()
    wait(bob, EC.text_to_be_present_in_element((By.ID, "transfer"), "Restore finished"), "the restore finishes")
    bob.get(bob_base + "/vault")
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".memory"), "with Bob"),
         "bob's restored vault has the edited memory")
    restored = bob.find_element(By.CSS_SELECTOR, ".album img")
    wait(bob, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", restored) == 64,
         "and its photo")
    shutil.rmtree(work, ignore_errors=True)

    # Groups: alice makes one with bob from the page, writes to it; bob finds it, with her name on
    # the message, and answers.
    alice.get(alice_base_url() + "/groups")
    wait(alice, EC.presence_of_element_located((By.ID, "create-group")), "the groups page")
    alice.find_element(By.ID, "group-name").send_keys("Band <b>")
    alice.find_element(By.ID, "group-members").send_keys("nobody@example.com")
    alice.find_element(By.CSS_SELECTOR, "#create-group button").click()
    wait(alice, lambda d: "No user nobody@example.com" in d.find_element(By.CSS_SELECTOR, "p.error").text,
         "an unknown member is refused with a reason")
    alice.find_element(By.ID, "group-name").send_keys("Band <b>")
    alice.find_element(By.ID, "group-members").send_keys(bob_email)
    alice.find_element(By.CSS_SELECTOR, "#create-group button").click()
    wait(alice, EC.presence_of_element_located((By.ID, "group-composer")), "the new group's page")
    expect(alice.find_element(By.TAG_NAME, "h1").text == "Band <b>", "its name, escaped")
    expect("admin" in alice.find_element(By.ID, "group-members").text, "alice is its admin")
    alice.find_element(By.ID, "group-draft").send_keys("rehearsal at 8")
    alice.find_element(By.ID, "group-draft").send_keys(Keys.ENTER)
    wait(alice, EC.text_to_be_present_in_element((By.ID, "group-messages"), "rehearsal at 8"), "her message shows")
    expect(alice.find_element(By.ID, "group-messages").text.count("rehearsal at 8") == 1, "once")
    screenshot(alice, "group")

    def bob_sees_group():
        bob.get(bob_base + "/groups")
        links = bob.find_elements(By.PARTIAL_LINK_TEXT, "Band <b>")
        return links[0] if links else None
    deadline = time.time() + WAIT
    while bob_sees_group() is None and time.time() < deadline:
        time.sleep(0.2)
    bob.find_element(By.PARTIAL_LINK_TEXT, "Band <b>").click()
    wait(bob, EC.text_to_be_present_in_element((By.ID, "group-messages"), "rehearsal at 8"), "bob reads it")
    expect("Alice" in bob.find_element(By.CSS_SELECTOR, "#group-messages .author").text, "with her name")
    expect(not bob.find_elements(By.ID, "group-add"), "bob is no admin: no form to add people")
    bob.find_element(By.ID, "group-draft").send_keys("see you there")
    bob.find_element(By.CSS_SELECTOR, "#group-composer button").click()
    wait(bob, EC.text_to_be_present_in_element((By.ID, "group-messages"), "see you there"), "his answer")
    expect(bob.find_element(By.ID, "group-messages").text.count("see you there") == 1, "sent once")
    expect(bob.find_element(By.ID, "group-messages").text.count("rehearsal at 8") == 1, "and hers arrived once")
    screenshot(bob, "group-member")
    deadline = time.time() + WAIT
    while "see you there" not in alice.find_element(By.ID, "group-messages").text and time.time() < deadline:
        time.sleep(0.2)
        alice.refresh()
    expect("see you there" in alice.find_element(By.ID, "group-messages").text, "alice reads bob's answer")
    # From the menu of bob's line: a reaction, then a reply that quotes it.
    message_action(alice, "see you there", "👍", side="theirs")
    wait(alice, lambda d: any("👍 1" in r.text for r in d.find_elements(By.CSS_SELECTOR, "#group-messages .reactions")),
         "alice's reaction under bob's line")
    message_action(alice, "see you there", "Reply", side="theirs")
    wait(alice, lambda d: "see you there" in d.find_element(By.ID, "replying").text, "the composer says what it answers")
    alice.find_element(By.ID, "group-draft").send_keys("great" + Keys.ENTER)
    wait(alice, lambda d: any("see you there" in q.text for q in d.find_elements(By.CSS_SELECTOR, "#group-messages .mine .quote")),
         "her reply quotes bob's line")
    # Her line counts bob's receipt (from his web device, while his laptop is a second one). As
    # admin she sets the group's timer and takes bob out: his page then says he is no longer a
    # member, and has no composer.
    counted = r"(delivered to|read by) 1 of 1"
    deadline = time.time() + WAIT
    while not re.search(counted, alice.find_element(By.ID, "group-messages").text) and time.time() < deadline:
        time.sleep(0.2)
        alice.refresh()
    lines = alice.find_element(By.ID, "group-messages").text
    expect(re.search(counted, lines), f"her message counts bob's receipt: {lines!r}")
    alice.find_element(By.CSS_SELECTOR, "#group-timer-select option[value='3600']").click()
    alice.find_element(By.CSS_SELECTOR, "#group-timer-form button").click()
    wait(alice, EC.text_to_be_present_in_element((By.ID, "group-timer"), "1 h"), "the group's timer shows")
    expect(len(alice.find_elements(By.CSS_SELECTOR, "#group-members .member")) == 2, "two members")
    alice.find_element(By.CSS_SELECTOR, "#group-remove button").click()
    wait(alice, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#group-members .member")) == 1,
         "bob is out of the member list")
    expect(not alice.find_elements(By.CSS_SELECTOR, "#group-remove button"), "nobody left to remove")
    deadline = time.time() + WAIT
    bob.refresh()
    while bob.find_elements(By.ID, "group-composer") and time.time() < deadline:
        time.sleep(0.2)
        bob.refresh()
    expect("not a member" in bob.find_element(By.CSS_SELECTOR, ".group-page .banner").text,
           "bob's page says he was taken out")
    expect(not bob.find_elements(By.ID, "group-composer"), "and he can no longer write to it")

    # Settings: alice's account asks an arithmetic step (every sign mapping to itself) and an
    # authenticator code after the password, set up in the page; she signs out and in again,
    # answering the arithmetic wrong once.
    alice.get(alice_base + "/settings")
    wait(alice, EC.presence_of_element_located((By.ID, "chain-form")), "the settings page")
    devices = alice.find_element(By.CSS_SELECTOR, ".devices").text
    expect("this device" in devices and "Confidant on Linux" in devices and "Active now" in devices,
           f"her device is listed as this one, named for its platform, active now: {devices!r}")
    # She names it: the form sits behind the device's "Rename" disclosure.
    alice.find_element(By.CSS_SELECTOR, ".device-actions summary").click()
    name_field = alice.find_element(By.CSS_SELECTOR, ".device-actions input[name=name]")
    expect(name_field.get_attribute("value") == "Confidant on Linux", "the rename field starts with the name")
    name_field.clear()
    name_field.send_keys("Alice's <desk>")
    name_field.submit()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".device-name"), "Alice's <desk>"),
         "the device shows its new name, escaped")
    expect("is now called" in alice.find_element(By.CSS_SELECTOR, ".banner.notice").text, "and the page says so")
    alice.find_element(By.CSS_SELECTOR, "#totp-form").submit()
    wait(alice, EC.presence_of_element_located((By.CSS_SELECTOR, "img.qr")), "an authenticator key with its QR code")
    qr = alice.find_element(By.CSS_SELECTOR, "img.qr")
    wait(alice, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", qr) > 0,
         "the authenticator QR code loads")
    secret = alice.find_element(By.CSS_SELECTOR, ".secret").text.strip()
    screenshot(alice, "settings")
    # Read receipts are the profile's choice, in the settings (as `confidant account read-receipts`).
    alice.find_element(By.CSS_SELECTOR, "#receipts-form button").click()
    wait(alice, EC.text_to_be_present_in_element((By.ID, "receipts-form"), "Read receipts are off"), "receipts off")
    expect("Read receipts are off" in alice.find_element(By.CSS_SELECTOR, ".banner.notice").text, "and it says so once")
    alice.find_element(By.CSS_SELECTOR, "#receipts-form button").click()
    wait(alice, EC.text_to_be_present_in_element((By.ID, "receipts-form"), "see when you have read"), "on again")
    expect(alice.find_element(By.CSS_SELECTOR, "img.qr").is_displayed(), "the authenticator being set up stays")
    from selenium.webdriver.support.ui import Select
    Select(alice.find_element(By.ID, "step2")).select_by_value("arithmetic")
    Select(alice.find_element(By.ID, "step3")).select_by_value("totp")
    for name, value in [("plus", "+"), ("minus", "-"), ("times", "*"), ("divide", "/")]:
        Select(alice.find_element(By.ID, f"map-{name}")).select_by_value(value)
    operands = alice.find_element(By.ID, "operands")
    operands.clear()
    operands.send_keys("3")
    enrolled_counter = int(time.time() // 30)
    alice.find_element(By.ID, "totpCode").send_keys(totp(secret))
    alice.find_element(By.ID, "password").send_keys("correct horse battery")
    alice.find_element(By.CSS_SELECTOR, "#chain-form button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.TAG_NAME, "main"), "password → arithmetic challenge → authenticator app"),
         "the chain is saved")
    alice.get(alice_base + "/conversations")
    alice.find_element(By.CSS_SELECTOR, "form[action='/sign-out'] button").click()
    wait(alice, EC.title_contains("Sign in"), "signed out, the sign-in page")
    expect(not alice.find_elements(By.ID, "passphrase"), "the profile passphrase is not asked again")
    offered = alice.find_element(By.ID, "server").get_attribute("value")
    expect(offered.rstrip("/") == arguments.relay.rstrip("/"), f"the form offers this profile's server: {offered}")
    expect(alice.find_element(By.ID, "email").get_attribute("value") == alice_email, "and its e-mail")
    alice.find_element(By.ID, "password").send_keys("correct horse battery")
    started = int(time.time() * 1000) - 1000
    alice.find_element(By.CSS_SELECTOR, "#welcome-form button[type=submit]").click()
    wait(alice, EC.presence_of_element_located((By.CSS_SELECTOR, ".challenge")), "the arithmetic step")
    screenshot(alice, "sign-in-arithmetic")
    first = alice.find_element(By.CSS_SELECTOR, ".challenge").text
    answer_step(alice, str(evaluate(first) + 1))
    wait(alice, EC.text_to_be_present_in_element((By.TAG_NAME, "main"), "Here is a new challenge"), "a wrong result is reported with a new challenge")
    for attempt in range(12):
        if "Chats" in alice.title:
            break
        text = main_text(alice)
        pause = re.search(r"Wait (\d+) second", text)
        if pause:
            time.sleep(int(pause.group(1)) + 0.5)
        challenge = alice.find_elements(By.CSS_SELECTOR, ".challenge")
        label = alice.find_element(By.CSS_SELECTOR, "label[for=answer]").text if not challenge else ""
        if "authenticator" in label:
            # A code is good once: wait for the next 30 s period after the one last used.
            counter = int(time.time() // 30)
            if counter <= enrolled_counter:
                time.sleep((enrolled_counter + 1) * 30 - time.time() + 0.5)
            enrolled_counter = int(time.time() // 30)
            answer_step(alice, totp(secret))
        elif challenge:
            # Typed on the page's keypad (its script fills the field).
            field = alice.find_element(By.ID, "answer")
            field.clear()
            for key in str(evaluate(challenge[0].text)):
                alice.find_element(By.CSS_SELECTOR, f".keypad button[data-key='{key}']").click()
            alice.find_element(By.CSS_SELECTOR, "#step-form button[type=submit]").click()
            wait(alice, gone(field), "the answer is posted")
            wait(alice, lambda d: d.execute_script("return document.readyState") == "complete", "the answer page")
        else:
            answer_step(alice, mailed_code(alice_email, started))
    wait(alice, EC.title_contains("Chats"), "alice is signed in again through the arithmetic step")
    expect("Alice Liddell" in alice.find_element(By.CLASS_NAME, "me").text, "as alice")

    # Alice changes the name others see: the bar shows it, and so does bob's directory.
    alice.get(alice_base + "/profile")
    screenshot(alice, "profile")
    name = alice.find_element(By.ID, "display-name")
    name.clear()
    name.send_keys("Alice Pleasance")
    alice.find_element(By.CSS_SELECTOR, "#name-form button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.CLASS_NAME, "me"), "Alice Pleasance"), "the bar shows the new name")
    bob.get(arguments.bob.split("/?")[0] + "/new?q=alice-" + arguments.suffix)
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "ul.people"), "Alice Pleasance"),
         "bob's directory shows alice's new name")
    name = alice.find_element(By.ID, "display-name")
    name.clear()
    name.send_keys(" ")
    alice.find_element(By.CSS_SELECTOR, "#name-form button[type=submit]").click()
    wait(alice, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "p.error"), "1 to 100 characters"),
         "an empty name is refused, saying why")

    # Narrow screens work too.
    bob.set_window_size(390, 844)
    bob.get(arguments.bob.split("/?")[0] + "/conversations")
    wait(bob, EC.presence_of_element_located((By.CSS_SELECTOR, "ul.conversations a")), "the list on a phone")
    width = bob.execute_script("return document.documentElement.scrollWidth")
    expect(width <= 390, f"no sideways scrolling at 390 px (content is {width} px)")
    screenshot(bob, "conversations-phone")
    # One pane at a time: the chat alone, with a way back to the list.
    bob.find_element(By.CSS_SELECTOR, "ul.conversations a").click()
    wait(bob, EC.presence_of_element_located((By.CSS_SELECTOR, "ol.messages .message")), "a chat on a phone")
    expect(not bob.find_element(By.CSS_SELECTOR, ".pane-list").is_displayed(), "the list gives way to the chat")
    expect(bob.find_element(By.CSS_SELECTOR, ".chat-head .back").is_displayed(), "with a back button")
    width = bob.execute_script("return document.documentElement.scrollWidth")
    expect(width <= 390, f"no sideways scrolling in a chat at 390 px (content is {width} px)")
    wait(bob, lambda d: d.execute_script("""
        const pane = document.getElementById('live');
        return pane.scrollHeight - pane.scrollTop - pane.clientHeight < 80;"""), "the newest line in view on a phone")
    screenshot(bob, "chat-phone")
    # The dark theme follows the system setting, and passes the same audit.
    bob.set_window_size(1100, 900)
    bob.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    bob.refresh()
    wait(bob, EC.presence_of_element_located((By.CSS_SELECTOR, "ol.messages .message")), "the chat in the dark")
    background = bob.execute_script("return getComputedStyle(document.body).backgroundColor")
    expect(background == "rgb(18, 20, 25)", f"the dark theme is on: {background}")
    screenshot(bob, "chat-dark")
    bob.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})

    # Notifications: bob turns them on in the settings (the browser grants them; nothing asks on
    # load); a message that arrives while his tab is in the background is shown, with its text.
    bob_base = arguments.bob.split("/?")[0]
    bob.execute_cdp_cmd("Browser.grantPermissions", {"permissions": ["notifications"], "origin": bob_base})
    bob.get(bob_base + "/settings")
    wait(bob, lambda d: d.find_element(By.ID, "notifications").is_displayed(), "the settings offer notifications")
    expect("off" in bob.find_element(By.ID, "notifications-state").text, "off until bob asks for them")
    screenshot(bob, "settings-notifications")
    bob.find_element(By.ID, "notifications-toggle").click()
    wait(bob, EC.text_to_be_present_in_element((By.ID, "notifications-state"), "Notifications are on"), "turned on")
    bob.find_element(By.ID, "notifications-text").click()
    bob.get(bob_base + "/conversations")
    wait(bob, EC.presence_of_element_located((By.CSS_SELECTOR, "ul.conversations a")), "bob's list")
    # The tab as if in the background (headless Chromium keeps a tab visible), and the browser's
    # notifications recorded as they are made.
    bob.execute_script("""
        Object.defineProperty(document, 'visibilityState', { get: () => 'hidden' });
        window.__shown = [];
        const Real = window.Notification;
        window.Notification = class extends Real {
          constructor(title, options) { super(title, options); window.__shown.push([title, options.body]); }
        };""")
    alice.get(alice_base + "/chat/" + bob_id)
    wait(alice, EC.presence_of_element_located((By.ID, "draft")), "alice's chat")
    alice.find_element(By.ID, "draft").send_keys("Are you there, Bob?" + Keys.ENTER)
    wait(bob, lambda d: d.execute_script("return window.__shown.length") > 0, "a notification was shown")
    shown = bob.execute_script("return window.__shown")
    expect(len(shown) == 1 and "Alice" in shown[0][0] and shown[0][1] == "Are you there, Bob?",
           f"one notification, from alice, with the text bob chose to see: {shown}")

    # Bob deletes his account from the settings: he is signed out, and cannot sign in again.
    bob.set_window_size(1100, 900)
    bob.get(arguments.bob.split("/?")[0] + "/settings")
    wait(bob, EC.presence_of_element_located((By.ID, "delete-form")), "bob's settings")
    bob.find_element(By.CSS_SELECTOR, "#delete-form input[name=confirm]").click()
    bob.find_element(By.ID, "delete-password").send_keys("correct horse battery")
    bob.find_element(By.CSS_SELECTOR, "#delete-form button[type=submit]").click()
    wait(bob, EC.title_contains("Sign in"), "after deleting the account, the sign-in page")
    bob.find_element(By.ID, "email").send_keys(bob_email)
    bob.find_element(By.ID, "password").send_keys("correct horse battery")
    bob.find_element(By.CSS_SELECTOR, "#welcome-form button[type=submit]").click()
    wait(bob, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "p.error"), "Wrong e-mail or password"),
         "the deleted account cannot sign in")
except AssertionError as error:
    print(f"app_browser: FAILED after {checks} checks: {error}")
    sys.exit(1)
finally:
    alice.quit()
    bob.quit()
    if "restarted" in globals():
        restarted.terminate()
        restarted.wait(timeout=30)
    shutil.rmtree(pictures, ignore_errors=True)
print(f"app_browser: axe found no serious violation on {len(audited)} screens; {checks} checks passed")
