import { createRoot } from 'react-dom/client';
import './styles.css';
import { App } from './app.js';

createRoot(document.getElementById('root')!).render(<App />);
