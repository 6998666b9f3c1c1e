/**
 * HTTP access to the jupyter-aaep server extension.
 *
 * Every URL is built from `ServerConnection.makeSettings()` so the panel
 * works under any `base_url`, and every request goes through
 * `ServerConnection.makeRequest`, which adds the token and XSRF header.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** The URL prefix of the server extension, relative to the base URL. */
export const API_PREFIX = 'aaep/v1';

/**
 * An HTTP error from the server extension, carrying the server's `message`.
 */
export class AAEPRequestError extends Error {
  /**
   * @param status HTTP status code (0 when the request never got an answer).
   * @param message The server's `message`, or a generic sentence.
   * @param serverMissing True when the answer shows that the server
   *   extension is not installed or not enabled (a plain 404 page).
   */
  constructor(
    readonly status: number,
    message: string,
    readonly serverMissing: boolean
  ) {
    super(message);
    this.name = 'AAEPRequestError';
  }
}

/** The connection settings, created once. */
let settingsCache: ServerConnection.ISettings | null = null;

/** Return the shared server connection settings. */
export function serverSettings(): ServerConnection.ISettings {
  if (!settingsCache) {
    settingsCache = ServerConnection.makeSettings();
  }
  return settingsCache;
}

/**
 * Build the absolute HTTP URL of an endpoint below `aaep/v1`.
 *
 * @param path Path segments below the API prefix (already URL-safe or encoded
 *   here one by one).
 * @param query Optional query parameters.
 */
export function apiUrl(path: string[], query?: Record<string, string>): string {
  const settings = serverSettings();
  const url = URLExt.join(settings.baseUrl, API_PREFIX, ...path.map(segment => encodeURIComponent(segment)));
  return query ? url + URLExt.objectToQueryString(query) : url;
}

/**
 * Build the WebSocket URL of an endpoint below `aaep/v1`, with the token in
 * the query when the settings ask for it (browsers cannot set headers on a
 * WebSocket).
 */
export function wsUrl(path: string[]): string {
  const settings = serverSettings();
  let url = URLExt.join(settings.wsUrl, API_PREFIX, ...path.map(segment => encodeURIComponent(segment)));
  if (settings.token && settings.appendToken) {
    url += URLExt.objectToQueryString({ token: settings.token });
  }
  return url;
}

/**
 * Build the URL of an event stream for `EventSource`, which cannot send an
 * `Authorization` header either: the token goes in the query when one is set.
 */
export function sseUrl(path: string[]): string {
  const settings = serverSettings();
  const query: Record<string, string> = {};
  if (settings.token) {
    query.token = settings.token;
  }
  return apiUrl(path, Object.keys(query).length ? query : undefined);
}

/**
 * Call the server extension and return its parsed JSON answer.
 *
 * @param path Path segments below `aaep/v1`.
 * @param init Fetch options; a `body` object is sent as JSON.
 * @param query Optional query parameters.
 * @throws AAEPRequestError with the server's message on any non-2xx answer
 *   or network failure.
 */
export async function requestAPI<T>(
  path: string[],
  init: { method?: string; body?: unknown } = {},
  query?: Record<string, string>
): Promise<T> {
  const settings = serverSettings();
  const url = apiUrl(path, query);
  const request: RequestInit = { method: init.method ?? 'GET' };
  if (init.body !== undefined) {
    request.body = JSON.stringify(init.body);
    request.headers = { 'Content-Type': 'application/json' };
  }
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, request, settings);
  } catch (error) {
    throw new AAEPRequestError(
      0,
      `Could not reach the Jupyter server: ${String((error as Error)?.message ?? error)}`,
      false
    );
  }
  const text = await response.text();
  let data: unknown = undefined;
  if (text.length > 0) {
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
  }
  if (!response.ok) {
    const message =
      typeof (data as { message?: unknown })?.message === 'string' ? (data as { message: string }).message : '';
    // Jupyter answers unknown URLs with an HTML 404 page; our handlers always
    // answer JSON with a message. A bare 404 therefore means "not installed".
    const serverMissing = response.status === 404 && message === '';
    throw new AAEPRequestError(
      response.status,
      message || `${response.status} ${response.statusText}`.trim(),
      serverMissing
    );
  }
  return data as T;
}
