// delayqd's dashboard (docs/dashboard.md): plain DOM, no library, no network but this daemon.
// Every value from the queue is put into the page as text (textContent), never as markup.
// Kept whole over ~400 lines: the page loads its scripts with no module loader or build step
// (embed_ui.cmake embeds the files as they are), and its parts (totals, rates, topics, the
// lateness chart, dead letters) share one refresh loop and its state. The topic page is in
// topic.js and the schedules page in schedules.js, loaded after this file.
'use strict';

const REFRESH_MS = 2000;
const TOTALS = ['pushed', 'delivered', 'acked', 'retried', 'dead_lettered', 'cancelled',
                'requeued', 'purged', 'leases_expired', 'released'];
const RATES = ['pushed', 'delivered', 'acked'];  // shown per second beside their totals

const WINDOW_MS = 3600 * 1000;  // the lateness chart's window
const DUE = ['next_minute', 'next_hour', 'next_day', 'next_week', 'beyond'];

const $ = (id) => document.getElementById(id);
// history: {at, buckets} snapshots of the lateness buckets summed over topics and attempts,
// for the last hour's chart (the counts are cumulative: a window is a difference).
// dead_listed: the topic whose dead letters the dead-letters page shows.
const state = { token: sessionStorage.getItem('delayq-token') || '', last: null, timer: 0,
                history: [], dead_listed: null };

// --- talking to delayqd -------------------------------------------------------------------

class ApiError extends Error {}

// Calls a route; resolves with its `data`, rejects with an ApiError carrying its `message`.
// A 401 asks for the token and rejects.
async function call(path, body) {
  const init = { method: body === undefined ? 'GET' : 'POST', headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  if (state.token) init.headers.Authorization = 'Bearer ' + state.token;
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError('delayqd does not answer (' + e.message + ')');
  }
  let answer = null;
  try {
    answer = await res.json();
  } catch (e) {
    throw new ApiError(path + ' answered ' + res.status + ' without JSON');
  }
  if (res.status === 401) {
    $('token-form').hidden = false;
    throw new ApiError(answer.message || 'a token is needed');
  }
  if (answer.code !== 0) throw new ApiError(answer.message || path + ' failed');
  return answer.data;
}

function show_error(e) {
  $('error').textContent = e ? e.message : '';
  $('error').hidden = !e;
}

// Runs an action that changes the queue: errors are shown, and the page is refreshed after.
async function act(fn) {
  try {
    await fn();
    show_error(null);
  } catch (e) {
    show_error(e);
  }
  refresh();
}

// Asks before a change; resolves true when the operator says yes.
function confirm_first(text) {
  const d = $('confirm');
  $('confirm-text').textContent = text;
  d.returnValue = '';
  d.showModal();
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'yes'), { once: true });
  });
}

// --- small DOM helpers --------------------------------------------------------------------

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells) {
  const tr = el('tr');
  for (const c of cells) {
    const td = el('td');
    if (c instanceof Node) td.appendChild(c); else td.textContent = String(c);
    tr.appendChild(td);
  }
  return tr;
}

function button(text, onclick, cls) {
  const b = el('button', text, cls);
  b.type = 'button';
  b.addEventListener('click', onclick);
  return b;
}

const when = (ms) => (ms ? new Date(ms).toISOString().replace('.000Z', 'Z') : '');

// --- overview -----------------------------------------------------------------------------

function render_totals(stats, rates) {
  const box = $('totals');
  box.replaceChildren();
  for (const name of TOTALS) {
    const card = el('div', null, 'card');
    card.appendChild(el('span', name.replace('_', ' '), 'label'));
    card.appendChild(el('span', stats[name], 'value'));
    if (rates && name in rates) card.appendChild(el('span', rates[name].toFixed(1) + '/s', 'rate'));
    card.dataset.total = name;
    box.appendChild(card);
  }
}

// --- lateness -----------------------------------------------------------------------------

// A bound in seconds, as people read it: 100µs, 2.5ms, 30s, 15min, 4h.
function span(s) {
  if (s < 1e-3) return Math.round(s * 1e6) + 'µs';
  if (s < 1) return +(s * 1e3).toPrecision(3) + 'ms';
  if (s < 60) return +s.toPrecision(3) + 's';
  if (s < 3600) return +(s / 60).toPrecision(3) + 'min';
  return +(s / 3600).toPrecision(3) + 'h';
}

