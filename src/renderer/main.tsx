import { createRoot } from 'react-dom/client';
import './styles.css';
import { App } from './app.js';
import { authStore, fleetStore } from './app-context.js';

// The Fleet screen's phones are asked for while React draws the page rather than once it has: its first poll then
// shares this request (fleet-store.ts) instead of starting another.
if (authStore.getState().token && /^\/(fleet\/?)?$/.test(location.pathname)) void fleetStore.getState().refresh();

createRoot(document.getElementById('root')!).render(<App />);
