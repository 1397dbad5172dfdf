#!/usr/bin/python3
"""The dashboard in a real browser (docs/dashboard.md): delayqd on a loopback port with a store
holding known jobs, behind a bearer token; headless Chromium, driven by Selenium, types the
token, reads the counts, requeues and purges dead letters, cancels a job, pauses and resumes a
topic, pages through a topic's jobs, cancels and reschedules rows there, sets and clears a
topic's limits, creates, pauses, resumes and removes a schedule and pages through the schedules;
each effect is checked through the JSON API, not through the page. Screenshots of each page
(desk and phone widths) are written to --shots.

Usage: dashboard_test.py --delayqd PATH --shots DIR
Exit 77 (skipped) when Selenium or Chromium is missing; scripts/test.sh installs both.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    print("skipped: python3-selenium is not installed (scripts/test.sh installs it)")
    sys.exit(77)

TOKEN = "dashboard-test-token"
WAIT = 30  # seconds any one thing may take to show in the page


class Daemon:
    """delayqd on 127.0.0.1:<free port>, a fresh store, the token above."""

    def __init__(self, binary, workdir):
        token_file = os.path.join(workdir, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token_file, 0o600)
        self.log = open(os.path.join(workdir, "delayqd.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--store", os.path.join(workdir, "store"),
             "--token-file", token_file],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            raise SystemExit("delayqd did not start: " + line)
        self.url = "http://" + line.strip().rsplit(" ", 1)[-1]

    def answer(self, path, body=None):
        """The whole answer, refusals included."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data,
                                     headers={"Authorization": "Bearer " + TOKEN})
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return json.load(res)
        except urllib.error.HTTPError as e:
            return json.load(e)

    def call(self, path, body=None):
        answer = self.answer(path, body)
        if answer["code"] != 0:
            raise AssertionError(f"{path} {body}: {answer}")
        return answer["data"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self.log.close()
        if code != 0:
            raise AssertionError(f"delayqd exited {code}")


def seed(d):
    """Known jobs: order (three delayed, one ready), sms (one delayed), and a dead letter in each
    topic, made by popping a one-attempt job and failing it."""
    for i in range(3):
        d.call("/push", {"topic": "order", "id": f"order-{i}", "delay": 3600, "body": f"close {i}"})
    d.call("/push", {"topic": "order", "id": "order-now", "body": "due now"})
    d.call("/push", {"topic": "sms", "id": "sms-1", "delay": 86400, "body": "activate shop 7"})
    d.call("/push", {"topic": "order", "id": "order-dead", "body": "payment callback",
                     "retry": {"kind": "fixed", "delay": 1, "max_attempts": 1}})
    d.call("/push", {"topic": "sms", "id": "sms-dead", "body": "bad number",
                     "retry": {"kind": "fixed", "delay": 1, "max_attempts": 1}})
    job = d.call("/pop", {"topic": "sms", "timeout": 5})
    assert job["id"] == "sms-dead", job
    d.call("/nack", {"token": job["token"]})
    # Pop until the one-attempt job comes (order-now may come first: give it back).
    for _ in range(4):
        job = d.call("/pop", {"topic": "order", "timeout": 5})
        if job["id"] == "order-dead":
            d.call("/nack", {"token": job["token"]})
            return
        d.call("/nack", {"token": job["token"], "delay": 0})
    raise AssertionError("order-dead never came")


def browser():
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        print("skipped: chromium and chromium-driver are not installed (scripts/test.sh installs them)")
        sys.exit(77)
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    # Headless, and nothing that reaches the network: this machine's network is closed.
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--window-size=1280,900"]:
        opts.add_argument(flag)
    opts.add_argument("--user-data-dir=" + tempfile.mkdtemp(prefix="delayq-chromium-"))
    return webdriver.Chrome(service=Service(driver), options=opts)


def wait_for(b, what, check):
    """Waits until check(b) is truthy; fails naming `what`."""
    try:
        return WebDriverWait(b, WAIT, poll_frequency=0.1,
                             ignored_exceptions=[StaleElementReferenceException]).until(check)
    except Exception:
        raise AssertionError(f"the page never showed {what}; error box: "
                             f"{b.find_element(By.ID, 'error').text!r}")


def click(b, css):
    """Clicks what `css` selects, looking it up again if the page redrew it between the lookup and
    the click (tables are redrawn every few seconds)."""
    def once(b):
        b.find_element(By.CSS_SELECTOR, css).click()
        return True
    wait_for(b, css + " to click", once)


def texts(b, css):
    """The text of every element `css` selects, read in one go: the page redraws its tables at
    every refresh, so an element found one moment may be gone the next."""
    return b.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent)", css)


