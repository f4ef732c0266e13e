#!/usr/bin/env python3
"""The operations console in a real browser (Debian's chromium, headless, driven by Selenium)
against a running `herald dev` stack with simulated devices, as an operator would use it:

  sign-in      a wrong key is refused; the admin creates an app and uploads the dev stack's
               signing key; a server key signs in
  tag-push     compose a tag push, see the dry run's audience size, send, watch the bar reach
               100 %, the page's counts equal `herald push status`
  throttled    a throttled broadcast: pause, resume, cancel; the final counts add up
  recall       recall the tag push; the recall completes
  local-time   a push at 09:00 in each device's time zone: the dry run lists its waves, the push's
               page its local time and waves
  ab-test      an A/B test with a holdout sent with the CLI: the push page's Variants card shows
               each variant's counts as the status does, and they add up
  schedules    a schedule made with the CLI is listed, shown with its next occurrences, paused,
               resumed and deleted from the console
  csrf         a form posted without the session's CSRF token is refused, nothing changes
  narrow       the pages at 390 px wide

Each step saves a PNG of its final page in the output folder.

  test_console.py API_URL SERVER_KEY HERALD_BIN OUTPUT_DIR
"""
import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

api, server_key, herald, output = sys.argv[1:5]
os.makedirs(output, exist_ok=True)
failures = []


def log(text):
    print(f"[console {time.strftime('%H:%M:%S')}] {text}", flush=True)


def check(condition, what):
    if condition:
        log(f"✔ {what}")
    else:
        log(f"✘ {what}")
        failures.append(what)
    return condition


def browser(width):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={max(width, 500)},1000", "--hide-scrollbars"):
        options.add_argument(argument)
    if width < 500:
        # A headless window is at least 500 px wide: a phone's width is emulated instead.
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": {"width": width, "height": 844, "pixelRatio": 1}})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.implicitly_wait(0)
    return driver


def screenshot(driver, name):
    path = os.path.join(output, f"{name}.png")
    width = driver.execute_script("return window.innerWidth")
    height = driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    # The whole page at the layout's width, through the DevTools protocol.
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "captureBeyondViewport": True, "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 4000), "scale": 1}})
    with open(path, "wb") as file:
        file.write(base64.b64decode(shot["data"]))
    log(f"  screenshot {path}")


def wait(driver, seconds, condition, what):
    """Waits for `condition`; an element read while the page is being replaced (a form's answer
    arriving) is read again, not a failure."""
    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.2, ignored_exceptions=(WebDriverException,)).until(condition)
    except Exception as error:
        check(False, f"{what} (within {seconds} s; page: {driver.current_url}; {type(error).__name__}: {str(error)[:200]})")
        return None