// The bound of the bucket where the running count reaches q of all: "≤25ms", "> 4h", or "".
function quantile(buckets, bounds, q) {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return '';
  let sum = 0;
  for (let i = 0; i < buckets.length; ++i) {
    sum += buckets[i];
    if (sum >= q * total) return i < bounds.length ? '≤' + span(bounds[i]) : '> ' + span(bounds[bounds.length - 1]);
  }
  return '';
}

function summed_buckets(stats) {
  const sum = new Array(stats.lateness_bounds_s.length + 1).fill(0);
  for (const t of Object.values(stats.topics)) {
    if (!t.lateness) continue;
    for (const a of [t.lateness.first, t.lateness.retry])
      a.buckets.forEach((n, i) => { sum[i] += n; });
  }
  return sum;
}

// The last hour's lateness as bars, one per bucket (hand-made SVG: no library).
function render_lateness(stats, at) {
  const bounds = stats.lateness_bounds_s;
  const now = summed_buckets(stats);
  state.history.push({ at, buckets: now });
  while (state.history.length > 1 && state.history[1].at <= at - WINDOW_MS) state.history.shift();
  const base = state.history[0];
  const win = now.map((n, i) => Math.max(0, n - (base.at < at ? base.buckets[i] : 0)));
  const total = win.reduce((a, b) => a + b, 0);
  const minutes = Math.round((at - base.at) / 60000);
  $('lateness-note').textContent = total === 0
    ? 'No delivery in the window yet.'
    : total + (total === 1 ? ' delivery' : ' deliveries') + ' in the last ' + (minutes >= 1 ? minutes + ' min' : 'refresh') +
      ' (since this page opened, at most an hour): p50 ' + quantile(win, bounds, 0.5) +
      ', p99 ' + quantile(win, bounds, 0.99) + '.';
  const w = 24, h = 120, gap = 4;
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', `0 0 ${win.length * w} ${h + 40}`);
  svg.setAttribute('role', 'img');
  svg.id = 'lateness-svg';
  const max = Math.max(1, ...win);
  win.forEach((n, i) => {
    const bar = document.createElementNS(svg.namespaceURI, 'rect');
    const bh = Math.round((n / max) * h);
    bar.setAttribute('x', i * w + gap / 2);
    bar.setAttribute('y', h - bh);
    bar.setAttribute('width', w - gap);
    bar.setAttribute('height', bh);
    bar.dataset.count = n;
    const title = document.createElementNS(svg.namespaceURI, 'title');
    title.textContent = (i < bounds.length ? '≤' + span(bounds[i]) : '> ' + span(bounds[bounds.length - 1])) + ': ' + n;
    bar.appendChild(title);
    svg.appendChild(bar);
    if (i % 3 === 0 || i === win.length - 1) {
      const label = document.createElementNS(svg.namespaceURI, 'text');
      label.setAttribute('x', i * w + w / 2);
      label.setAttribute('y', h + 16);
      label.textContent = i < bounds.length ? span(bounds[i]) : '+Inf';
      svg.appendChild(label);
    }
  });
  $('lateness-chart').replaceChildren(svg);
}

function render_due(stats) {
  const body = $('due').tBodies[0];
  body.replaceChildren();
  for (const name of Object.keys(stats.topics).sort()) {
    const due = stats.topics[name].due;
    if (!due) continue;
    const tr = row([name, ...DUE.map((k) => due[k])]);
    tr.dataset.topic = name;
    body.appendChild(tr);
  }
}

