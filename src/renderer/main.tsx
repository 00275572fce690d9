import { createRoot } from 'react-dom/client';
import './styles.css';
import { App } from './app.js';
import { fleetAskedEarly, fleetStore } from './app-context.js';

/** How long the first drawing of the page waits for the Fleet screen's list: a slow lab still shows its page soon. */
const FIRST_LIST_WAIT_MS = 300;

// The Fleet screen's phones were asked for before this bundle ran (prefetch.ts), and are usually back by now: React
// draws the page once, with the list, rather than the page with a spinner and then again with a hundred rows (two
// renders and two layouts of the whole page). Its first poll then finds this list fresh (fleet-store.ts).
// (A promise, not a top-level await: with one, the bundler splits the app into several files to keep the lazy screens'
// imports safe, and the page then waits for four more requests.)
const firstList = fleetAskedEarly
  ? Promise.race([fleetStore.getState().refresh(), new Promise((resolve) => setTimeout(resolve, FIRST_LIST_WAIT_MS))])
  : Promise.resolve();

void firstList.then(() => createRoot(document.getElementById('root')!).render(<App />));
