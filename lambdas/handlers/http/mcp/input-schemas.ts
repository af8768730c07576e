/**
 * The MCP tools' input schemas as tools/list shows them: the JSON Schema of their zod schemas (tools.ts), written by
 * test/unit/handlers/mcp-tools.test.ts (UPDATE_MCP_SCHEMAS=1), which fails when they drift. Written out rather than
 * made by z.toJSONSchema at run time, which would add 3 KB to a bundle at its budget (docs/mcp.md, "Bundle").
 */
export const INPUT_SCHEMAS = {
  list: {
    type: 'object',
    properties: {
      agentId: {
        type: 'string',
        format: 'uuid',
      },
    },
    additionalProperties: false,
  },
  retrieval: {
    type: 'object',
    properties: {
      agentId: {
        type: 'string',
        format: 'uuid',
      },
      environment: {
        type: 'string',
        enum: ['development', 'staging', 'production'],
      },
      knowledgeBaseId: {
        type: 'string',
        format: 'uuid',
      },
      query: {
        type: 'string',
        minLength: 1,
        maxLength: 2000,
      },
      numberOfResults: {
        type: 'integer',
        minimum: 1,
        maximum: 100,
      },
      minScore: {
        type: 'number',
        minimum: 0,
        maximum: 1,
      },
      filters: {
        maxItems: 20,
        type: 'array',
        items: {
          type: 'object',
          properties: {
            key: {
              type: 'string',
              minLength: 1,
              maxLength: 100,
            },
            operator: {
              type: 'string',
              enum: ['equals', 'notEquals', 'greaterThan', 'lessThan'],
            },
            value: {
              type: 'string',
              maxLength: 500,
            },
          },
          required: ['key', 'operator', 'value'],
          additionalProperties: false,
        },
      },
      memory: {
        type: 'object',
        propertyNames: {
          type: 'string',
        },
        additionalProperties: {},
      },
      explain: {
        type: 'boolean',
      },
    },
    required: ['agentId', 'environment', 'knowledgeBaseId', 'query'],
    additionalProperties: false,
  },
  invoke: {
    type: 'object',
    properties: {
      agentId: {
        type: 'string',
        format: 'uuid',
      },
      environment: {
        type: 'string',
        enum: ['development', 'staging', 'production'],
      },
      triggerName: {
        type: 'string',
        pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$',
      },
      sessionId: {
        type: 'string',
        format: 'uuid',
      },
      message: {
        type: 'string',
        maxLength: 10000,
      },
      body: {
        type: 'object',
        propertyNames: {
          type: 'string',
        },
        additionalProperties: {},
      },
    },
    required: ['agentId', 'environment', 'triggerName'],
    additionalProperties: false,
  },
};