function render_topics(stats) {
  const body = $('topics').tBodies[0];
  body.replaceChildren();
  const names = Object.keys(stats.topics).sort();
  for (const name of names) {
    const t = stats.topics[name];
    const toggle = t.paused
      ? button('Resume', () => act(() => call('/resume', { topic: name })))
      : button('Pause', () => pause_topic(name));
    const first = t.lateness ? t.lateness.first.buckets : [];
    const link = el('a', name);
    link.href = '#topic/' + encodeURIComponent(name);
    const tr = row([link, t.delayed, t.ready, t.reserved, t.dead, t.paused ? 'paused' : 'yes', toggle,
                    t.oldest_ready_s ? span(t.oldest_ready_s) : '',
                    quantile(first, stats.lateness_bounds_s, 0.5),
                    quantile(first, stats.lateness_bounds_s, 0.99)]);
    tr.dataset.topic = name;
    if (t.paused) tr.classList.add('paused');
    body.appendChild(tr);
  }
  if (names.length === 0) body.appendChild(row(['no topic holds a job']));
}

// A paused topic hands out nothing until it is resumed: asked first.
async function pause_topic(name) {
  if (!(await confirm_first('Pause ' + name + '? Its jobs keep falling due but nobody gets them ' +
                            'until it is resumed.'))) return;
  await act(() => call('/pause', { topic: name }));
}

// Per-second rates of some totals between two snapshots.
function rates_between(before, after) {
  if (!before) return null;
  const seconds = (after.at - before.at) / 1000;
  if (seconds <= 0) return null;
  const r = {};
  for (const name of RATES) r[name] = Math.max(0, after.stats[name] - before.stats[name]) / seconds;
  return r;
}

function fill_dead_topics(stats) {
  const select = $('dead-topic');
  const chosen = select.value;
  const names = Object.keys(stats.topics).filter((n) => stats.topics[n].dead > 0).sort();
  if (chosen && !names.includes(chosen)) names.unshift(chosen);
  const label = (n) => n + (stats.topics[n] ? ' (' + stats.topics[n].dead + ')' : '');
  // Rebuilt only when it changed: an open list is not closed under the operator's finger.
  const same = select.options.length === names.length &&
      names.every((n, i) => select.options[i].value === n && select.options[i].text === label(n));
  if (same) return;
  select.replaceChildren(...names.map((n) => {
    const o = el('option', label(n));
    o.value = n;
    return o;
  }));
  if (chosen) select.value = chosen;
}

async function refresh() {
  try {
    const [stats, health] = await Promise.all([call('/stats'), health_text()]);
    const now = { at: Date.now(), stats };
    render_totals(stats, rates_between(state.last, now));
    render_topics(stats);
    render_lateness(stats, now.at);
    render_due(stats);
    fill_dead_topics(stats);
    state.last = now;
    if (!$('page-topic').hidden) render_tabs(stats);
    if (!$('page-schedules').hidden) await list_schedules();
    // The dead-letters page lists the chosen topic's dead letters without a click.
    if (!$('page-dead').hidden && $('dead-topic').value !== state.dead_listed) await list_dead();
    $('as-of').textContent = new Date(now.at).toLocaleTimeString();
    $('health').textContent = health;
    $('health').className = 'badge ' + (health === 'healthy' ? 'ok' : 'bad');
    $('token-form').hidden = true;
  } catch (e) {
    show_error(e);
  }
}

// /health answers without the token; its message says what is wrong when it is not ok.
async function health_text() {
  try {
    const res = await fetch('/health');
    const a = await res.json();
    return res.ok ? 'healthy' : a.message || 'unhealthy';
  } catch (e) {
    return 'unreachable';
  }
}

// --- one job ------------------------------------------------------------------------------

const JOB_FIELDS = [['id', 'id'], ['topic', 'topic'], ['state', 'state'], ['attempts', 'attempts'],
                    ['max attempts', 'max_attempts'], ['due', 'due_ms'],
                    ['lease deadline', 'lease_deadline_ms'], ['ttr (s)', 'ttr'], ['body', 'body']];

async function look_up(id) {
  const out = $('job-result');
  out.replaceChildren();
  $('job-actions').hidden = true;
  if (!id) return;
  const job = await call('/get', { id });
  if (job === null) {
    out.appendChild(el('p', 'no job with id ' + id, 'note'));
    return;
  }
  const table = el('table', null, 'fields');
  table.id = 'job-fields';
  for (const [label, key] of JOB_FIELDS) {
    if (!(key in job)) continue;
    const value = key.endsWith('_ms') ? when(job[key]) : job[key];
    const tr = row([label, value]);
    tr.dataset.field = key;
    table.appendChild(tr);
  }
  out.appendChild(table);
  $('job-actions').hidden = false;
}