def status(push):
    text = subprocess.run([herald, "push", "status", push, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(text)


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text.strip()


def number(value):
    return int(value.replace(",", "").replace("about ", "")) if value not in ("", "–") else None


def sign_in(driver, key):
    driver.get(api + "/console/sign-in")
    field = driver.find_element(By.ID, "key")
    field.clear()
    field.send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()


def push_id(driver):
    return driver.current_url.split("/console/pushes/")[1].split("?")[0]


def compose(driver, audience, tags=None, body="", throttle_per_second=None):
    driver.get(api + "/console/compose")
    driver.find_element(By.CSS_SELECTOR, f"input[name=audience][value={audience}]").click()
    if tags:
        driver.find_element(By.ID, "tags_any").send_keys(tags)
    driver.find_element(By.ID, "title").send_keys("Herald console")
    driver.find_element(By.ID, "body").send_keys(body)
    if throttle_per_second:
        driver.find_element(By.CSS_SELECTOR, "#throttle option[value=rate]").click()
        driver.find_element(By.ID, "throttle_per_second").send_keys(str(throttle_per_second))
    send = wait(driver, 30, expected_conditions.element_to_be_clickable((By.ID, "send")), "the dry run enables Send")
    return send


def wait_final(driver, seconds):
    """Waits until the push page shows an ended push (the script reloads it at the end)."""
    return wait(driver, seconds, lambda d: text(d, "push-state") in ("completed", "canceled")
                and d.find_elements(By.CSS_SELECTOR, "#live:not([data-events])"), "the push page shows the push ended")


driver = browser(1280)
try:
    # ── sign-in
    sign_in(driver, "hs_" + "x" * 43)
    error = wait(driver, 10, lambda d: d.find_elements(By.CSS_SELECTOR, ".alert"), "the sign-in page answers") or []
    check(error and "does not know this key" in error[0].text, "a wrong key is refused with a message saying so")
    check("/console/sign-in" in driver.current_url, "a wrong key stays on the sign-in page")
    screenshot(driver, "01-sign-in-refused")
    # ── admin: create an app, see its keys once, upload the dev stack's signing key
    stack = json.load(open(os.path.join(os.environ["HERALD_DEV_DIR"], "stack.json")))
    sign_in(driver, os.environ["HERALD_ADMIN_TOKEN"])
    wait(driver, 15, expected_conditions.url_contains("/console/apps"), "the admin lands on the apps")
    driver.find_element(By.ID, "name").send_keys("Console campaign app")
    driver.find_element(By.ID, "bundle_id").send_keys("com.example.console" + str(int(time.time())))
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/apps'] button").click()
    fields = wait(driver, 10, lambda d: d.find_elements(By.CSS_SELECTOR, "input.secret"), "the new app's page") or []
    secrets = [field.get_attribute("value") for field in fields]
    check(len(secrets) == 3 and secrets[0].startswith("hs_") and secrets[1].startswith("hc_"),
          "a new app's server key, client key and identity secret are shown once")
    screenshot(driver, "01b-app-created")
    driver.find_element(By.LINK_TEXT, "I have copied them").click()
    wait(driver, 10, lambda d: d.find_elements(By.ID, "file"), "the app's page")
    check(secrets and secrets[0] not in driver.page_source, "the app's page does not show the key again")
    signing = stack["signingKey"]
    driver.find_element(By.CSS_SELECTOR, "#environment option[value=sandbox]").click()
    driver.find_element(By.ID, "file").send_keys(os.path.abspath(signing["privateKeyFile"]))
    driver.find_element(By.ID, "key_id").send_keys(signing["keyID"])
    driver.find_element(By.ID, "team_id").send_keys(signing["teamID"])
    driver.find_element(By.CSS_SELECTOR, "form[enctype='multipart/form-data'] button").click()
    wait(driver, 15, expected_conditions.url_contains("done=credential"), "the credential upload")
    check(f"{signing['keyID']} / {signing['teamID']}" in driver.page_source, "the uploaded .p8 is listed")
    screenshot(driver, "01c-app-credentials")
    driver.find_element(By.CSS_SELECTOR, ".who button").click()
    wait(driver, 10, expected_conditions.url_contains("signed_out"), "the admin signs out")

    sign_in(driver, server_key)
    check(wait(driver, 15, expected_conditions.url_contains("/console/pushes"), "signed in") is not None,
          "a server key signs in and lands on the pushes")
    cookie = driver.get_cookie("herald_console")
    check(cookie is not None and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict",
          "the session cookie is HttpOnly and SameSite=Strict")
    check(server_key not in driver.page_source, "the key is not rendered back")

    # ── tag-push
    send = compose(driver, "tags", tags="vip", body="Early access starts now")
    size = number(text(driver, "dryrun-size"))
    check(size is not None and size > 0, f"the dry run shows the audience size ({size})")
    check(number(text(driver, "dryrun-bytes").split(" of ")[0]) > 0, "the dry run shows the payload bytes")
    screenshot(driver, "02-compose-dry-run")
    send.click()
    wait(driver, 15, expected_conditions.url_contains("/console/pushes/"), "sending opens the push page")
    tag_push = push_id(driver)
    wait(driver, 180, lambda d: "(100%)" in text(d, "progress-text"), "the progress bar reaches 100 %")
    wait_final(driver, 60)
    final = status(tag_push)
    counters = final["counters"]
    check(final["state"] == "completed", f"the tag push completed ({final['state']})")
    check(number(text(driver, "count-accepted")) == counters["accepted"],
          f"the page's accepted count equals herald push status ({counters['accepted']})")
    check(counters["targeted"] == size, f"it targeted the dry run's audience size ({counters['targeted']} = {size})")
    check("Early access starts now" in text(driver, "notification"), "the push page shows what the push said")
    reached = counters["accepted"] + counters["delivered_online"]
    check(number(text(driver, "engagement-reached")) == reached and text(driver, "engagement-opened") == "0",
          f"the push page's engagement card counts {reached} reached and nothing opened yet")
    screenshot(driver, "03-push-completed")

    # ── throttled
    send = compose(driver, "all", body="A throttled broadcast", throttle_per_second=2000)
    send.click()
    wait(driver, 15, expected_conditions.url_contains("/console/pushes/"), "sending opens the push page")
    throttled = push_id(driver)
    wait(driver, 60, lambda d: (number(text(d, "count-accepted")) or 0) > 0, "the throttled push makes progress")
    # While it is still sending, every part of the page follows the stream: the Outcomes legend
    # and the progress card say what the API says (the stream trails it by at most a poll).
    before = status(throttled)["counters"]["accepted"]
    wait(driver, 15, lambda d: (number(text(d, "legend-accepted")) or 0) >= before,
         f"the Outcomes legend catches up with the API's accepted count ({before})")
    legend, card = number(text(driver, "legend-accepted")), number(text(driver, "count-accepted"))
    after = status(throttled)
    check(after["state"] in ("fanning_out", "sending"), f"the push is still sending while the legend is read ({after['state']})")
    check(before <= legend <= after["counters"]["accepted"],
          f"the legend's Accepted ({legend}) lies between the API's before and after ({before}..{after['counters']['accepted']})")
    check(legend == card or abs(legend - card) <= 2000, f"the legend and the progress card agree ({legend}, {card})")
    pause_form = driver.find_element(By.CSS_SELECTOR, "form[data-action=pause]")
    check(pause_form.is_displayed() == (after["state"] == "fanning_out"),
          f"Pause is offered exactly while the push fans out ({after['state']})")
    screenshot(driver, "04a-push-sending-live")
    driver.find_element(By.CSS_SELECTOR, f"form[action='/console/pushes/{throttled}/pause'] button").click()
    wait(driver, 15, expected_conditions.url_contains("done=pause"), "pausing answers with the push's page")
    wait(driver, 15, lambda d: text(d, "push-state") == "paused", "the page shows the push paused")
    check(status(throttled)["paused"], "herald push status says paused")
    screenshot(driver, "04-push-paused")
    driver.find_element(By.CSS_SELECTOR, f"form[action='/console/pushes/{throttled}/resume'] button").click()
    wait(driver, 15, expected_conditions.url_contains("done=resume"), "resuming answers with the push's page")
    wait(driver, 15, lambda d: text(d, "push-state") != "paused", "the page shows the push resumed")
    check(not status(throttled)["paused"], "herald push status says resumed")
    driver.find_element(By.CSS_SELECTOR, f"form[action='/console/pushes/{throttled}/cancel'] button").click()
    wait(driver, 5, expected_conditions.alert_is_present(), "cancel asks for confirmation")
    driver.switch_to.alert.accept()
    wait(driver, 15, lambda d: "done=cancel" in d.current_url or text(d, "push-state") == "canceled",
         "the push page shows the cancel")
    deadline = time.time() + 120
    while True:
        final = status(throttled)
        c = final["counters"]
        total = c["accepted"] + c["rejected"] + c["expired"] + c["canceled"]
        if final["state"] == "canceled" and total == (final.get("audience_size") or c["targeted"]) or time.time() > deadline:
            break
        time.sleep(0.5)
    check(final["state"] == "canceled", "the throttled push is canceled")
    wait(driver, 30, lambda d: text(d, "push-state") == "canceled", "the page shows the push canceled")
    check(not any(form.is_displayed() for form in driver.find_elements(
        By.CSS_SELECTOR, "form[data-action=pause], form[data-action=resume], form[data-action=cancel]")),
          "an ended push offers no Pause, Resume or Cancel")
    check(total == (final.get("audience_size") or c["targeted"]) and c["canceled"] > 0,
          f"its counts add up: {c['accepted']} accepted + {c['rejected']} rejected + {c['expired']} expired + "
          f"{c['canceled']} canceled = {final.get('audience_size')}")
    driver.get(f"{api}/console/pushes/{throttled}")
    check(number(text(driver, "count-canceled")) == c["canceled"], "the page shows the final canceled count")
    screenshot(driver, "05-push-canceled")

    # ── recall
    driver.get(f"{api}/console/pushes/{tag_push}")
    driver.find_element(By.CSS_SELECTOR, f"form[action='/console/pushes/{tag_push}/recall'] button").click()
    wait(driver, 5, expected_conditions.alert_is_present(), "recall asks for confirmation")
    driver.switch_to.alert.accept()
    wait(driver, 15, expected_conditions.url_contains("done=recall"), "recalling opens the recall push")
    recall = push_id(driver)
    check(recall != tag_push, "the recall is a push of its own")
    wait_final(driver, 180)
    final = status(recall)
    check(final["state"] == "completed" and final.get("recall_of") == tag_push,
          f"the recall completed ({final['state']}) for the original")
    check(final["counters"]["targeted"] == status(tag_push)["counters"]["accepted"],
          "the recall went to exactly the devices that accepted the original")
    screenshot(driver, "06-recall-completed")

    # ── local time
    compose(driver, "tags", tags="vip", body="Good morning, wherever you are")
    driver.execute_script(
        "var f = document.getElementById('local_time'); f.value = '09:00';"
        "f.dispatchEvent(new Event('input', {bubbles: true})); f.dispatchEvent(new Event('change', {bubbles: true}));")
    waves = wait(driver, 30, lambda d: d.find_elements(By.CSS_SELECTOR, "#dryrun-waves li"), "the dry run lists the waves") or []
    check(waves and "devices" in waves[0].text and "UTC" in waves[0].text,
          f"the dry run says when each group of time zones gets it ({waves[0].text if waves else 'nothing'})")
    screenshot(driver, "06a-compose-local-time")
    send = wait(driver, 30, expected_conditions.element_to_be_clickable((By.ID, "send")), "the dry run enables Send")
    send.click()
    wait(driver, 15, expected_conditions.url_contains("/console/pushes/"), "sending opens the push page")
    local_push = push_id(driver)
    check("09:00, the next time in each device's time zone" in driver.page_source, "the push page shows its local time")
    deadline = time.time() + 60
    while not driver.find_elements(By.CSS_SELECTOR, "#waves tbody tr") and time.time() < deadline:
        time.sleep(1)
        driver.refresh()
    rows = driver.find_elements(By.CSS_SELECTOR, "#waves tbody tr")
    check(len(rows) >= 1 and len(rows) == len(status(local_push).get("waves", [])),
          f"the push page lists the waves herald-center planned ({len(rows)})")
    screenshot(driver, "06b-push-local-time")
    subprocess.run([herald, "push", "cancel", local_push], check=True, capture_output=True)

    # ── A/B test: two variants and a holdout, sent with the CLI, shown on the push's page
    ab = subprocess.run([herald, "push", "--tag", "vip", "--channel", "apns", "--title", "Summer",
                         "--variant", "short:3=Sale today", "--variant", "long=Our summer sale starts now",
                         "--holdout", "0.1", "--quiet"], check=True, capture_output=True, text=True).stdout.strip()
    wait(driver, 180, lambda _: status(ab)["state"] == "completed", "the A/B test completes")
    final = status(ab)
    driver.get(f"{api}/console/pushes/{ab}")
    rows = driver.find_elements(By.CSS_SELECTOR, "#variants tbody tr")
    check(len(rows) == 3, f"the push page's Variants card has the two variants and the holdout ({len(rows)} rows)")
    for row, variant in zip(rows, final.get("variants", [])):
        cells = [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        check(cells[0].startswith(variant["name"]) and number(cells[2]) == variant["counters"]["targeted"]
              and number(cells[3]) == variant["engagement"]["reached"],
              f"the Variants card shows {variant['name']} as the status does ({cells})")
    held = final["counters"]["skipped_by_reason"].get("holdout", 0)
    if len(rows) == 3:
        cells = [cell.text for cell in rows[2].find_elements(By.TAG_NAME, "td")]
        check(cells[0].startswith("Holdout (10%)") and number(cells[2]) == held,
              f"the Variants card shows the holdout's {held} devices ({cells})")
    check(sum(v["counters"]["targeted"] for v in final.get("variants", [])) + held == final["counters"]["targeted"],
          "the variants and the holdout add up to the push's targeted")
    screenshot(driver, "06e-ab-test")

    # ── schedules
    name = f"Weekly digest {int(time.time())}"
    made = subprocess.run(
        [herald, "schedules", "create", "--name", name, "--rrule", "FREQ=WEEKLY;BYDAY=MO", "--time-zone", "Europe/Berlin",
         "--starts-at", "2030-01-07T08:00", "--tag", "vip", "--body", "Your weekly digest", "--json"],
        check=True, capture_output=True, text=True).stdout
    schedule = json.loads(made)["id"]
    driver.get(api + "/console/schedules")
    check(name in driver.page_source, "the schedules page lists the schedule made with the CLI")
    driver.find_element(By.LINK_TEXT, name).click()
    wait(driver, 10, expected_conditions.url_contains(f"/console/schedules/{schedule}"), "the schedule's page")
    check("2030-01-07 07:00:00 UTC" in driver.page_source, "its page shows the next occurrences (08:00 in Berlin)")
    screenshot(driver, "06c-schedule")
    driver.find_element(By.CSS_SELECTOR, f"form[action='/console/schedules/{schedule}/pause'] button").click()
    wait(driver, 15, expected_conditions.url_contains("done=pause"), "pausing answers with the schedule's page")

    def schedule_state():
        answer = subprocess.run([herald, "schedules", "get", schedule, "--json"], capture_output=True, text=True)
        return json.loads(answer.stdout)["state"] if answer.returncode == 0 else None

    check(schedule_state() == "paused", "paused from the console, herald schedules get says paused")
    driver.find_element(By.CSS_SELECTOR, f"form[action='/console/schedules/{schedule}/resume'] button").click()
    wait(driver, 15, expected_conditions.url_contains("done=resume"), "resuming answers with the schedule's page")
    check(schedule_state() == "active", "resumed, it is active again")
    driver.find_element(By.CSS_SELECTOR, f"form[action='/console/schedules/{schedule}/delete'] button").click()
    wait(driver, 5, expected_conditions.alert_is_present(), "delete asks for confirmation")
    driver.switch_to.alert.accept()
    wait(driver, 15, lambda d: d.current_url.rstrip("/").endswith("/console/schedules"), "deleting returns to the list")
    check(name not in driver.page_source and schedule_state() is None, "the deleted schedule is gone")

    # ── devices and statistics
    driver.get(api + "/console/devices?by=tag&q=vip")
    rows = driver.find_elements(By.CSS_SELECTOR, "#found tbody tr")
    check(len(rows) > 0, f"the devices page finds the vip devices ({len(rows)} on the first page)")
    imported = [json.loads(line) for line in open(os.path.join(os.environ["HERALD_DEV_DIR"], "devices.ndjson"))]
    vip = sum(1 for device in imported if "vip" in device.get("tags", []))
    counts = {}
    for row in driver.find_elements(By.CSS_SELECTOR, "#tag-counts tbody tr"):
        cells = [cell.get_attribute("textContent").strip() for cell in row.find_elements(By.TAG_NAME, "td")]
        counts[cells[0]] = [int(cell.replace(",", "")) for cell in cells[1:]]
    shown = counts.get("vip", [0, 0, 0, 0])
    check(shown[0] + shown[3] == vip and shown[1] + shown[2] == shown[0],
          f"the devices page counts the vip devices: {shown[0]} active, {shown[3]} invalid, of {vip} imported")
    check(counts.get("All devices", [0])[0] >= shown[0], "and all devices above them")
    alias = next(device["alias"] for device in imported if device.get("alias"))
    driver.get(api + "/console/devices?by=alias&q=" + urllib.parse.quote(alias))
    check(len(driver.find_elements(By.CSS_SELECTOR, "#found tbody tr")) > 0, f"a look-up by alias finds {alias}")
    screenshot(driver, "06b-devices")
    driver.get(api + "/console/stats?range=24h")
    bars = [float(bar.get_attribute("height")) for bar in driver.find_elements(By.CSS_SELECTOR, ".timeline rect.seg-accepted")]
    check(any(height > 0 for height in bars), "the statistics chart draws this hour's accepted devices")
    screenshot(driver, "06c-statistics")

    # ── csrf
    session = driver.get_cookie("herald_console")["value"]
    before = status(tag_push)
    request = urllib.request.Request(
        f"{api}/console/pushes/{tag_push}/cancel", data=b"confirmed=1", method="POST",
        headers={"Cookie": f"herald_console={session}", "Content-Type": "application/x-www-form-urlencoded"})
    try:
        urllib.request.urlopen(request, timeout=10)
        refused = None
    except urllib.error.HTTPError as error:
        refused = error.code
    check(refused == 403, f"a form posted without the CSRF token is refused ({refused})")
    request = urllib.request.Request(
        f"{api}/console/sign-in", data=urllib.parse.urlencode({"key": server_key}).encode(), method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        urllib.request.urlopen(request, timeout=10)
        refused = None
    except urllib.error.HTTPError as error:
        refused = error.code
    check(refused == 403, f"a sign-in posted without the form's CSRF token is refused ({refused})")
    check(status(tag_push)["state"] == before["state"], "nothing changed")
    headers = urllib.request.urlopen(api + "/console/sign-in", timeout=10).headers
    policy = headers.get("Content-Security-Policy", "")
    check("script-src 'self'" in policy and "default-src 'none'" in policy and "unsafe-inline" not in policy,
          "pages carry a strict Content-Security-Policy")

    # ── sign out
    driver.get(api + "/console/pushes")
    driver.find_element(By.CSS_SELECTOR, ".who button").click()
    wait(driver, 10, expected_conditions.url_contains("signed_out"), "signing out")
    driver.get(api + "/console/pushes")
    check("/console/sign-in" in driver.current_url, "after signing out, pages ask to sign in again")
finally:
    driver.quit()

# ── narrow: the pages at a phone's width
driver = browser(390)
try:
    sign_in(driver, server_key)
    wait(driver, 15, expected_conditions.url_contains("/console/pushes"), "signed in at 390 px")
    wide = driver.execute_script("return document.documentElement.scrollWidth")
    check(wide <= 390, f"the pushes page fits 390 px ({wide})")
    screenshot(driver, "07-pushes-390")
    driver.get(api + "/console/compose")
    wide = driver.execute_script("return document.documentElement.scrollWidth")
    check(wide <= 390, f"the compose page fits 390 px ({wide})")
    screenshot(driver, "08-compose-390")
    driver.get(f"{api}/console/pushes/{tag_push}")
    wide = driver.execute_script("return document.documentElement.scrollWidth")
    check(wide <= 390, f"the push page fits 390 px ({wide})")
    screenshot(driver, "09-push-390")
finally:
    driver.quit()

if failures:
    log("FAILED: " + "; ".join(failures))
    sys.exit(1)
log("all console steps passed")
