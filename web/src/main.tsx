import '@mantine/core/styles.css';
import './app.css';
import { type CSSVariablesResolver, createTheme, MantineProvider } from '@mantine/core';
import { QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { AuthProvider } from './auth';
import { loadConfig } from './config';
import { newQueryClient } from './organizations';

/**
 * Mantine's defaults with text dark enough for WCAG AA (4.5:1, axe's color-contrast): the primary colour at shade 8
 * (links, buttons), and the "dimmed" grey of descriptions one shade darker.
 */
const theme = createTheme({ primaryShade: 8, respectReducedMotion: true });
const contrast: CSSVariablesResolver = (resolved) => ({
  variables: {},
  light: { '--mantine-color-dimmed': resolved.colors.gray[7] },
  dark: {},
});

// The person's own queries (their organizations); each organization's screens get a cache of their own (App.tsx).
const queries = newQueryClient();
const root = createRoot(document.getElementById('root') as HTMLElement);

loadConfig().then(
  (config) =>
    root.render(
      <StrictMode>
        <MantineProvider theme={theme} cssVariablesResolver={contrast}>
          <QueryClientProvider client={queries}>
            <AuthProvider config={config}>
              <App config={config} />
            </AuthProvider>
          </QueryClientProvider>
        </MantineProvider>
      </StrictMode>,
    ),
  (error: unknown) => {
    root.render(<p role="alert">The console could not load its configuration: {String(error)}</p>);
  },
);
