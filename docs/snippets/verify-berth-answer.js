// Resolves to the answer's JSON if Berth signed it, unchanged, for this request; throws otherwise.
// publicKeySPKI and keyId are built into the app; nonce is the fresh X-Berth-Nonce the request sent;
// path is the request's path with its query string as sent (url.pathname + url.search).
async function verifyBerthAnswer(response, { publicKeySPKI, keyId, nonce, userId, method, path, now = Date.now(), maxAgeMs = 300000 }) {
  const body = new Uint8Array(await response.arrayBuffer());
  const header = (name) => response.headers.get(name) ?? '';
  const bytes = (base64) => Uint8Array.from(atob(base64.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  const base64URL = (data) => btoa(String.fromCharCode(...data)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const signedAt = header('X-Berth-Signed-At');
  if (header('X-Berth-Key-Id') !== keyId) throw new Error('the answer is not signed with the pinned key');
  if (!/^[0-9]+$/.test(signedAt) || Math.abs(now - Number(signedAt)) > maxAgeMs) throw new Error('the answer is stale');
  const digest = base64URL(new Uint8Array(await crypto.subtle.digest('SHA-256', body)));
  const text = ['berth-answer-v1', keyId, nonce, signedAt, String(response.status), `${method} ${path}`, userId, digest].join('\n');
  const key = await crypto.subtle.importKey('spki', bytes(publicKeySPKI), { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
  const valid = await crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, bytes(header('X-Berth-Signature')),
                                           new TextEncoder().encode(text));
  if (!valid) throw new Error('the answer was changed on its way');
  return JSON.parse(new TextDecoder().decode(body));
}
