// delayqd's dashboard, the schedules page (docs/dashboard.md, "Schedules"): the schedules a page
// at a time (/schedules/list), each as /schedules/get reports it, with Pause/Resume and Remove on
// its row, and a form that posts /schedules/set. Loaded after app.js and topic.js, whose helpers
// it uses (call, act, confirm_first, el, row, button, when, $; act_quietly, wire_pager,
// show_pager).
'use strict';

const SCHEDULE_PAGE = 50;

// cursors: the cursor of each page shown so far ('' for the first); seq: the latest listing
// asked for, so that an answer overtaken by a later one (a refresh racing an action) is dropped.
const schedule_page = { cursors: [''], next: null, seq: 0 };

// An instant as the wall clock of `zone` reads it ("2026-12-02 09:00:00"), by the browser's own
// time zone data; '' when the browser does not know the zone (the UTC instant is shown anyway).
function in_zone(ms, zone) {
  try {
    const parts = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit',
    }).formatToParts(new Date(ms));
    const p = Object.fromEntries(parts.map((x) => [x.type, x.value]));
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
  } catch (e) {
    return '';
  }
}

// A schedule's zone: "UTC" when its spec leaves it empty, as the queue reads it.
const zone_of = (s) => s.zone || 'UTC';

// A cell of two lines, the second smaller (the table stays narrow enough for a desk).
function two_lines(first, second) {
  const box = el('span', null, 'two');
  box.appendChild(el('span', first, 'part'));
  box.appendChild(el('span', second, 'part'));
  return box;
}

// The next occurrence in the schedule's zone and in UTC (to the millisecond, as the other pages
// show times); the coming ones after it in the cell's tooltip.
function next_cell(s) {
  if (s.next.length === 0) return el('span', 'none');
  const box = two_lines(in_zone(s.next[0].ms, zone_of(s)), when(s.next[0].ms));
  box.title = 'next (UTC): ' + s.next.map((n) => when(n.ms)).join(', ');
  return box;
}

function schedule_actions(s) {
  const box = el('span', null, 'row-actions');
  box.appendChild(s.paused
    ? button('Resume', () => act(() => call('/schedules/resume', { id: s.id })))
    : button('Pause', () => pause_schedule(s)));
  box.appendChild(button('Remove', () => remove_schedule(s.id), 'danger'));
  return box;
}

// A paused schedule pushes nothing; on resume, what it missed goes by its catch-up policy.
async function pause_schedule(s) {
  if (!(await confirm_first('Pause schedule ' + s.id + '? It pushes no job until it is resumed; ' +
                            'then the occurrences it missed go by its catch-up policy (' +
                            s.catch_up + ').'))) return;
  await act(() => call('/schedules/pause', { id: s.id }));
}

async function remove_schedule(id) {
  if (!(await confirm_first('Remove schedule ' + id + '? It pushes no more jobs; the jobs it ' +
                            'already pushed stay.'))) return;
  await act(() => call('/schedules/remove', { id }));
}

// The page at the last cursor; called on opening the page, by its buttons and by refresh().
async function list_schedules() {
  const seq = ++schedule_page.seq;
  const cursors = schedule_page.cursors;
  const d = await call('/schedules/list',
                       { limit: SCHEDULE_PAGE, cursor: cursors[cursors.length - 1] });
  if (seq !== schedule_page.seq) return;
  schedule_page.next = d.cursor || null;
  const body = $('schedules').tBodies[0];
  body.replaceChildren();
  for (const s of d.schedules) {
    const live = el('span', s.live_jobs.length);
    live.title = s.live_jobs.join('\n');
    const tr = row([two_lines(s.id, s.paused ? 'paused' : 'running'), two_lines(s.rule, zone_of(s)),
                    s.job.topic, next_cell(s),
                    el('span', s.last_fired ? when(s.last_fired.ms) : '', 'small'),
                    s.fired, s.skipped_overlap, s.skipped_catch_up, live, schedule_actions(s)]);
    tr.dataset.id = s.id;
    if (s.paused) tr.classList.add('paused');
    body.appendChild(tr);
  }
  if (d.schedules.length === 0) body.appendChild(row(['no schedule']));
  show_pager('schedules-first', 'schedules-next', 'schedules-page-note', schedule_page,
             d.schedules.length, 'schedule');
}

// The form's values as /schedules/set wants them; empty optional fields are left out, and the
// daemon checks the rest (its message names what is wrong).
function schedule_from_form() {
  const value = (id) => $(id).value.trim();
  const job = { topic: value('schedule-topic'), body: $('schedule-body').value };
  if (value('schedule-priority')) job.priority = Number(value('schedule-priority'));
  const spec = { id: value('schedule-id'), rule: value('schedule-rule'), job,
                 catch_up: $('schedule-catch-up').value, overlap: $('schedule-overlap').value };
  if (value('schedule-zone')) spec.zone = value('schedule-zone');
  return spec;
}

function start_schedules_page() {
  wire_pager('schedules-first', 'schedules-next', schedule_page, list_schedules);
  $('schedule-form').addEventListener('submit', (e) => {
    e.preventDefault();
    act(() => call('/schedules/set', schedule_from_form()));
  });
}

document.addEventListener('DOMContentLoaded', start_schedules_page);