def topic_cells(b, topic):
    """A topic's row as shown: name, the four counts, whether it hands out jobs (its button's
    text is left out)."""
    return texts(b, f'#topics tr[data-topic="{topic}"] td')[:6]


def confirm(b):
    wait_for(b, "the confirmation", EC.visibility_of_element_located((By.ID, "confirm-yes")))
    click(b, "#confirm-yes")


def shoot(b, shots, name):
    b.save_screenshot(os.path.join(shots, name + ".png"))


def overview(b, d, shots):
    b.get(d.url + "/ui")
    # Behind the token: the page asks for it.
    wait_for(b, "the token form", EC.visibility_of_element_located((By.ID, "token")))
    b.find_element(By.ID, "token").send_keys(TOKEN + "\n")
    wait_for(b, "the order topic", lambda b: topic_cells(b, "order"))
    stats = d.call("/stats")
    for topic in ("order", "sms"):
        t = stats["topics"][topic]
        want = [topic, str(t["delayed"]), str(t["ready"]), str(t["reserved"]), str(t["dead"]),
                "paused" if t["paused"] else "yes"]
        wait_for(b, f"{topic}'s counts {want}", lambda b: topic_cells(b, topic) == want)
    assert stats["topics"]["order"]["dead"] == 1, stats
    wait_for(b, f"pushed {stats['pushed']}",
             lambda b: texts(b, '[data-total="pushed"] .value') == [str(stats["pushed"])])
    shoot(b, shots, "overview")


def dead_letters(b, d, shots):
    # The first topic's dead letters show without a click ("order" sorts first).
    b.get(d.url + "/ui#dead")
    row = '#dead-jobs tr[data-id="order-dead"]'
    wait_for(b, "the dead letter", EC.presence_of_element_located((By.CSS_SELECTOR, row)))
    # Choosing another topic lists its dead letters, again without a click.
    Select(b.find_element(By.ID, "dead-topic")).select_by_value("sms")
    wait_for(b, "sms's dead letter", EC.presence_of_element_located(
        (By.CSS_SELECTOR, '#dead-jobs tr[data-id="sms-dead"]')))
    Select(b.find_element(By.ID, "dead-topic")).select_by_value("order")
    wait_for(b, "the dead letter again", EC.presence_of_element_located((By.CSS_SELECTOR, row)))
    shoot(b, shots, "dead-letters")
    click(b, row + " button")
    wait_for(b, "the list without it", lambda b: not b.find_elements(By.CSS_SELECTOR, row))
    job = d.call("/get", {"id": "order-dead"})
    assert job["state"] == "ready" and job["attempts"] == 0, job
    # Purge all asks, then deletes the topic's dead letters.
    Select(b.find_element(By.ID, "dead-topic")).select_by_value("sms")
    click(b, "#dead-purge")
    confirm(b)
    wait_for(b, "sms's dead letters gone",
             lambda b: not d.call("/dead/list", {"topic": "sms"})["jobs"])
    assert d.call("/get", {"id": "sms-dead"}) is None
    assert d.call("/get", {"id": "sms-1"})["state"] == "delayed", "purge touched a live job"


