// Requests to the Agent Server API, as LangGraph's clients send them: JSON bodies, and the API
// key the page was given (kept for the tab in sessionStorage, never in the URL) as `x-api-key`.

export const KEY = "graphwright-api-key";

// The request's headers: JSON when there is a body, and the API key when one was given.
export function headers(json) {
  const out = json ? { "content-type": "application/json" } : {};
  const key = sessionStorage.getItem(KEY);
  if (key) out["x-api-key"] = key;
  return out;
}

// A request the server refused for want of credentials.
export class Unauthorized extends Error {}

// The answer to a request, or an error carrying the server's `detail`.
export async function api(path, body, method) {
  const response = await fetch(path, {
    method: method ?? (body === undefined ? "GET" : "POST"),
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // a proxy's HTML error page: the status says enough
  }
  const message = detail(data) ?? `${response.status} ${response.statusText}`;
  if (response.status === 401) throw new Unauthorized(message);
  if (!response.ok) throw new Error(message);
  return data;
}

// The server's reason: `detail` is a sentence, or for some refusals a list of problems.
function detail(data) {
  const found = data?.detail;
  if (found == null) return null;
  return typeof found === "string" ? found : JSON.stringify(found);
}
