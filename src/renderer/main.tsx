import { createRoot } from 'react-dom/client';
import './styles.css';
import { App } from './app.js';
import { authStore, fleetStore } from './app-context.js';

/** How long the first drawing of the page waits for the Fleet screen's list: a slow lab still shows its page soon. */
const FIRST_LIST_WAIT_MS = 300;

// The Fleet screen's phones were asked for before this bundle ran (prefetch.ts), and are usually back by now: React
// draws the page once, with the list, rather than the page with a spinner and then again with a hundred rows (two
// renders and two layouts of the whole page). Its first poll then finds this list fresh (fleet-store.ts).
if (authStore.getState().token && /^\/(fleet\/?)?$/.test(location.pathname)) {
  await Promise.race([fleetStore.getState().refresh(), new Promise((resolve) => setTimeout(resolve, FIRST_LIST_WAIT_MS))]);
}

createRoot(document.getElementById('root')!).render(<App />);
