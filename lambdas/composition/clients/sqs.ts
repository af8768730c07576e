/** The one SQS client of this process, for the processing queue and the flow runner's queue. */
import { SQSClient } from '@aws-sdk/client-sqs';
import { once } from '#composition/once';
import { captured } from './capture';
import { clientConfig } from './client-config';

// Send to the configured (or regional) endpoint, not to the host inside the queue URL: the local engine names its
// queues `sqs.<region>.localhost`, which is not resolvable everywhere.
export const sqsClient = once(() => captured(new SQSClient({ ...clientConfig('SQS'), useQueueUrlAsEndpoint: false })));
