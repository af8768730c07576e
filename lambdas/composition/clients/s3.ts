/** The one S3 client of this process (AWS_ENDPOINT_URL_S3 locally; path-style where bucket host names do not resolve). */
import { S3Client } from '@aws-sdk/client-s3';
import { once } from '#composition/once';
import { config } from '#shared/config';
import { captured } from './capture';
import { clientConfig } from './client-config';

export const s3Client = once(() =>
  captured(
    new S3Client({
      ...clientConfig('S3'),
      forcePathStyle: config.s3ForcePathStyle(),
      // Without this the SDK signs a checksum of an empty body into pre-signed URLs, which S3 then rejects.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }),
  ),
);
