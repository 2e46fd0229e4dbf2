import { byId } from './dom.js';

/**
 * The reset and unblock buttons of the top offenders and the inspector: each names a rule and a
 * bucket id (never a key), and the server finds the key behind the id. One listener for all of
 * them, since the tables are drawn again every second.
 */
export function bindBucketActions(): void {
  const status = byId('action-status');
  document.addEventListener('click', (event) => {
    const button = (event.target as Element | null)?.closest<HTMLButtonElement>('button[data-action]');
    if (button === null || button === undefined) return;
    const { action, rule, id } = button.dataset;
    button.disabled = true;
    status.textContent = `${action === 'unblock' ? 'unblocking' : 'resetting'} ${id} in ${rule}…`;
    void fetch('/dashboard/buckets', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ rule, id, action }),
    })
      .then(async (response) => {
        const body = (await response.json()) as { detail?: string; limits?: number };
        status.textContent = response.ok
          ? `${id} ${action === 'unblock' ? 'unblocked' : 'reset'} in ${rule} (${body.limits} limit${body.limits === 1 ? '' : 's'}): its next request finds a full bucket.`
          : (body.detail ?? `error ${response.status}`);
      })
      .catch(() => (status.textContent = 'The server did not answer.'))
      .finally(() => (button.disabled = false));
  });
}
