/**
 * The desk agent in the local runtime's loop (docs/agent-code.md, "The local loop"):
 *
 *   AGENT_CODE=./examples/desk-agent/local.ts npm start
 *
 * and keep the definition's `agentCode` as it will be deployed (a `functionArn` or a `url`): the runtime runs this
 * module for it, built with the calling agent's secrets. PLATFORM_TOKEN (a token restricted to the agent,
 * scope analytics) lets it record an event per post; CHAT_WEBHOOK_URL posts there instead of printing.
 */
import { deskAgent, stubCrm } from './agent';

export default ({ secrets }: { readonly secrets: readonly string[] }) =>
  deskAgent({
    secrets,
    ...(process.env.PLATFORM_TOKEN
      ? {
          platform: {
            baseUrl: process.env.PLATFORM_URL ?? `http://localhost:${process.env.PORT ?? 4000}`,
            token: process.env.PLATFORM_TOKEN,
          },
        }
      : {}),
    crm: stubCrm,
    ...(process.env.CHAT_WEBHOOK_URL ? { chatWebhookUrl: process.env.CHAT_WEBHOOK_URL } : {}),
  });
