// artifacts.js: a recorded run's artifacts, fetched from GET
// /v1/runs/{id}/artifacts/{name}. They are served as attachments under a
// sandbox policy, so they are fetched with the key and shown from a blob
// URL: images of the allowed types inline, any other file as a download.

import { pathOf, request } from './api.js';
import { h } from './dom.js';
import { IMAGE_TYPES, fmtBytes, figure, saveBytes } from './render.js';

async function fetchArtifact(runId, name, signal) {
  const resp = await request(`/v1/runs/${encodeURIComponent(runId)}/artifacts/${pathOf(name)}`, { signal });
  return new Uint8Array(await resp.arrayBuffer());
}

/**
 * artifactList shows the artifacts metas of run runId: images loaded as
 * they arrive (their blob URLs added to urls), other files as buttons
 * that download them.
 */
export function artifactList(runId, metas, urls, signal) {
  const box = h('div', { class: 'artifacts' });
  const files = h('ul', { class: 'files-list', 'aria-label': 'Artifacts' });
  for (const m of metas || []) {
    const label = `${m.name} (${m.mime}, ${fmtBytes(m.size)})`;
    if (m.withheld) {
      files.append(h('li', {}, label, ': withheld, ', m.withheld));
      continue;
    }
    if (IMAGE_TYPES.has(m.mime)) {
      const slot = h('div', { class: 'figure-slot', text: 'Loading ' + m.name + '…' });
      box.append(slot);
      fetchArtifact(runId, m.name, signal)
        .then((bytes) => slot.replaceWith(figure(bytes, m.mime, m.name, urls)))
        .catch((e) => { slot.textContent = `${m.name}: not loaded (${e.message})`; });
      continue;
    }
    const btn = h('button', { type: 'button', class: 'link', text: 'Download ' + label });
    btn.addEventListener('click', async () => {
      try {
        saveBytes(await fetchArtifact(runId, m.name, signal), m.mime, m.name);
      } catch (e) {
        btn.after(h('span', { class: 'form-error', role: 'alert', text: ` ${m.name}: ${e.message}` }));
      }
    });
    files.append(h('li', {}, btn));
  }
  if (files.childElementCount) box.append(files);
  return box;
}
