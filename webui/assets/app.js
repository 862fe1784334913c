// app.js: the UI's shell. It routes the location's hash to a view
// (#/analyses[/ANALYSIS], #/notebook[/SESSION], #/runs[/RUN],
// #/agent-runs[/AGENT_RUN]), marks the current one in the
// header, shows the server's health and wires the API key prompt. A view
// is a module exporting render(main, params, signal): signal aborts when
// the user leaves the view, ending its requests and streams.

import { health } from './api.js';
import { clear } from './dom.js';
import { setupKeys } from './keys.js';
import * as analyses from './analyst.js';
import * as notebook from './notebook.js';
import * as runs from './runs.js';
import * as agentRuns from './agentruns.js';

/** VIEWS maps the first part of the hash to a view; the Analyst (analyses) is the default. */
const VIEWS = { analyses, notebook, runs, 'agent-runs': agentRuns };
const DEFAULT_VIEW = 'analyses';

let current = null; // {name, controller}

function route() {
  const [name = '', ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const view = VIEWS[name] ? name : DEFAULT_VIEW;
  if (!VIEWS[name]) {
    history.replaceState(null, '', '#/' + view);
  }
  current?.controller.abort();
  const controller = new AbortController();
  current = { name: view, controller };
  for (const a of document.querySelectorAll('nav a[data-view]')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const main = clear(document.getElementById('main'));
  main.dataset.view = view;
  return VIEWS[view].render(main, rest.map(decodeURIComponent), controller.signal);
}

async function showHealth() {
  const el = document.getElementById('health');
  try {
    const status = await health(AbortSignal.timeout(5000));
    el.textContent = 'Server: ' + status;
    el.dataset.state = status === 'ok' ? 'ok' : 'bad';
  } catch {
    el.textContent = 'Server: unreachable';
    el.dataset.state = 'bad';
  }
}

setupKeys();
// The skip link moves the focus to the content; following its #main would
// change the hash, which is the route, and leave the view.
document.querySelector('a.skip').addEventListener('click', (ev) => {
  ev.preventDefault();
  document.getElementById('main').focus();
});
window.addEventListener('hashchange', route);
window.addEventListener('crucible:key', route); // another key, maybe another tenant: reload the view
// The marks time the first render: the shell and the view's frame
// (first-render), then the view's first answer from the API (view-ready).
const ready = route();
performance.mark('crucible:first-render');
ready.finally(() => performance.mark('crucible:view-ready'));
showHealth();
setInterval(showHealth, 30000);
