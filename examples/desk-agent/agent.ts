/**
 * The desk agent's code (docs/agent-code.md): before each run it loads the customer's tier from the CRM into the
 * session's memory (so default retrieval filters on it and the prompts read it), and it posts each AI message to the
 * team's chat, recording an analytics event for each post.
 */
import { type DefinedAgent, defineAgent, type PlatformClientOptions } from '@agent-platform/agent-sdk';

/** Where customers' tiers come from: your CRM's client. */
export interface Crm {
  tierOf(customerId: string): Promise<string | null>;
}

export interface DeskAgentOptions {
  /** The agent's callback secret (two while you switch after a rotation). */
  readonly secrets: string | readonly string[];
  /** The platform's API and a token restricted to the agent (scope analytics); without it no event is recorded. */
  readonly platform?: Omit<PlatformClientOptions, 'agentId' | 'environment'>;
  readonly crm: Crm;
  /** A chat's incoming webhook (Slack, Teams, Mattermost: each takes `{ text }`); without one, the message is printed. */
  readonly chatWebhookUrl?: string;
}

export function deskAgent(options: DeskAgentOptions): DefinedAgent {
  return defineAgent({
    secrets: options.secrets,
    platform: options.platform,
    async onTrigger(event) {
      const customerId = (event.body as { customerId?: unknown } | null)?.customerId;
      if (typeof customerId !== 'string') return;
      const tier = await options.crm.tierOf(customerId);
      return tier ? { memory: { customerId, tier } } : { memory: { customerId } };
    },
    async onAiMessage(message, { messageId, platform }) {
      if (!options.chatWebhookUrl) {
        console.log(`[desk agent] ${message.node}: ${message.content}`);
        return;
      }
      const posted = await fetch(options.chatWebhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: message.content }),
      });
      // A chat that refuses the post fails the delivery: the platform records it on the session's message.
      if (!posted.ok) throw new Error(`the chat answered ${posted.status}`);
      await platform?.trackAnalyticsEvent(
        'ai_message.posted',
        { channel: 'chat', node: message.node },
        { sessionId: message.sessionId, eventKey: messageId },
      );
    },
  });
}

/** A CRM that knows two customers: for trying the agent out, and for its tests. */
export const stubCrm: Crm = {
  async tierOf(customerId) {
    return ({ 'cust-1': 'tier:gold', 'cust-2': 'tier:silver' } as Record<string, string>)[customerId] ?? null;
  },
};