def cancel(b, d, shots):
    b.get(d.url + "/ui#job")
    b.find_element(By.ID, "job-id").send_keys("order-1\n")
    wait_for(b, "the job's fields", EC.presence_of_element_located((By.ID, "job-fields")))
    state = texts(b, '#job-fields tr[data-field="state"] td:last-child')
    assert state == ["delayed"], state
    shoot(b, shots, "job")
    click(b, "#job-cancel")
    shoot(b, shots, "job-cancel-asks")
    # Keep first: nothing happens.
    wait_for(b, "the confirmation", EC.visibility_of_element_located((By.ID, "confirm-no")))
    click(b, "#confirm-no")
    assert d.call("/get", {"id": "order-1"}) is not None, "cancelled without a yes"
    click(b, "#job-cancel")
    confirm(b)
    wait_for(b, "the job gone", lambda b: "no job with id order-1" in
             b.find_element(By.ID, "job-result").text)
    assert d.call("/get", {"id": "order-1"}) is None, "the job is still there"


def pause(b, d, shots):
    """Pause asks first, then the topic hands out nothing (a pop finds no job though one is
    ready); Resume gives it back."""
    b.get(d.url + "/ui")
    button = '#topics tr[data-topic="order"] button'
    wait_for(b, "order's Pause button", lambda b: texts(b, button) == ["Pause"])
    click(b, button)
    confirm(b)
    wait_for(b, "order paused", lambda b: topic_cells(b, "order")[5:] == ["paused"])
    assert d.call("/stats")["topics"]["order"]["paused"] is True
    assert d.call("/stats")["topics"]["order"]["ready"] > 0, "nothing ready to hold back"
    assert d.call("/pop", {"topic": "order", "timeout": 0}) is None, "a paused topic handed out"
    shoot(b, shots, "paused-topic")
    wait_for(b, "order's Resume button", lambda b: texts(b, button) == ["Resume"])
    click(b, button)
    wait_for(b, "order running", lambda b: topic_cells(b, "order")[5:] == ["yes"])
    assert d.call("/stats")["topics"]["order"]["paused"] is False


def timing(b, d, shots):
    """What fires when, as /stats counts it; and a delivery made while the page is open shows in
    the last hour's lateness chart (the page opened by pause() above)."""
    for topic in ("order", "sms"):
        due = d.call("/stats")["topics"][topic]["due"]
        want = [topic] + [str(due[k]) for k in
                          ("next_minute", "next_hour", "next_day", "next_week", "beyond")]
        wait_for(b, f"{topic}'s due windows {want}",
                 lambda b: texts(b, f'#due tr[data-topic="{topic}"] td') == want)
    job = d.call("/pop", {"topic": "order", "timeout": 5})
    d.call("/finish", {"token": job["token"]})
    wait_for(b, "one delivery in the lateness chart",
             lambda b: sum(int(n) for n in b.execute_script(
                 "return Array.from(document.querySelectorAll('#lateness-svg rect'))"
                 ".map(r => r.dataset.count)")) == 1)
    note = texts(b, "#lateness-note")[0]
    assert "p99" in note and note.startswith("1 delivery in"), note
    b.set_window_size(1280, 1200)  # the chart and what fires when in one picture
    shoot(b, shots, "lateness")
    b.set_window_size(1280, 900)


def row_ids(b):
    return texts(b, "#topic-jobs tbody tr td:first-child")