async function cancel_job() {
  const id = $('job-id').value.trim();
  if (!(await confirm_first('Cancel job ' + id + '? It is deleted and will never run.'))) return;
  await act(async () => {
    const d = await call('/delete', { id });
    if (!d.deleted) throw new ApiError('job ' + id + ' was already gone');
    await look_up(id);
  });
}

async function reschedule_job() {
  const id = $('job-id').value.trim();
  const delay = Number($('job-delay').value);
  if ($('job-delay').value === '' || !(delay >= 0)) {
    show_error(new ApiError('give the new due time as seconds from now (0 or more)'));
    return;
  }
  if (!(await confirm_first('Move job ' + id + ' to ' + delay + ' s from now?'))) return;
  await act(async () => {
    await call('/reschedule', { id, delay });
    await look_up(id);
  });
}

// --- dead letters -------------------------------------------------------------------------

async function list_dead() {
  const topic = $('dead-topic').value;
  state.dead_listed = topic;
  const body = $('dead-jobs').tBodies[0];
  body.replaceChildren();
  $('dead-note').textContent = '';
  if (!topic) {
    $('dead-note').textContent = 'No topic has dead letters.';
    return;
  }
  const d = await call('/dead/list', { topic, limit: 100 });
  for (const job of d.jobs) {
    const requeue = button('Requeue', () => act(async () => {
      await call('/dead/requeue', { id: job.id });
      await list_dead();
    }));
    const tr = row([job.id, job.attempts, when(job.due_ms), job.body, requeue]);
    tr.dataset.id = job.id;
    body.appendChild(tr);
  }
  $('dead-note').textContent = d.jobs.length + (d.jobs.length === 1 ? ' dead letter' : ' dead letters') + ' shown' +
      (d.truncated || d.jobs.length === 100 ? ' (the oldest; there may be more)' : '');
}

// Requeue all or purge all: a whole topic's dead letters, after asking.
async function whole_topic(question, route) {
  const topic = $('dead-topic').value;
  if (!topic || !(await confirm_first(question.replace('%', topic)))) return;
  await act(async () => {
    await call(route, { topic });
    await list_dead();
  });
}

// --- pages and start ----------------------------------------------------------------------

// #overview, #job, #dead, #schedules (schedules.js), or #topic/<name> (topic.js).
function show_page() {
  const [page, ...rest] = (location.hash || '#overview').slice(1).split('/');
  for (const p of ['overview', 'job', 'dead', 'schedules', 'topic']) {
    $('page-' + p).hidden = p !== page;
    const nav = $('nav-' + p);
    if (nav) nav.classList.toggle('here', p === page);
  }
  if (page === 'topic') show_topic(decodeURIComponent(rest.join('/')));
  if (page === 'dead' && $('dead-topic').value) act(list_dead);
  if (page === 'schedules') act_quietly(list_schedules);
}

function schedule_refresh() {
  clearInterval(state.timer);
  if ($('auto-refresh').checked) state.timer = setInterval(refresh, REFRESH_MS);
}

function start() {
  window.addEventListener('hashchange', show_page);
  show_page();
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    state.token = $('token').value.trim();
    sessionStorage.setItem('delayq-token', state.token);
    show_error(null);
    refresh();
  });
  $('job-form').addEventListener('submit', (e) => {
    e.preventDefault();
    act(() => look_up($('job-id').value.trim()));
  });
  $('job-cancel').addEventListener('click', cancel_job);
  $('job-reschedule').addEventListener('click', reschedule_job);
  $('dead-form').addEventListener('submit', (e) => {
    e.preventDefault();
    act(list_dead);
  });
  $('dead-topic').addEventListener('change', () => act(list_dead));
  $('dead-requeue-all').addEventListener('click', () => whole_topic(
      'Requeue every dead letter of %? They run again now.', '/dead/requeue'));
  $('dead-purge').addEventListener('click', () => whole_topic(
      'Delete every dead letter of % for good?', '/dead/purge'));
  $('auto-refresh').addEventListener('change', schedule_refresh);
  refresh();
  schedule_refresh();
}

document.addEventListener('DOMContentLoaded', start);
