import { createRoot } from 'react-dom/client';
import './styles.css';
import { App } from './app.js';
import { accountAskedEarly, authStore, fleetAskedEarly, fleetStore } from './app-context.js';

/** How long the first drawing of the page waits for what it shows first: a slow lab still shows its page soon. */
const FIRST_DRAWING_WAIT_MS = 300;

// Who is signed in, and on the Fleet screen its phones, were asked for before this bundle ran (prefetch.ts), and are
// usually back by now: React draws the page once, complete, rather than the page with a spinner and then again with a
// hundred rows (two renders and two layouts of the whole page), and the sidebar's owner links and email do not pop in
// a frame later. The Fleet screen's first poll then finds this list fresh (fleet-store.ts), and the app's own check of
// the token is this one (auth-store.ts).
// (A promise, not a top-level await: with one, the bundler splits the app into several files to keep the lazy screens'
// imports safe, and the page then waits for four more requests.)
const firstDrawing = Promise.race([
  Promise.all([fleetAskedEarly && fleetStore.getState().refresh(), accountAskedEarly && authStore.getState().restore()]),
  new Promise((resolve) => setTimeout(resolve, FIRST_DRAWING_WAIT_MS)),
]);

void firstDrawing.then(() => createRoot(document.getElementById('root')!).render(<App />));
