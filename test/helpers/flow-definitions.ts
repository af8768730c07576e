/**
 * Definitions used by the flow tests and shown in docs/flows.md: a support flow (webhook, HTTP tool, junction), a
 * refund flow (human in the loop, promptCondition edges, canStayOnNode), a triage flow that jumps into the refund
 * flow, and a schedule trigger.
 */

export function supportDefinition(toolBaseUrl: string, callbackUrl?: string) {
  return {
    instructions: 'You are the support assistant of Acme routers.',
    ...(callbackUrl ? { callbackUrl } : {}),
    variables: { SUPPORT_EMAIL: 'help@acme.test' },
    tools: [
      {
        name: 'lookupOrder',
        description: 'Finds an order by its id',
        url: `${toolBaseUrl}/orders`,
        parameters: { orderId: { type: 'string', required: true } },
      },
    ],
    flows: [
      {
        name: 'support',
        nodes: [
          { name: 'Start', type: 'trigger', triggerType: 'webhook', displayName: 'Support request' },
          { name: 'Lookup', type: 'tool', toolName: 'lookupOrder', parameters: { orderId: '{memory.orderId}' } },
          { name: 'Route', type: 'junction', displayName: 'Order state' },
          {
            name: 'Shipped',
            type: 'promptNode',
            displayName: 'Shipped answer',
            prompt: 'Tell the customer that order {memory.orderId} shipped on {tools.Lookup.shippedAt}.',
          },
          {
            name: 'Delayed',
            type: 'promptNode',
            displayName: 'Delay answer',
            prompt: 'Apologise: order {memory.orderId} is delayed. Write to {env.SUPPORT_EMAIL} for help.',
          },
        ],
        edges: [
          { from: 'Start', to: 'Lookup', type: 'stepForward' },
          { from: 'Lookup', to: 'Route', type: 'stepForward' },
          {
            from: 'Route',
            to: 'Shipped',
            type: 'stepForward',
            when: { path: 'tools.Lookup.status', operator: 'equals', value: 'shipped' },
          },
          { from: 'Route', to: 'Delayed', type: 'stepForward' },
        ],
      },
    ],
  };
}

export const refundFlow = {
  name: 'refund',
  nodes: [
    { name: 'RefundStart', type: 'trigger', triggerType: 'webhook', displayName: 'Refund request' },
    {
      name: 'AskReason',
      type: 'promptNode',
      displayName: 'Ask the reason',
      prompt: 'Ask {memory.customer.name} why they want a refund.',
      humanInTheLoop: true,
      canStayOnNode: true,
    },
    {
      name: 'Approve',
      type: 'promptNode',
      displayName: 'Approve',
      prompt: 'Confirm the refund of the damaged router to {memory.customer.name}.',
    },
    {
      name: 'Decline',
      type: 'promptNode',
      displayName: 'Decline',
      prompt: 'Explain that a router that works cannot be refunded after 30 days.',
    },
  ],
  edges: [
    { from: 'RefundStart', to: 'AskReason', type: 'stepForward' },
    {
      from: 'AskReason',
      to: 'Approve',
      type: 'promptCondition',
      condition: 'the router arrived damaged or broken',
    },
    { from: 'AskReason', to: 'Decline', type: 'promptCondition', condition: 'the customer changed their mind' },
  ],
};

export const triageFlow = {
  name: 'triage',
  nodes: [
    { name: 'Triage', type: 'trigger', triggerType: 'webhook', displayName: 'Triage' },
    { name: 'Remember', type: 'tool', toolName: 'setMemory', parameters: { channel: 'triage' } },
    { name: 'ToRefund', type: 'jumpToNode', targetNodeId: 'AskReason', displayName: 'Go to refund' },
  ],
  edges: [
    { from: 'Triage', to: 'Remember', type: 'stepForward' },
    { from: 'Remember', to: 'ToRefund', type: 'stepForward' },
  ],
};

