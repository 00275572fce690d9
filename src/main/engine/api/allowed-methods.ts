import type { App } from './http.js';

/**
 * The methods each path of the API (/api/v1, what the OpenAPI document describes) answers, gathered as the routes
 * are added, so that a request whose path exists under other methods (TRACE /api/v1/health, PUT
 * /api/v1/sessions/{id}) is 405 with an Allow header (RFC 9110, 15.5.6) rather than 404, which would say the path
 * does not exist. Asked only for a request no route took, never on the way of one that did.
 */
export function allowedMethods(app: App): (path: string) => string[] {
  const routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/api/') || route.url.includes('*')) return;
    let entry = routes.get(route.url);
    if (!entry) {
      const source = route.url.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+');
      entry = { pattern: new RegExp(`^${source}/?$`), methods: new Set() };
      routes.set(route.url, entry);
    }
    for (const method of [route.method].flat()) entry.methods.add(method);
  });
  return (path) => {
    const allowed = new Set<string>();
    for (const { pattern, methods } of routes.values()) if (pattern.test(path)) for (const m of methods) allowed.add(m);
    return [...allowed].sort();
  };
}
