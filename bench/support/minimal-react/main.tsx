// The bundle-size baseline: the least a React 19 page can ship, built by the renderer's own Vite config.
import { createRoot } from 'react-dom/client';

createRoot(document.getElementById('root')!).render(<h1>Hello</h1>);
