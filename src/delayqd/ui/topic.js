// delayqd's dashboard, the topic page (docs/dashboard.md, "A topic"): one topic's jobs by state,
// a page at a time (/jobs/list), with an action on each row, and the topic's limits
// (/limits/set, /limits/clear, and stats' flow). Loaded after app.js, whose helpers it uses
// (call, act, confirm_first, el, row, button, when, $).
'use strict';

const STATES = ['ready', 'delayed', 'reserved', 'dead'];
const PAGE = 50;
// The time column of each state: which field of a job, and its heading.
const TIME_OF = { delayed: ['due_ms', 'due'], ready: ['due_ms', 'due'],
                  reserved: ['lease_deadline_ms', 'lease deadline'], dead: ['dead_since_ms', 'dead since'] };

// topic: its name; state: the tab shown; cursors: the cursor of each page shown so far
// ('' for the first), so that "previous" can go back.
const topic_page = { topic: '', state: 'ready', cursors: [''], next: null };

// Called by show_page() for #topic/<name>.
function show_topic(name) {
  if (name !== topic_page.topic) {
    topic_page.topic = name;
    topic_page.state = 'ready';
    topic_page.cursors = [''];
  }
  $('topic-name').textContent = name;
  render_tabs(state.last ? state.last.stats : null);
  act_quietly(list_topic_page);
}

// First page and Next page of a list read a page at a time: `paging` holds the cursor of each
// page shown so far (cursors, '' for the first) and the next page's (next, null after the last);
// list() reads the page at the last cursor. Also used by schedules.js.
function wire_pager(first, next, paging, list) {
  $(next).addEventListener('click', () => {
    if (!paging.next) return;
    paging.cursors.push(paging.next);
    act_quietly(list);
  });
  $(first).addEventListener('click', () => {
    paging.cursors = [''];
    act_quietly(list);
  });
}

// What the pager says under a page of `count` things, and which of its buttons work.
function show_pager(first, next, note, paging, count, noun) {
  $(note).textContent = 'page ' + paging.cursors.length + ', ' + count + ' ' + noun +
      (count === 1 ? '' : 's') + (paging.next ? '; there are more' : '');
  $(next).disabled = !paging.next;
  $(first).disabled = paging.cursors.length === 1;
}

// Runs a read: an error shows in the error box, nothing else changes.
async function act_quietly(fn) {
  try {
    await fn();
    show_error(null);
  } catch (e) {
    show_error(e);
  }
}

function render_tabs(stats) {
  const counts = stats && stats.topics[topic_page.topic];
  const box = $('topic-tabs');
  box.replaceChildren(...STATES.map((s) => {
    const b = button(s + (counts ? ' (' + counts[s] + ')' : ''), () => {
      topic_page.state = s;
      topic_page.cursors = [''];
      act_quietly(list_topic_page);
    }, s === topic_page.state ? 'tab here' : 'tab');
    b.dataset.state = s;
    return b;
  }));
  render_limits(stats);
}

// The page of the current state at the last cursor.
async function list_topic_page() {
  const { topic, state: s, cursors } = topic_page;
  const d = await call('/jobs/list', { topic, state: s, limit: PAGE, cursor: cursors[cursors.length - 1] });
  topic_page.next = d.cursor || null;
  const [field, heading] = TIME_OF[s];
  $('topic-time-heading').textContent = heading;
  const body = $('topic-jobs').tBodies[0];
  body.replaceChildren();
  for (const job of d.jobs) {
    const tr = row([job.id, job.priority, when(job[field]), job.attempts, job.body, actions_for(job)]);
    tr.dataset.id = job.id;
    body.appendChild(tr);
  }
  if (d.jobs.length === 0) body.appendChild(row(['no ' + s + ' job']));
  show_pager('topic-first', 'topic-next', 'topic-page-note', topic_page, d.jobs.length, 'job');
  $('topic-dead-actions').hidden = s !== 'dead';
  render_tabs(state.last ? state.last.stats : null);
}

