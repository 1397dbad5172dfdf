// delayqd's dashboard (docs/dashboard.md): plain DOM, no library, no network but this daemon.
// Every value from the queue is put into the page as text (textContent), never as markup.
'use strict';

const REFRESH_MS = 2000;
const TOTALS = ['pushed', 'delivered', 'acked', 'retried', 'dead_lettered', 'cancelled',
                'requeued', 'purged', 'leases_expired', 'released'];
const RATES = ['pushed', 'delivered', 'acked'];  // shown per second beside their totals

const $ = (id) => document.getElementById(id);
const state = { token: sessionStorage.getItem('delayq-token') || '', last: null, timer: 0 };

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

function render_topics(stats) {
  const body = $('topics').tBodies[0];
  body.replaceChildren();
  const names = Object.keys(stats.topics).sort();
  for (const name of names) {
    const t = stats.topics[name];
    const toggle = t.paused
      ? button('Resume', () => act(() => call('/resume', { topic: name })))
      : button('Pause', () => pause_topic(name));
    const tr = row([name, t.delayed, t.ready, t.reserved, t.dead, t.paused ? 'paused' : 'yes', toggle]);
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
    fill_dead_topics(stats);
    state.last = now;
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

function show_page() {
  const page = (location.hash || '#overview').slice(1);
  for (const p of ['overview', 'job', 'dead']) {
    $('page-' + p).hidden = p !== page;
    $('nav-' + p).classList.toggle('here', p === page);
  }
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
  $('dead-requeue-all').addEventListener('click', () => whole_topic(
      'Requeue every dead letter of %? They run again now.', '/dead/requeue'));
  $('dead-purge').addEventListener('click', () => whole_topic(
      'Delete every dead letter of % for good?', '/dead/purge'));
  $('auto-refresh').addEventListener('change', schedule_refresh);
  refresh();
  schedule_refresh();
}

document.addEventListener('DOMContentLoaded', start);
