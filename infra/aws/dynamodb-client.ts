import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * The client for the legacy tables. Region, credentials and endpoint come from the SDK's own
 * settings (`AWS_REGION`, `AWS_ENDPOINT_URL_DYNAMODB`, ...). Adaptive retry: the SDK slows its own
 * request rate when DynamoDB throttles, before our scan loop's backoff takes over.
 */
export function makeDynamoClient(): DynamoDBClient {
  return new DynamoDBClient({ retryMode: 'adaptive', maxAttempts: 5 });
}
