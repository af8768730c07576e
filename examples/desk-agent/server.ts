/**
 * Serves the desk agent over HTTP: `CALLBACK_SECRET=… PLATFORM_URL=… PLATFORM_TOKEN=… CHAT_WEBHOOK_URL=… npx tsx
 * examples/desk-agent/server.ts`, then name `http://<this host>:8787/` as the definition's `agentCode.url`.
 */
import { createServer } from 'node:http';
import { deskAgent, stubCrm } from './agent';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

const agent = deskAgent({
  secrets: required('CALLBACK_SECRET'),
  platform: { baseUrl: required('PLATFORM_URL'), token: required('PLATFORM_TOKEN') },
  crm: stubCrm,
  chatWebhookUrl: required('CHAT_WEBHOOK_URL'),
});
const port = Number(process.env.PORT ?? 8787);
createServer(agent.http).listen(port, () => console.log(`desk agent on http://localhost:${port}/`));
