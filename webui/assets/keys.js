// keys.js: the API key prompt. A server that requires keys answers 401;
// the prompt asks for a key, checks it against the API before keeping it
// (in this tab's sessionStorage only: it is gone when the tab closes), and
// refuses a wrong one with the server's reason.

import { checkKey, getKey, onKeyNeeded, setKey } from './api.js';
import { withCode } from './dom.js';

let pending = null; // the prompt being shown: every 401 meanwhile waits for it

/** setupKeys wires the key dialog and button of the page. */
export function setupKeys() {
  const dialog = document.getElementById('key-dialog');
  const form = document.getElementById('key-form');
  const input = document.getElementById('key-input');
  const reason = document.getElementById('key-reason');
  const error = document.getElementById('key-error');
  const button = document.getElementById('key-button');
  const forget = document.getElementById('key-forget');
  let resolve = null;

  const showState = () => {
    const has = getKey() !== '';
    button.textContent = has ? 'API key: set' : 'API key';
    forget.hidden = !has;
  };
  const finish = (ok) => {
    if (dialog.open) dialog.close();
    if (resolve) resolve(ok);
    resolve = null;
    pending = null;
    showState();
  };
  const open = (message, hadKey) => {
    if (pending) return pending;
    reason.replaceChildren(...withCode(message));
    error.textContent = '';
    input.value = '';
    input.removeAttribute('aria-invalid');
    if (hadKey) setKey(''); // the key kept was refused: forget it
    pending = new Promise((r) => (resolve = r));
    dialog.showModal();
    input.focus();
    return pending;
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!key) {
      error.textContent = 'Enter a key: it starts with crk_.';
      input.setAttribute('aria-invalid', 'true');
      return;
    }
    error.textContent = 'Checking…';
    const err = await checkKey(key).catch((e) => e);
    if (err) {
      error.replaceChildren(...withCode(err.status === 401 ? 'The key was refused: ' + err.message : 'The key could not be checked: ' + err.message));
      input.setAttribute('aria-invalid', 'true');
      input.select();
      return;
    }
    setKey(key);
    finish(true);
  });
  document.getElementById('key-cancel').addEventListener('click', () => finish(false));
  dialog.addEventListener('cancel', () => finish(false)); // Escape
  button.addEventListener('click', () => {
    open(getKey() ? 'Replace the API key this tab uses.' : 'Give an API key to act as its tenant.', false);
  });
  forget.addEventListener('click', () => {
    setKey('');
    showState();
  });
  onKeyNeeded((message, hadKey) =>
    open(hadKey ? 'The server refused the key: ' + message : 'This server requires an API key (`crucible key create` makes one).', hadKey));
  window.addEventListener('crucible:key', showState);
  showState();
}