def topic_page(b, d, shots):
    """A topic's jobs a page (50) at a time in hand-out order, a row cancelled and one
    rescheduled from the page, and the topic's limits set and cleared from its form."""
    specs = [{"topic": "pay", "id": f"pay-{i:02}", "body": f"callback {i}"} for i in range(52)]
    specs[40]["priority"] = 5  # the most urgent: handed out (and listed) first
    specs.append({"topic": "pay", "id": "pay-later", "delay": 600, "body": "later"})
    d.call("/push_batch", {"jobs": specs})
    listed = d.call("/jobs/list", {"topic": "pay", "state": "ready", "limit": 1000})["jobs"]
    want = [j["id"] for j in listed]
    assert want[0] == "pay-40" and len(want) == 52, want
    # The overview links each topic to its page.
    b.get(d.url + "/ui")
    wait_for(b, "pay's link", EC.presence_of_element_located(
        (By.CSS_SELECTOR, '#topics tr[data-topic="pay"] a')))
    click(b, '#topics tr[data-topic="pay"] a')
    wait_for(b, "pay's first page", lambda b: row_ids(b) == want[:50])
    assert texts(b, '#topic-jobs tr[data-id="pay-40"] td')[1] == "5"
    shoot(b, shots, "topic")
    click(b, "#topic-next")
    wait_for(b, "pay's second page", lambda b: row_ids(b) == want[50:])
    click(b, "#topic-first")
    wait_for(b, "pay's first page again", lambda b: row_ids(b) == want[:50])
    # Cancel on a row asks first.
    click(b, '#topic-jobs tr[data-id="pay-00"] button.danger')
    confirm(b)
    wait_for(b, "pay-00 gone from the page", lambda b: "pay-00" not in row_ids(b))
    assert d.call("/get", {"id": "pay-00"}) is None, "the cancelled row's job is still there"
    # Reschedule a delayed row to two hours from now.
    click(b, '#topic-tabs button[data-state="delayed"]')
    wait_for(b, "the delayed tab", lambda b: row_ids(b) == ["pay-later"])
    b.find_element(By.ID, "topic-delay").send_keys("7200")
    before_ms = time.time() * 1000
    click(b, '#topic-jobs tr[data-id="pay-later"] button')
    confirm(b)
    wait_for(b, "pay-later moved", lambda b: d.call("/get", {"id": "pay-later"})["due_ms"] >=
             before_ms + 7200 * 1000 - 1000)
    # Limits: set from the form, shown from /stats, cleared.
    for field, value in (("limit-count", "50"), ("limit-per", "1"), ("limit-burst", "10"),
                         ("limit-in-flight", "4")):
        b.find_element(By.ID, field).send_keys(value)
    click(b, "#limits-set")
    wait_for(b, "pay limited", lambda b: "pay" in d.call("/stats").get("flow", {}))
    limits = d.call("/stats")["flow"]["pay"]["limits"]
    assert limits == {"rate": {"count": 50, "per_ms": 1000, "burst": 10}, "max_in_flight": 4}, limits
    wait_for(b, "the limits shown", lambda b: texts(b, "#topic-limits")[0].startswith("50 per 1s"))
    shoot(b, shots, "topic-limits")
    click(b, "#limits-clear")
    wait_for(b, "pay's limits cleared", lambda b: "pay" not in d.call("/stats").get("flow", {}))
    wait_for(b, "no limits shown", lambda b: texts(b, "#topic-limits")[0].startswith("No limits"))


def fill(b, values):
    """Sets a form's fields (inputs and selects, by id) in one go: typing them key by key costs
    seconds and tests nothing of the page's own."""
    b.execute_script("for (const [id, v] of Object.entries(arguments[0]))"
                     "  document.getElementById(id).value = v;", values)


def schedule_cells(b, sid):
    """A schedule's row as shown, a cell of two lines (id and state; rule and zone; next
    occurrence in its zone and in UTC) as two cells, its buttons left out; None without the row."""
    return b.execute_script("""
        const tr = document.querySelector('#schedules tr[data-id="' + arguments[0] + '"]');
        if (!tr) return null;
        const cells = [];
        for (const td of Array.from(tr.cells).slice(0, -1)) {
          const parts = td.querySelectorAll('.part');
          if (parts.length) cells.push(...Array.from(parts).map((p) => p.textContent));
          else cells.push(td.textContent);
        }
        return cells;""", sid)