export function scheduleFlow(cronExpression: string, timezone: string) {
  return {
    name: 'daily',
    nodes: [
      { name: 'Morning', type: 'trigger', triggerType: 'schedule', cronExpression, timezone },
      {
        name: 'Report',
        type: 'promptNode',
        displayName: 'Daily report',
        prompt: 'Summarise the open tickets for {system.date} ({memory.scheduledAt}).',
      },
    ],
    edges: [{ from: 'Morning', to: 'Report', type: 'stepForward' }],
  };
}

/** A webhook flow and an app-event flow, each one prompt node: the smallest definition every trigger route accepts. */
export const helloAndTicketDefinition = {
  instructions: 'You are the support assistant of Acme routers.',
  flows: [
    {
      name: 'hello',
      nodes: [
        { name: 'Start', type: 'trigger', triggerType: 'webhook', displayName: 'Hello' },
        { name: 'Greet', type: 'promptNode', displayName: 'Greet', prompt: 'Say hello to the customer.' },
      ],
      edges: [{ from: 'Start', to: 'Greet', type: 'stepForward' }],
    },
    {
      name: 'crm',
      nodes: [
        { name: 'TicketCreated', type: 'trigger', triggerType: 'app', appName: 'crm', eventName: 'ticket.created' },
        { name: 'Ack', type: 'promptNode', displayName: 'Acknowledge', prompt: 'Acknowledge the ticket.' },
      ],
      edges: [{ from: 'TicketCreated', to: 'Ack', type: 'stepForward' }],
    },
  ],
};

/** An app trigger (crm / ticket.created) to a silent prompt node and a custom analytics event. */
export const crmFlow = {
  name: 'crm',
  nodes: [
    { name: 'TicketCreated', type: 'trigger', triggerType: 'app', appName: 'crm', eventName: 'ticket.created' },
    {
      name: 'Acknowledge',
      type: 'promptNode',
      displayName: 'Acknowledge ticket',
      prompt: 'Acknowledge ticket {memory.ticketId} of {memory.app.name}.',
      sendAiMessage: false,
    },
    {
      name: 'Track',
      type: 'tool',
      toolName: 'trackAnalyticsEvent',
      parameters: { eventName: 'ticket_acknowledged', payload: { ticketId: '{memory.ticketId}' } },
    },
  ],
  edges: [
    { from: 'TicketCreated', to: 'Acknowledge', type: 'stepForward' },
    { from: 'Acknowledge', to: 'Track', type: 'stepForward' },
  ],
};

/** A webhook flow of one prompt node (`Answer`, "Say hello."), optionally on `llmConfig`: `Start` → `Answer`. */
export function helloFlow(llmConfig?: Record<string, unknown>) {
  return {
    flows: [
      {
        name: 'main',
        nodes: [
          { name: 'Start', type: 'trigger', triggerType: 'webhook' },
          {
            name: 'Answer',
            type: 'promptNode',
            displayName: 'Answer',
            prompt: 'Say hello.',
            ...(llmConfig ? { llmConfig } : {}),
          },
        ],
        edges: [{ from: 'Start', to: 'Answer', type: 'stepForward' }],
      },
    ],
  };
}

/**
 * A webhook trigger `Start` and one prompt node `Greet` whose AI message carries `prompt` (the offline model answers
 * with it), with `extra` beside the flows: the agent code and callback tests' definition (`agentCode`, `callbackUrl`).
 */
export function greetDefinition(
  prompt: string,
  extra: Record<string, unknown> = {},
  llmConfig?: Record<string, unknown>,
) {
  return {
    ...extra,
    flows: [
      {
        name: 'desk',
        nodes: [
          { name: 'Start', type: 'trigger', triggerType: 'webhook' },
          { name: 'Greet', type: 'promptNode', displayName: 'Greet', prompt, ...(llmConfig ? { llmConfig } : {}) },
        ],
        edges: [{ from: 'Start', to: 'Greet', type: 'stepForward' }],
      },
    ],
  };
}
