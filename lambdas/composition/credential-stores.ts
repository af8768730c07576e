/**
 * The stores that decide who a caller is: tokens (by hash) and people's memberships. One instance of each per
 * process, read through a short cache (adapters/store/read-cache.ts), shared by the authorizer and by the handlers
 * that change them, so that locally, where one process serves every route, a revoked token or a removed person is
 * refused at the next request.
 */
import { DynamoMembershipStore } from '#adapters/store/dynamodb/membership-store';
import { DynamoTokenStore } from '#adapters/store/dynamodb/token-store';
import { withReadCache } from '#adapters/store/read-cache';
import type { MembershipStore, TokenStore } from '#ports/stores';
import { config } from '#shared/config';
import { dynamoDocumentClient } from './clients/dynamodb';
import { once } from './once';

export const tokenStore = /* @__PURE__ */ once(() =>
  withReadCache<TokenStore>(new DynamoTokenStore(dynamoDocumentClient(), config.tableName('tokens')), {
    cached: ['getByHash'],
    uncached: ['list', 'getById'],
  }),
);

export const membershipStore = /* @__PURE__ */ once(() =>
  withReadCache<MembershipStore>(new DynamoMembershipStore(dynamoDocumentClient(), config.tableName('memberships')), {
    cached: ['get', 'listByPerson'],
    uncached: ['listByOrganization'],
  }),
);