def utc(ms):
    """An instant as the page shows it in UTC: ISO 8601, milliseconds when there are any."""
    text = datetime.fromtimestamp(ms // 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{ms % 1000:03}Z" if ms % 1000 else "Z")


def schedule_shown(d, sid):
    """What the row of schedule `sid` must show, from /schedules/get; its next occurrence's wall
    clock in its zone from Python's tz database, not the page's."""
    s = d.call("/schedules/get", {"id": sid})
    nxt = s["next"][0]
    zone = s["zone"] or "UTC"  # the queue reads an empty zone as UTC
    local = datetime.fromtimestamp(nxt["ms"] / 1000, ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S")
    return [s["id"], "paused" if s["paused"] else "running", s["rule"], zone, s["job"]["topic"],
            local, utc(nxt["ms"]), utc(s["last_fired"]["ms"]) if s["last_fired"] else "",
            str(s["fired"]), str(s["skipped_overlap"]), str(s["skipped_catch_up"]),
            str(len(s["live_jobs"]))]


def schedule_state(b, sid):
    """"running" or "paused" as the row of `sid` shows it, "" without the row."""
    return (schedule_cells(b, sid) or ["", ""])[1]


def schedule_ids(b):
    return texts(b, "#schedules tbody tr[data-id] td:first-child .part:first-child")


def schedules(b, d, shots):
    """A schedule created from the form is listed as /schedules/get reports it (its next run
    09:00 in its zone); Pause (after asking) and Resume reach it; a rule that never fires shows
    the daemon's own message and stores nothing; Remove (after asking) deletes it; the list pages
    50 at a time in /schedules/list's order; a removed schedule's jobs stay."""
    def get(sid):
        return d.call("/schedules/get", {"id": sid})

    def listed():
        return [s["id"] for s in d.call("/schedules/list", {})["schedules"]]

    # One made through the API that has fired (its first occurrence is its creation), held still
    # (paused), so that the counters shown are not 0.
    d.call("/schedules/set", {"id": "tick", "rule": "every 1s", "job": {"topic": "tick"}})
    wait_for(b, "tick fired", lambda b: get("tick")["fired"] >= 1)
    d.call("/schedules/pause", {"id": "tick"})
    click(b, "#nav-schedules")  # from the topic page left open by topic_page()
    spec = {"id": "nightly", "rule": "0 9 * * *", "zone": "Europe/Berlin",
            "job": {"topic": "sweep", "body": "remind members", "priority": 3},
            "catch_up": "all", "overlap": "skip"}
    fill(b, {"schedule-id": "nightly", "schedule-rule": "0 9 * * *",
             "schedule-zone": "Europe/Berlin", "schedule-topic": "sweep", "schedule-body": "remind members", "schedule-priority": "3",
             "schedule-catch-up": "all", "schedule-overlap": "skip"})
    click(b, "#schedule-set")
    wait_for(b, "nightly stored", lambda b: "nightly" in listed())
    s = get("nightly")
    assert {k: s[k] for k in spec} == spec and not s["paused"], s
    wait_for(b, "nightly as /schedules/get has it",
             lambda b: schedule_cells(b, "nightly") == schedule_shown(d, "nightly"))
    shown = schedule_cells(b, "nightly")
    assert shown[5].endswith(" 09:00:00"), shown  # 09:00 in Berlin
    assert shown[6] in [n["utc"] for n in get("nightly")["next"]], shown
    wait_for(b, "tick as /schedules/get has it",
             lambda b: schedule_cells(b, "tick") == schedule_shown(d, "tick"))
    assert schedule_cells(b, "tick")[8] != "0"
    # Its row marked paused, the coming occurrences and the live jobs' ids in the tooltips.
    tick = get("tick")
    assert b.execute_script("""
        const tr = document.querySelector('#schedules tr[data-id="tick"]');
        return [tr.className, tr.cells[3].firstChild.title, tr.cells[8].firstChild.title];""") == \
        ["paused", "next (UTC): " + ", ".join(utc(n["ms"]) for n in tick["next"]),
         "\n".join(tick["live_jobs"])]
    shoot(b, shots, "schedules")
    # Pause asks first; Resume does not.
    row = '#schedules tr[data-id="nightly"]'
    click(b, row + " button:not(.danger)")
    confirm(b)
    wait_for(b, "nightly paused", lambda b: get("nightly")["paused"])
    wait_for(b, "nightly shown paused", lambda b: schedule_state(b, "nightly") == "paused")
    wait_for(b, "nightly's Resume button",
             lambda b: texts(b, row + " button:not(.danger)") == ["Resume"])
    click(b, row + " button:not(.danger)")
    wait_for(b, "nightly resumed", lambda b: not get("nightly")["paused"])
    wait_for(b, "nightly shown running", lambda b: schedule_state(b, "nightly") == "running")
    # A rule that never fires: the daemon's message, and nothing stored.
    fill(b, {"schedule-id": "broken", "schedule-rule": "0 0 30 2 *"})
    click(b, "#schedule-set")
    refusal = d.answer("/schedules/set", dict(spec, id="broken", rule="0 0 30 2 *"))
    assert refusal["code"] != 0 and "rule" in refusal["message"], refusal
    wait_for(b, "the daemon's refusal",
             lambda b: b.find_element(By.ID, "error").text == refusal["message"])
    assert d.answer("/schedules/get", {"id": "broken"})["code"] != 0, "a refused one was stored"
    # Remove asks first. (51 more schedules first: the list redrawn after the removal pages.)
    for i in range(51):
        d.call("/schedules/set", {"id": f"s-{i:02}", "rule": "0 9 * * *",
                                  "job": {"topic": "sweep"}})
    click(b, row + " button.danger")
    confirm(b)
    wait_for(b, "nightly removed", lambda b: "nightly" not in listed())
    wait_for(b, "nightly gone from the page", lambda b: schedule_cells(b, "nightly") is None)
    # Pages of 50, in /schedules/list's order.
    first = d.call("/schedules/list", {"limit": 50})
    second = d.call("/schedules/list", {"limit": 50, "cursor": first["cursor"]})
    want = [[s["id"] for s in page["schedules"]] for page in (first, second)]
    assert len(want[0]) == 50 and want[1] == ["s-50", "tick"], want
    wait_for(b, "the first page of schedules", lambda b: schedule_ids(b) == want[0])
    click(b, "#schedules-next")
    wait_for(b, "the second page of schedules", lambda b: schedule_ids(b) == want[1])
    click(b, "#schedules-first")
    wait_for(b, "the first page of schedules again", lambda b: schedule_ids(b) == want[0])
    # Removing a schedule leaves the jobs it pushed.
    click(b, "#schedules-next")
    click(b, '#schedules tr[data-id="tick"] button.danger')
    confirm(b)
    wait_for(b, "tick removed", lambda b: d.answer("/schedules/get", {"id": "tick"})["code"] != 0)
    assert d.call("/get", {"id": tick["live_jobs"][0]})["state"] == "ready", tick


def phone(b, d, shots):
    b.set_window_size(390, 844)
    b.get(d.url + "/ui")
    wait_for(b, "the order topic", lambda b: topic_cells(b, "order"))
    # Nothing wider than the screen but the tables' own scrolling box.
    width = b.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide on a 390 px screen"
    shoot(b, shots, "phone-overview")
    # The schedules page too (its table is the widest), with the schedules schedules() left.
    click(b, "#nav-schedules")
    wait_for(b, "the schedules", lambda b: len(schedule_ids(b)) == 50)
    width = b.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, f"the schedules page is {width} px wide on a 390 px screen"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--delayqd", required=True)
    p.add_argument("--shots", required=True)
    args = p.parse_args()
    os.makedirs(args.shots, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="delayq-dashboard-") as work:
        d = Daemon(args.delayqd, work)
        b = None
        try:
            seed(d)
            b = browser()
            overview(b, d, args.shots)
            dead_letters(b, d, args.shots)
            cancel(b, d, args.shots)
            pause(b, d, args.shots)
            timing(b, d, args.shots)
            topic_page(b, d, args.shots)
            schedules(b, d, args.shots)
            phone(b, d, args.shots)
        finally:
            if b is not None:
                b.quit()
            d.stop()
    print("dashboard: every page checked; screenshots in", args.shots)


if __name__ == "__main__":
    main()