// The buttons of one row: what makes sense in the job's state.
function actions_for(job) {
  const box = el('span', null, 'row-actions');
  const again = () => list_topic_page();
  if (job.state === 'delayed' || job.state === 'ready')
    box.appendChild(button('Reschedule', () => reschedule_row(job.id)));
  if (job.state === 'dead')
    box.appendChild(button('Requeue', () => act(async () => {
      await call('/dead/requeue', { id: job.id });
      await again();
    })));
  const what = job.state === 'dead' ? 'Delete dead letter ' : 'Cancel job ';
  box.appendChild(button(job.state === 'dead' ? 'Delete' : 'Cancel', async () => {
    if (!(await confirm_first(what + job.id + '? It is deleted and will never run.'))) return;
    await act(async () => {
      const d = await call('/delete', { id: job.id });
      if (!d.deleted) throw new ApiError('job ' + job.id + ' was already gone');
      await again();
    });
  }, 'danger'));
  return box;
}

async function reschedule_row(id) {
  const text = $('topic-delay').value;
  const delay = Number(text);
  if (text === '' || !(delay >= 0)) {
    show_error(new ApiError('give the new due time as seconds from now (0 or more) in the box above the table'));
    return;
  }
  if (!(await confirm_first('Move job ' + id + ' to ' + delay + ' s from now?'))) return;
  await act(async () => {
    await call('/reschedule', { id, delay });
    await list_topic_page();
  });
}

// Requeue all / purge all of this topic's dead letters, after asking.
async function topic_dead(question, route) {
  const topic = topic_page.topic;
  if (!(await confirm_first(question.replace('%', topic)))) return;
  await act(async () => {
    await call(route, { topic });
    topic_page.cursors = [''];
    await list_topic_page();
  });
}

// --- limits -------------------------------------------------------------------------------

function limits_text(flow) {
  if (!flow) return 'No limits: every consumer takes jobs as fast as they come.';
  const parts = [];
  const l = flow.limits;
  if (l.rate) parts.push(l.rate.count + ' per ' + span(l.rate.per_ms / 1000) + ', bursts of ' + l.rate.burst +
                         ' (' + flow.tokens + ' tokens now)');
  if (l.max_in_flight) parts.push('at most ' + l.max_in_flight + ' reserved at once (' + flow.in_flight + ' now)');
  return parts.join('; ') + '. Held back since delayqd opened its queue: ' + flow.throttled_rate +
      ' by the rate, ' + flow.throttled_concurrency + ' by the concurrency limit.';
}

function render_limits(stats) {
  const flow = stats && stats.flow ? stats.flow[topic_page.topic] : null;
  $('topic-limits').textContent = limits_text(flow);
  $('topic-limits').dataset.limited = flow ? 'yes' : 'no';
  $('limits-clear').disabled = !flow;
}

// The form's values as /limits/set wants them; empty fields are left out.
function limits_from_form() {
  const value = (id) => $(id).value.trim();
  const body = { topic: topic_page.topic };
  if (value('limit-count') || value('limit-per')) {
    body.rate = { count: Number(value('limit-count')), per_ms: Math.round(Number(value('limit-per')) * 1000) };
    if (value('limit-burst')) body.rate.burst = Number(value('limit-burst'));
  }
  if (value('limit-in-flight')) body.max_in_flight = Number(value('limit-in-flight'));
  return body;
}

function start_topic_page() {
  wire_pager('topic-first', 'topic-next', topic_page, list_topic_page);
  $('topic-requeue-all').addEventListener('click', () => topic_dead(
      'Requeue every dead letter of %? They run again now.', '/dead/requeue'));
  $('topic-purge').addEventListener('click', () => topic_dead(
      'Delete every dead letter of % for good?', '/dead/purge'));
  // The daemon checks every number and says which one is wrong.
  $('limits-form').addEventListener('submit', (e) => {
    e.preventDefault();
    act(() => call('/limits/set', limits_from_form()));
  });
  $('limits-clear').addEventListener('click', () => act(() => call('/limits/clear', { topic: topic_page.topic })));
}

document.addEventListener('DOMContentLoaded', start_topic_page);
